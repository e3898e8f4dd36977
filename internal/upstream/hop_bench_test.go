package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// stubUpstream is the cheapest Streamable HTTP server that a client can
// hold a session with (basic/transports): initialize, the initialized
// notification, no standalone stream, tools/call answered with one text
// block as application/json (as an event stream of one event for the tool
// echo_sse), and -32601 for any other request. Its cost per call is the same whatever
// client calls it, so the client benchmarks below differ only by the
// client.
func stubUpstream(tb testing.TB) *httptest.Server {
	tb.Helper()
	const session = "bench-session"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		msg, _, perr := protocol.Decode(body)
		if perr != nil {
			http.Error(w, perr.Message, http.StatusBadRequest)
			return
		}
		h := w.Header()
		h.Set("Mcp-Session-Id", session)
		switch msg.Method {
		case "initialize":
			h.Set("Content-Type", "application/json")
			_, _ = w.Write(protocol.AppendResult(nil, msg.ID, []byte(
				`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"stub","version":"1"}}`)))
		case "tools/call":
			answer := protocol.AppendResult(nil, msg.ID, []byte(`{"content":[{"type":"text","text":"hello"}]}`))
			var name [1]json.RawMessage
			_ = protocol.LookupMembers(msg.Params, []string{"name"}, name[:])
			if string(name[0]) == `"echo_sse"` {
				h.Set("Content-Type", "text/event-stream")
				answer = append(append([]byte("event: message\ndata: "), answer...), "\n\n"...)
			} else {
				h.Set("Content-Type", "application/json")
			}
			_, _ = w.Write(answer)
		default:
			if msg.Kind != protocol.KindRequest {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			h.Set("Content-Type", "application/json")
			_, _ = w.Write(protocol.AppendError(nil, msg.ID, protocol.Errorf(protocol.CodeMethodNotFound, "method not found")))
		}
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// thinCaller is a sketch of a tools/call client on this project's own
// protocol code, for measurement only: it sends the request on the
// session the go-sdk established (Mcp-Session-Id, MCP-Protocol-Version)
// through the same RoundTripper, and reads an application/json answer
// with the protocol scanner, keeping the content blocks as the server
// wrote them. It does not read event streams (see docs/gateway-hop.md).
type thinCaller struct {
	hc      *http.Client
	url     string
	session string
	version string
	next    atomic.Int64
}

func (t *thinCaller) call(ctx context.Context, name string, args json.RawMessage) (CallResult, error) {
	params := append(protocol.AppendString([]byte(`{"name":`), name), `,"arguments":`...)
	params = append(append(params, args...), '}')
	body := protocol.AppendRequest(nil, protocol.IntID(t.next.Add(1)), "tools/call", params)
	req, err := http.NewRequestWithContext(withExchange(ctx, &exchange{call: true}), http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return CallResult{}, err
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	h["Mcp-Session-Id"] = []string{t.session}
	h["Mcp-Protocol-Version"] = []string{t.version}
	resp, err := t.hc.Do(req)
	if err != nil {
		return CallResult{}, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return CallResult{}, err
	}
	msg, _, perr := protocol.Decode(data)
	if perr != nil {
		return CallResult{}, perr
	}
	var m [4]json.RawMessage
	if err := protocol.LookupMembers(msg.Result, []string{"content", "structuredContent", "isError", "_meta"}, m[:]); err != nil {
		return CallResult{}, err
	}
	out := CallResult{StructuredContent: m[1], Meta: m[3], IsError: string(m[2]) == "true"}
	if err := json.Unmarshal(m[0], &out.Content); err != nil {
		return CallResult{}, err
	}
	return out, nil
}

// BenchmarkHopClient measures one tools/call from the gateway's side of
// the hop against stubUpstream on loopback, one call at a time: through
// the go-sdk's ClientSession (as modern-era calls go), answered as JSON (sdk) or
// as an event stream (sdk-sse, what most servers send), through the
// call-stream client Manager.Call uses (stream, stream-sse), through
// thinCaller on the same session and RoundTripper (thin), and a bare POST
// whose answer is read but not decoded (http, the floor of any HTTP
// client). cpu-µs/op
// is the whole process's CPU time per call, the stub's included.
func BenchmarkHopClient(b *testing.B) {
	srv := stubUpstream(b)
	cfg := Config{ID: "stub", URL: srv.URL + "/mcp"}.Normalized()
	base := &http.Client{Transport: pooledTransport(nil)}
	b.Cleanup(base.CloseIdleConnections)
	p := dialParams{base: base, maxBody: DefaultMaxResponseBytes, clientName: "bench", clientVersion: "1", deployment: "bench"}
	c, err := dial(context.Background(), cfg, p)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.close)
	thin := &thinCaller{hc: httpClientFor(base, cfg, p, c.probe), url: cfg.URL,
		session: c.session.ID(), version: c.init.ProtocolVersion}
	args := json.RawMessage(`{"text":"hello"}`)
	ctx := context.Background()

	want, err := c.sdkCall(ctx, "echo", args, Round{})
	if err != nil {
		b.Fatal(err)
	}
	got, err := thin.call(ctx, "echo", args)
	if err != nil {
		b.Fatal(err)
	}
	if len(got.Content) != 1 || !bytes.Equal(got.Content[0], want.Content[0]) {
		b.Fatalf("thin client: %s, go-sdk client: %s", got.Content, want.Content)
	}

	run := func(b *testing.B, call func() error) {
		b.ReportAllocs()
		start, ok := cpuTime()
		for b.Loop() {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
		if end, _ := cpuTime(); ok {
			b.ReportMetric(float64((end-start).Microseconds())/float64(b.N), "cpu-µs/op")
		}
	}
	b.Run("sdk", func(b *testing.B) {
		run(b, func() error { _, err := c.sdkCall(ctx, "echo", args, Round{}); return err })
	})
	b.Run("sdk-sse", func(b *testing.B) {
		run(b, func() error { _, err := c.sdkCall(ctx, "echo_sse", args, Round{}); return err })
	})
	// stream is the client Manager.Call uses (callstream.go).
	b.Run("stream", func(b *testing.B) {
		run(b, func() error { _, err := c.callStream(ctx, "echo", args, Round{}, nil); return err })
	})
	b.Run("stream-sse", func(b *testing.B) {
		run(b, func() error { _, err := c.callStream(ctx, "echo_sse", args, Round{}, nil); return err })
	})
	b.Run("thin", func(b *testing.B) {
		run(b, func() error { _, err := thin.call(ctx, "echo", args); return err })
	})
	b.Run("http", func(b *testing.B) {
		body := protocol.AppendRequest(nil, protocol.IntID(1), "tools/call", []byte(`{"name":"echo","arguments":{"text":"hello"}}`))
		run(b, func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header["Content-Type"] = []string{"application/json"}
			req.Header["Accept"] = []string{"application/json, text/event-stream"}
			req.Header["Mcp-Session-Id"] = []string{thin.session}
			resp, err := base.Do(req)
			if err != nil {
				return err
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return err
		})
	})
}
