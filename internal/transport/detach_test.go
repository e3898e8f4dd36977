package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// touch changes uri through the protocol (the touch tool calls
// ResourceUpdated).
func touch(t *testing.T, h *harness, sid, uri string) {
	t.Helper()
	r := h.Post(t, sid, th.ToolCall(1, "touch", map[string]any{"uri": uri}, nil))
	if text, _ := th.ToolText(t, th.ResultOf(t, r, "1")); text != "touched "+uri {
		t.Fatalf("touch: %q", text)
	}
}

// A GET stream over HTTP/1.1 is taken over from net/http once its headers
// are out (docs/adr/0056-cheap-by-default.md): it says Connection: close,
// delivers as before, and when the client closes it the stream is
// released, so the session may open another.
func TestGET_TakenOverAndReleased(t *testing.T) {
	h := newHarness(t, withOpts(func(o *Options) { o.MaxStreamsPerSession = 1 }))
	sid := h.Initialize(t)
	h.Subscribe(t, sid, "test://a")
	get := h.OpenGET(t, sid)
	if !get.Resp.Close {
		t.Error("an HTTP/1.1 GET stream does not say Connection: close")
	}
	get.Next(t) // priming: attached
	touch(t, h, sid, "test://a")
	if _, m := get.NextMessage(t); th.ResourceUpdatedURI(t, m) != "test://a" {
		t.Fatalf("got %+v", m)
	}
	get.Close()
	testutil.Eventually(t, th.WaitLong, "the stream to be released", func() bool { return h.tr.openStreams.Load() == 0 })
	again := h.OpenGET(t, sid) // within the cap of one again
	again.Next(t)
	touch(t, h, sid, "test://a")
	if _, m := again.NextMessage(t); th.ResourceUpdatedURI(t, m) != "test://a" {
		t.Fatalf("got %+v", m)
	}
}

// An HTTP/2 GET stream cannot be taken over: its handler serves it, with
// the same events and the retry hint at the end.
func TestGET_OverHTTP2(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	h.Subscribe(t, sid, "test://a")
	srv := httptest.NewUnstartedServer(h.Router)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", protocol.LatestVersion)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtoMajor != 2 || res.StatusCode != http.StatusOK {
		t.Fatalf("%s %d, want HTTP/2 200", res.Proto, res.StatusCode)
	}
	get := th.NewSSEConn(res, func() {})
	t.Cleanup(get.Close)
	get.Next(t) // priming: attached
	touch(t, h, sid, "test://a")
	if _, m := get.NextMessage(t); th.ResourceUpdatedURI(t, m) != "test://a" {
		t.Fatalf("got %+v", m)
	}
	h.tr.CloseStreams(1234)
	if ev := get.Next(t); ev.Retry != "1234" {
		t.Fatalf("want retry: 1234 before the end, got %+v", ev)
	}
	get.WaitEnd(t)
}

// A GET that has a body, sent after its headers, is not taken over: the
// body's bytes are not the client going away, and the stream serves on.
func TestGET_WithBodyIsServed(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	h.Subscribe(t, sid, "test://a")
	c, res := rawGET(t, h, sid, "Content-Length: 2\r\n\r\n")
	if _, err := c.Write([]byte("{}")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, th.WaitLong, "the stream to be attached", func() bool { return h.tr.openStreams.Load() == 1 })
	touch(t, h, sid, "test://a")
	for sc := bufio.NewScanner(res.Body); ; {
		if !sc.Scan() {
			t.Fatalf("the stream ended before the update: %v", sc.Err())
		}
		if strings.Contains(sc.Text(), "test://a") {
			return
		}
	}
}

// Bytes the client sent after a GET's headers, in the same packet (a
// pipelined request), are read by net/http before the stream is taken
// over: they count as the client sending more, and end the stream, as
// bytes sent later do; they are not lost with net/http's buffer.
func TestGET_PipelinedBytesEndTheStream(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	h.Subscribe(t, sid, "test://a")
	_, res := rawGET(t, h, sid, "\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	// The server closes the connection: the body ends, cut short or not,
	// before the read deadline.
	if _, err := io.Copy(io.Discard, res.Body); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("the stream did not end: %v", err)
	}
	testutil.Eventually(t, th.WaitLong, "the stream to be released", func() bool { return h.tr.openStreams.Load() == 0 })
}

// rawGET opens session sid's GET stream on a connection of its own,
// writing the request's headers and then rest (which ends the header
// block and may add bytes after it) in one write, and returns the
// connection and the response once its headers are in.
func rawGET(t *testing.T, h *harness, sid, rest string) (net.Conn, *http.Response) {
	t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(h.URL, "http://"), "/mcp")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\n%s",
		addr, sid, protocol.LatestVersion, rest)
	_ = c.SetReadDeadline(time.Now().Add(th.WaitLong))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", res, err)
	}
	return c, res
}
