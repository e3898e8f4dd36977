package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// routerHarness is a harness without a network: requests go straight to the
// router through httptest.NewRecorder. Only the echo tool is registered,
// so nothing blocks and nothing panics on purpose.
func routerHarness(tb testing.TB, maxSessions int) *harness {
	return newHarness(tb, func(c *harnessConfig) {
		c.EchoOnly, c.NoServer = true, true
		c.opts.MaxSessions = maxSessions
	})
}

func (h *harness) serve(req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.Router.ServeHTTP(rec, req)
	return rec
}

// FuzzPost feeds arbitrary bodies through the whole POST path. Properties:
// no panic; 202 has no body; any other status carries one JSON-RPC message
// as application/json; no 5xx other than a refused initialize when the
// session limit is reached.
func FuzzPost(f *testing.F) {
	// The table's inputs, except the large ones (the limit and deep-nesting
	// cases): the table covers those, and large seeds slow the mutator
	// and minimisation down by an order of magnitude.
	for _, ec := range errorCases() {
		if len(ec.body) <= 4<<10 {
			f.Add(ec.body)
		}
	}
	for _, b := range [][]byte{
		th.RPC(1, "tools/list", nil),
		th.ToolCall(2, "echo", map[string]any{"text": "hi"}, 5),
		th.RPC(3, "ping", nil),
		th.RPC(nil, "notifications/cancelled", map[string]any{"requestId": 2}),
		th.RPC(4, "resources/subscribe", map[string]any{"uri": "test://a"}),
		th.RPC(5, "logging/setLevel", map[string]any{"level": "debug"}),
		[]byte(`{"jsonrpc":"2.0","id":"s1","result":{}}`),
		th.InitBody(protocol.LatestVersion, nil),
	} {
		f.Add(b)
	}
	h := routerHarness(f, 256)
	sid := h.routerInitialize(f)

	f.Fuzz(func(t *testing.T, body []byte) {
		req := h.NewRequest(t, context.Background(), http.MethodPost, sid, bytes.NewReader(body))
		rec := h.serve(req)
		res := rec.Result()
		out := rec.Body.Bytes()
		switch {
		case res.StatusCode == http.StatusAccepted:
			if len(out) != 0 {
				t.Fatalf("202 with a body: %q", out)
			}
			return
		case res.StatusCode == http.StatusServiceUnavailable:
			if _, err := th.CheckRPCError(out, "0", protocol.CodeInternalError); err != nil && !strings.Contains(string(out), "cannot open a client session") {
				t.Fatalf("503 other than a refused initialize: %q", out)
			}
		case res.StatusCode >= 500:
			t.Fatalf("status %d for %q: %q", res.StatusCode, body, out)
		}
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q (status %d) for %q", ct, res.StatusCode, body)
		}
		var env map[string]json.RawMessage
		if err := th.DecodeOne(out, &env); err != nil {
			t.Fatalf("status %d body is not one JSON object: %v: %q", res.StatusCode, err, out)
		}
		if string(env["jsonrpc"]) != `"2.0"` || (env["result"] == nil) == (env["error"] == nil) {
			t.Fatalf("not a JSON-RPC response: %q", out)
		}
		// Keep the session count bounded: end sessions the input opened.
		if s := res.Header.Get("Mcp-Session-Id"); s != "" && s != sid {
			h.serve(h.NewRequest(t, context.Background(), http.MethodDelete, s, nil))
		}
	})
}

// routerInitialize opens a session through the router.
func (h *harness) routerInitialize(tb testing.TB) string {
	tb.Helper()
	rec := h.serve(h.NewRequest(tb, context.Background(), http.MethodPost, "", bytes.NewReader(th.InitBody(protocol.LatestVersion, nil))))
	sid := rec.Result().Header.Get("Mcp-Session-Id")
	if rec.Code != http.StatusOK || sid == "" {
		tb.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	return sid
}

var echoCall = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)

func benchPost(b *testing.B, h *harness, sid string, body []byte) {
	req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", th.AcceptBoth)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", protocol.LatestVersion)
	rec := httptest.NewRecorder()
	h.Router.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || bytes.Contains(rec.Body.Bytes(), []byte(`"error"`)) {
		b.Fatalf("tools/call: %d %s", rec.Code, rec.Body)
	}
}

// BenchmarkPostToolsCall drives tools/call of the echo tool through the
// router, no network.
func BenchmarkPostToolsCall(b *testing.B) {
	h := routerHarness(b, 16)
	sid := h.routerInitialize(b)
	b.ReportAllocs()
	for b.Loop() {
		benchPost(b, h, sid, echoCall)
	}
}

// BenchmarkPostToolsCallParallel: one session per goroutine (an id is in
// flight at most once per session).
func BenchmarkPostToolsCallParallel(b *testing.B) {
	h := routerHarness(b, 4096)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		n.Add(1)
		sid := h.routerInitialize(b)
		for pb.Next() {
			benchPost(b, h, sid, echoCall)
		}
	})
}
