package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// ---------------------------------------------------------------------------
// Sessions

func TestSession_MissingAndUnknownID(t *testing.T) {
	h := newHarness(t)
	h.Initialize(t)
	for _, tc := range []struct {
		name, method, sid string
		body              []byte
		want              int
		id                string
	}{
		{"POST without id", http.MethodPost, "", th.RPC(3, "tools/list", nil), http.StatusBadRequest, "3"},
		{"GET without id", http.MethodGet, "", nil, http.StatusBadRequest, "null"},
		{"DELETE without id", http.MethodDelete, "", nil, http.StatusBadRequest, "null"},
		{"POST notification without id", http.MethodPost, "", th.RPC(nil, "notifications/initialized", nil), http.StatusBadRequest, "null"},
		{"POST with unknown id", http.MethodPost, "no-such-session", th.RPC(4, "tools/list", nil), http.StatusNotFound, "4"},
		{"GET with unknown id", http.MethodGet, "no-such-session", nil, http.StatusNotFound, "null"},
		{"DELETE with unknown id", http.MethodDelete, "no-such-session", nil, http.StatusNotFound, "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Send(t, tc.method, tc.sid, tc.body)
			th.WantRPCError(t, r, tc.want, tc.id, protocol.CodeInvalidRequest)
		})
	}
}

func TestSession_DeleteThen404(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	other := h.Initialize(t)
	get := h.OpenGET(t, sid)
	get.Next(t) // priming: attached
	if r := h.Send(t, http.MethodDelete, sid, nil); r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Fatalf("DELETE: %s, want 204 with no body", r)
	}
	// Ending the session ends its open GET stream.
	get.WaitEnd(t)
	th.WantRPCError(t, h.Post(t, sid, th.RPC(1, "tools/list", nil)), http.StatusNotFound, "1", protocol.CodeInvalidRequest)
	th.WantRPCError(t, h.Post(t, sid, th.RPC(nil, "notifications/initialized", nil)), http.StatusNotFound, "null", protocol.CodeInvalidRequest)
	th.WantRPCError(t, h.Send(t, http.MethodGet, sid, nil), http.StatusNotFound, "null", protocol.CodeInvalidRequest)
	th.WantRPCError(t, h.Send(t, http.MethodDelete, sid, nil), http.StatusNotFound, "null", protocol.CodeInvalidRequest)
	// Other sessions are untouched.
	h.ToolsListOK(t, other)
	if n := h.tr.Sessions().Len(); n != 1 {
		t.Errorf("sessions = %d, want 1", n)
	}
}

func TestSession_IDsAndLimit(t *testing.T) {
	const n = 1000
	h := newHarness(t, withOpts(func(o *Options) { o.MaxSessions = n }))
	seen := make(map[string]bool, n)
	for i := 0; i < n; i++ {
		r := h.Post(t, "", th.InitBody(protocol.LatestVersion, nil))
		if r.Status != http.StatusOK {
			t.Fatalf("initialize %d: %s", i, r)
		}
		sid := r.Header.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatalf("initialize %d: no Mcp-Session-Id", i)
		}
		for j := 0; j < len(sid); j++ {
			if c := sid[j]; c < 0x21 || c > 0x7e {
				t.Fatalf("session id %q has byte %#x outside visible ASCII", sid, c)
			}
		}
		if seen[sid] {
			t.Fatalf("session id %q issued twice", sid)
		}
		seen[sid] = true
	}
	if got := h.tr.Sessions().Len(); got != n {
		t.Fatalf("sessions = %d, want %d", got, n)
	}
	// The limit: 503 with Retry-After and a JSON-RPC error for the request.
	r := h.Post(t, "", th.InitBody(protocol.LatestVersion, nil))
	th.WantRPCError(t, r, http.StatusServiceUnavailable, "0", protocol.CodeInternalError)
	if r.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if r.Header.Get("Mcp-Session-Id") != "" {
		t.Error("refused initialize carries a session id")
	}
	// Existing sessions still work; ending one makes room.
	var some string
	for sid := range seen {
		some = sid
		break
	}
	h.ToolsListOK(t, some)
	if r := h.Send(t, http.MethodDelete, some, nil); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %s", r)
	}
	h.Initialize(t)
}

func TestSession_IdleTimeout(t *testing.T) {
	h := newHarness(t, withOpts(func(o *Options) { o.SessionIdleTimeout = 100 * time.Millisecond }))
	idle := h.Initialize(t)
	streaming := h.Initialize(t)
	busy := h.Initialize(t)

	get := h.OpenGET(t, streaming)
	get.Next(t) // priming event: the stream is attached
	// A request in flight keeps its session too.
	blk := h.Fx.Block("idle-busy")
	pending := h.PostAsync(t, context.Background(), busy, th.ToolCall(1, "block", map[string]any{"key": "idle-busy"}, nil), "Accept", "application/json")
	blk.WaitStarted(t)

	// Poll the store, not the server: a request would count as activity.
	gone := func(sid string) bool {
		_, err := h.tr.Sessions().Get(context.Background(), sid)
		return errors.Is(err, ErrSessionNotFound)
	}
	testutil.Eventually(t, th.WaitLong, "the idle session to be ended", func() bool { return gone(idle) })
	th.WantRPCError(t, h.Post(t, idle, th.RPC(1, "tools/list", nil)), http.StatusNotFound, "1", protocol.CodeInvalidRequest)

	// Sweeps past their idle timeout leave the other two there.
	h.waitSweeps(t, 4)
	if gone(streaming) {
		t.Fatal("a session with an open GET stream was reaped")
	}
	if gone(busy) {
		t.Fatal("a session with a request in flight was reaped")
	}
	if n := h.tr.Sessions().Len(); n != 2 {
		t.Errorf("sessions = %d, want 2", n)
	}

	// Once the stream closes and the request ends, they are reaped as well.
	get.Close()
	blk.Release()
	if r := th.WaitReply(t, pending); r.Status != http.StatusOK {
		t.Fatalf("blocked call: %s", r)
	}
	testutil.Eventually(t, th.WaitLong, "the formerly streaming session to be ended", func() bool { return gone(streaming) })
	testutil.Eventually(t, th.WaitLong, "the formerly busy session to be ended", func() bool { return gone(busy) })
	if n := h.tr.Sessions().Len(); n != 0 {
		t.Errorf("sessions = %d, want 0", n)
	}
}

// A client that vanished while its tool call runs does not keep its session
// alive: a handler waiting for the client's answer to sampling, or just
// running, counts as activity only while the client's request is still
// open. After the idle timeout the session ends, which cancels the handler.
// Sessions whose client is still connected, on the GET stream or on the POST
// stream of a call waiting for sampling, are kept. (A request in flight once
// kept its session forever, whether or not anyone was still there.)
func TestSession_IdleTimeoutVanishedClient(t *testing.T) {
	h := newHarness(t, withOpts(func(o *Options) { o.SessionIdleTimeout = 100 * time.Millisecond }))
	sampling := map[string]any{"sampling": map[string]any{}}
	gone := func(sid string) bool {
		_, err := h.tr.Sessions().Get(context.Background(), sid)
		return errors.Is(err, ErrSessionNotFound)
	}

	// Controls: a client on its GET stream, and one whose sampling request
	// is still unanswered on its open POST stream.
	streaming := h.Initialize(t)
	get := h.OpenGET(t, streaming)
	get.Next(t)
	waiting, _ := h.InitializeWith(t, protocol.LatestVersion, sampling)
	live := h.PostSSE(t, waiting, th.ToolCall(1, "sample", map[string]any{"prompt": "still here"}, nil))
	_, ask := live.NextMessage(t)
	if ask.Method != protocol.MethodSamplingCreateMessage {
		t.Fatalf("want a sampling request, got %+v", ask)
	}

	type vanished struct {
		name string
		sess *ClientSession
		blk  *th.BlockState // nil for sampling
	}
	var all []vanished
	for _, tool := range []string{"sample", "sample_long", "block", "block_long"} {
		sid, _ := h.InitializeWith(t, protocol.LatestVersion, sampling)
		v := vanished{name: tool, sess: h.session(t, sid)}
		args := map[string]any{"prompt": "anyone?"}
		var token any
		if strings.HasPrefix(tool, "block") {
			v.blk = h.Fx.Block("vanish-" + tool)
			args, token = map[string]any{"key": "vanish-" + tool}, "pt"
		}
		ps := h.PostSSE(t, sid, th.ToolCall(1, tool, args, token))
		ev, _ := ps.NextMessage(t) // the sampling request, or the progress notification
		name, _ := th.SplitEventID(t, ev.ID)
		st := v.sess.Stream(name)
		ps.Close()
		th.WaitDetached(t, st)
		all = append(all, v)
	}
	for _, v := range all {
		testutil.Eventually(t, th.WaitLong, v.name+": the vanished client's session to be ended", func() bool { return gone(v.sess.id) })
		th.WaitChan(t, v.sess.ctx.Done(), v.name+": the handler's context to be cancelled")
		if v.blk != nil {
			th.WaitChan(t, v.blk.Cancelled, v.name+": the handler to see its context end")
			th.WaitChan(t, v.blk.Finished, v.name+": the handler to return")
		}
	}

	// Sweeps past their idle timeout leave the connected clients theirs.
	h.waitSweeps(t, 4)
	if gone(streaming) {
		t.Fatal("a session with an open GET stream was reaped")
	}
	if gone(waiting) {
		t.Fatal("a session whose client waits on its POST stream was reaped")
	}
	answer := []byte(`{"jsonrpc":"2.0","id":` + string(ask.ID) + `,"result":{"role":"assistant","content":{"type":"text","text":"here"},"model":"m"}}`)
	if r := h.Post(t, waiting, answer); r.Status != http.StatusAccepted {
		t.Fatalf("answer: %s", r)
	}
	ev, _ := live.NextMessage(t)
	if text, isErr := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), "1")); isErr || !strings.Contains(text, "here") {
		t.Fatalf("waiting control: result %q isError=%v", text, isErr)
	}
}

// sessionEndingStore ends a client session right after handing it out, as
// a DELETE or the idle sweep landing between a request's session lookup and
// the start of its handler would.
type sessionEndingStore struct {
	SessionStore
	armed atomic.Bool
}

func (s *sessionEndingStore) Get(ctx context.Context, id string) (*ClientSession, error) {
	sess, err := s.SessionStore.Get(ctx, id)
	if err == nil && s.armed.Load() {
		_ = s.SessionStore.Delete(ctx, id)
	}
	return sess, err
}

// A request on a session that ends between its lookup and its start gets
// the same 404 as any request on an ended session, so the client knows to
// initialize again (basic/transports). It once got 200 with a -32600 saying
// the session ended, which clients do not act on.
func TestSession_EndedDuringLookupIs404(t *testing.T) {
	var store *sessionEndingStore
	h := newHarness(t, withOpts(func(o *Options) {
		store = &sessionEndingStore{SessionStore: newMemorySessions(context.Background(), o.SessionIdleTimeout, o.MaxSessions, sessionCaps{}, time.Now, nil, nil)}
		o.Sessions = store
	}))
	for _, tc := range []struct {
		name   string
		body   []byte
		accept string
	}{
		{"tools/list", th.RPC(1, "tools/list", nil), th.AcceptBoth},
		{"tools/call, JSON only", th.ToolCall(1, "echo", map[string]any{"text": "x"}, nil), "application/json"},
		{"tools/call, streamed", th.ToolCall(1, "progress", map[string]any{"n": 2}, "pt"), th.AcceptBoth},
		{"tools/call, LongRunning", th.ToolCall(1, "echo_long", map[string]any{"text": "x"}, nil), th.AcceptBoth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sid := h.Initialize(t)
			store.armed.Store(true)
			r := h.Post(t, sid, tc.body, "Accept", tc.accept)
			store.armed.Store(false)
			th.WantRPCError(t, r, http.StatusNotFound, "1", protocol.CodeInvalidRequest)
			th.WantRPCError(t, h.Post(t, sid, th.RPC(2, "tools/list", nil)), http.StatusNotFound, "2", protocol.CodeInvalidRequest)
		})
	}
	t.Run("GET", func(t *testing.T) {
		sid := h.Initialize(t)
		store.armed.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), th.WaitLong)
		defer cancel()
		res, err := h.Client.Do(h.NewRequest(t, ctx, http.MethodGet, sid, nil))
		store.armed.Store(false)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("GET on a session ended during its lookup: %d %s, want 404", res.StatusCode, res.Header.Get("Content-Type"))
		}
	})
}

// ---------------------------------------------------------------------------
// Subscriptions

// What one client session may subscribe to is bounded: a URI longer than
// 2048 bytes or without a scheme is refused with -32602, and so is a
// subscription past maxSubscriptions; one held already, or a new one once
// another is dropped, is fine. Patterns (stale://memory.*) are accepted.
func TestSubscriptions_Bounded(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	for i, uri := range []string{
		"relative/path",
		"/absolute/path",
		"test://x/" + strings.Repeat("a", 2048),
	} {
		r := h.Post(t, sid, th.RPC(i, "resources/subscribe", map[string]any{"uri": uri}))
		th.WantRPCError(t, r, http.StatusOK, fmt.Sprint(i), protocol.CodeInvalidParams)
		if h.session(t, sid).subscribed(uri) {
			t.Errorf("refused uri %.40q… is subscribed", uri)
		}
	}
	h.Subscribe(t, sid, "stale://memory.*")
	if !h.session(t, sid).subscribed("stale://memory.*") {
		t.Fatal("pattern subscription not held")
	}

	// Fill up to the cap (white-box: 1023 requests would only be slow), the
	// last one through the protocol.
	sess := h.session(t, sid)
	for i := 1; i < maxSubscriptions-1; i++ {
		if err := sess.Subscribe(resURI(i)); err != nil {
			t.Fatalf("subscription %d: %v", i+1, err)
		}
	}
	h.Subscribe(t, sid, resURI(maxSubscriptions-1))
	over := resURI(maxSubscriptions)
	th.WantRPCError(t, h.Post(t, sid, th.RPC("over", "resources/subscribe", map[string]any{"uri": over})), http.StatusOK, `"over"`, protocol.CodeInvalidParams)
	if sess.subscribed(over) {
		t.Fatal("the subscription past the cap is held")
	}
	h.Subscribe(t, sid, resURI(1)) // held already: no new entry
	th.ResultOf(t, h.Post(t, sid, th.RPC("un", "resources/unsubscribe", map[string]any{"uri": resURI(1)})), `"un"`)
	h.Subscribe(t, sid, over)
}

// ---------------------------------------------------------------------------
// Protocol versions

func TestVersion_Negotiation(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ ask, want string }{
		{"2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-03-26"},
		{"1999-01-01", "2025-11-25"},
		{"2099-01-01", "2025-11-25"},
		{"garbage", "2025-11-25"},
	} {
		t.Run(tc.ask, func(t *testing.T) {
			if _, got := h.InitializeWith(t, tc.ask, nil); got != tc.want {
				t.Errorf("negotiated %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVersion_Header(t *testing.T) {
	h := newHarness(t)
	sid, _ := h.InitializeWith(t, "2025-06-18", nil)
	for _, tc := range []struct {
		name, header string
		want         int
	}{
		{"absent", "", http.StatusOK},
		{"negotiated", "2025-06-18", http.StatusOK},
		// The conformance suite sends 2025-03-26 on a newer session.
		{"other supported, older", "2025-03-26", http.StatusOK},
		{"other supported, newer", "2025-11-25", http.StatusOK},
		{"unsupported future", "2099-01-01", http.StatusBadRequest},
		{"unsupported past", "2024-11-05", http.StatusBadRequest},
		{"garbage", "not-a-version", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.header != "" {
				hdr = []string{"MCP-Protocol-Version", tc.header}
			}
			r := h.Post(t, sid, th.RPC(5, "tools/list", nil), hdr...)
			if tc.want == http.StatusOK {
				th.ResultOf(t, r, "5")
				return
			}
			th.WantRPCError(t, r, tc.want, "5", protocol.CodeInvalidRequest)
			// GET and DELETE check the header as well.
			th.WantRPCError(t, h.Send(t, http.MethodGet, sid, nil, hdr...), tc.want, "null", protocol.CodeInvalidRequest)
			th.WantRPCError(t, h.Send(t, http.MethodDelete, sid, nil, hdr...), tc.want, "null", protocol.CodeInvalidRequest)
			h.ToolsListOK(t, sid) // a refused DELETE did not end the session
		})
	}
}

// ---------------------------------------------------------------------------
// Origin and Host

func TestOriginAndHost(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed []string
		loop    bool
		origin  string
		host    string
		want    int
	}{
		{name: "no Origin", want: http.StatusOK},
		{name: "localhost with port", origin: "http://localhost:1234", want: http.StatusOK},
		{name: "LOCALHOST upper case", origin: "HTTP://LOCALHOST:1234", want: http.StatusOK},
		{name: "127.0.0.1", origin: "http://127.0.0.1", want: http.StatusOK},
		{name: "[::1]", origin: "http://[::1]:8080", want: http.StatusOK},
		{name: "https localhost", origin: "https://localhost", want: http.StatusOK},
		{name: "evil", origin: "https://evil.example.com", want: http.StatusForbidden},
		{name: "localhost as a subdomain", origin: "http://localhost.evil.example.com", want: http.StatusForbidden},
		{name: "loopback IP as a subdomain", origin: "http://127.0.0.1.evil.example.com", want: http.StatusForbidden},
		{name: "null origin", origin: "null", want: http.StatusForbidden},
		{name: "non-http scheme", origin: "file://localhost", want: http.StatusForbidden},
		{name: "allow-list: listed", allowed: []string{"https://app.example.com"}, origin: "https://app.example.com", want: http.StatusOK},
		{name: "allow-list: listed, trailing slash in list", allowed: []string{"https://app.example.com/"}, origin: "https://app.example.com", want: http.StatusOK},
		{name: "allow-list: localhost no longer implied", allowed: []string{"https://app.example.com"}, origin: "http://localhost:1234", want: http.StatusForbidden},
		{name: "allow-list: other port", allowed: []string{"https://app.example.com"}, origin: "https://app.example.com:8443", want: http.StatusForbidden},
		{name: "allow-list: other scheme", allowed: []string{"https://app.example.com"}, origin: "http://app.example.com", want: http.StatusForbidden},
		{name: "allow-list: no Origin", allowed: []string{"https://app.example.com"}, want: http.StatusOK},
		{name: "star allows evil", allowed: []string{"*"}, origin: "https://evil.example.com", want: http.StatusOK},
		{name: "star allows garbage", allowed: []string{"*"}, origin: "null", want: http.StatusOK},
		{name: "loopback only: evil Host", loop: true, host: "evil.example.com", want: http.StatusForbidden},
		{name: "loopback only: evil Host with port", loop: true, host: "evil.example.com:8080", want: http.StatusForbidden},
		{name: "loopback only: evil Host and Origin", loop: true, host: "evil.example.com", origin: "http://evil.example.com", want: http.StatusForbidden},
		{name: "loopback only: localhost:8080", loop: true, host: "localhost:8080", want: http.StatusOK},
		{name: "loopback only: 127.0.0.1", loop: true, host: "127.0.0.1:9", want: http.StatusOK},
		{name: "loopback only: [::1]", loop: true, host: "[::1]:8080", want: http.StatusOK},
		{name: "loopback only: localhost Host, evil Origin", loop: true, host: "localhost:8080", origin: "https://evil.example.com", want: http.StatusForbidden},
		{name: "Host not checked without LoopbackOnly", host: "evil.example.com", want: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withOpts(func(o *Options) { o.AllowedOrigins, o.LoopbackOnly = tc.allowed, tc.loop }))
			var hdr []string
			if tc.origin != "" {
				hdr = append(hdr, "Origin", tc.origin)
			}
			if tc.host != "" {
				hdr = append(hdr, "Host", tc.host)
			}
			r := h.Post(t, "", th.InitBody(protocol.LatestVersion, nil), hdr...)
			if tc.want == http.StatusOK {
				if r.Status != http.StatusOK {
					t.Fatalf("initialize: %s, want 200", r)
				}
				th.ResultOf(t, r, "0")
				return
			}
			th.WantRPCError(t, r, tc.want, "null", protocol.CodeInvalidRequest)
			if n := h.tr.Sessions().Len(); n != 0 {
				t.Errorf("a forbidden initialize opened a session")
			}
		})
	}
}

// A forbidden Origin is refused on GET and DELETE too, before anything
// happens to the session.
func TestOrigin_AllMethods(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	evil := []string{"Origin", "https://evil.example.com"}
	th.WantRPCError(t, h.Send(t, http.MethodGet, sid, nil, evil...), http.StatusForbidden, "null", protocol.CodeInvalidRequest)
	th.WantRPCError(t, h.Send(t, http.MethodDelete, sid, nil, evil...), http.StatusForbidden, "null", protocol.CodeInvalidRequest)
	th.WantRPCError(t, h.Post(t, sid, th.RPC(1, "tools/list", nil), evil...), http.StatusForbidden, "null", protocol.CodeInvalidRequest)
	h.ToolsListOK(t, sid)
}

// preflightParams: a modern browser client's preflight for a tools/call
// that sends Mcp-Param-{Name} headers is allowed those headers, and no
// header outside the MCP ones rides along with them.
func preflightParams(t *testing.T, h *harness, origin string, ok bool) {
	t.Helper()
	for _, tc := range []struct {
		headers string
		allow   bool
	}{
		{"content-type, mcp-protocol-version, mcp-method, mcp-name, mcp-param-region, Mcp-Param-Tenant-Id", true},
		{"mcp-param-region, x-evil", false},
		{"content-type, x-evil", false},
		{"mcp-param-", false},
		// go-chi/cors takes a space, as a comma, for the end of a name.
		{"mcp-param-region x-evil", false},
	} {
		pre := h.Send(t, http.MethodOptions, "", nil, "Origin", origin,
			"Access-Control-Request-Method", http.MethodPost, "Access-Control-Request-Headers", tc.headers)
		allowed := strings.ToLower(pre.Header.Get("Access-Control-Allow-Headers"))
		want := ok && tc.allow
		for _, hd := range strings.FieldsFunc(strings.ToLower(tc.headers), func(r rune) bool { return r == ',' || r == ' ' }) {
			if strings.Contains(allowed, hd) != want {
				t.Errorf("preflight from %s asking %q: Access-Control-Allow-Headers %q; want %s allowed: %v", origin, tc.headers, allowed, hd, want)
			}
		}
	}
}

// Browser clients on an allowed origin can use the endpoint: the CORS
// preflight is answered with the methods and MCP headers they send, and
// responses expose Mcp-Session-Id to the page's script. A disallowed origin
// gets no CORS headers, so the browser blocks it, and its requests are 403.
func TestCORS(t *testing.T) {
	const reqHeaders = "content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id"
	for _, tc := range []struct {
		name    string
		allowed []string
		origin  string
		ok      bool
	}{
		{"default: localhost", nil, "http://localhost:3000", true},
		{"default: loopback IP", nil, "http://127.0.0.1:5173", true},
		{"default: other site", nil, "https://evil.example.com", false},
		{"allow-list: listed", []string{"https://app.example.com"}, "https://app.example.com", true},
		{"allow-list: localhost not implied", []string{"https://app.example.com"}, "http://localhost:3000", false},
		{"star", []string{"*"}, "https://any.example.com", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withOpts(func(o *Options) { o.AllowedOrigins = tc.allowed }))
			for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
				pre := h.Send(t, http.MethodOptions, "", nil, "Origin", tc.origin,
					"Access-Control-Request-Method", method, "Access-Control-Request-Headers", reqHeaders)
				acao := pre.Header.Get("Access-Control-Allow-Origin")
				if !tc.ok {
					if acao != "" {
						t.Errorf("preflight for %s from %s: Access-Control-Allow-Origin %q, want none", method, tc.origin, acao)
					}
					continue
				}
				if pre.Status/100 != 2 || acao != tc.origin {
					t.Errorf("preflight for %s: %s, Access-Control-Allow-Origin %q; want 2xx echoing %s", method, pre, acao, tc.origin)
				}
				if m := pre.Header.Get("Access-Control-Allow-Methods"); !strings.Contains(m, method) {
					t.Errorf("preflight for %s: Access-Control-Allow-Methods %q", method, m)
				}
				allowed := strings.ToLower(pre.Header.Get("Access-Control-Allow-Headers"))
				for _, hd := range strings.Split(reqHeaders, ", ") {
					if !strings.Contains(allowed, hd) {
						t.Errorf("preflight for %s: Access-Control-Allow-Headers %q lacks %s", method, allowed, hd)
					}
				}
			}
			preflightParams(t, h, tc.origin, tc.ok)
			r := h.Post(t, "", th.InitBody(protocol.LatestVersion, nil), "Origin", tc.origin)
			if !tc.ok {
				th.WantRPCError(t, r, http.StatusForbidden, "null", protocol.CodeInvalidRequest)
				if acao := r.Header.Get("Access-Control-Allow-Origin"); acao != "" {
					t.Errorf("refused POST: Access-Control-Allow-Origin %q, want none", acao)
				}
				return
			}
			th.ResultOf(t, r, "0")
			if acao := r.Header.Get("Access-Control-Allow-Origin"); acao != tc.origin {
				t.Errorf("POST: Access-Control-Allow-Origin %q, want %s", acao, tc.origin)
			}
			exposed := strings.ToLower(r.Header.Get("Access-Control-Expose-Headers"))
			if !strings.Contains(exposed, "mcp-session-id") {
				t.Errorf("POST: Access-Control-Expose-Headers %q lacks Mcp-Session-Id", exposed)
			}
		})
	}
}

func TestOrigin_MalformedAllowList(t *testing.T) {
	for _, list := range [][]string{
		{"app.example.com"},
		{"https://app.example.com/path"},
		{"https://app.example.com?q=1"},
		{"ftp://app.example.com"},
		{""},
		{"https://"},
		{"https://ok.example.com", "::not a url::"},
	} {
		opts := defaultOptions()
		opts.AllowedOrigins = list
		if tr, err := New(nil, opts); err == nil {
			tr.Close(context.Background())
			t.Errorf("New with AllowedOrigins %q succeeded, want an error", list)
		}
	}
	// The other options are validated too.
	for name, mod := range map[string]func(*Options){
		"MaxBodyBytes":       func(o *Options) { o.MaxBodyBytes = 0 },
		"SessionIdleTimeout": func(o *Options) { o.SessionIdleTimeout = 0 },
		"KeepAliveInterval":  func(o *Options) { o.KeepAliveInterval = -1 },
		"EventLogSize":       func(o *Options) { o.EventLogSize = 0 },
		"MaxSessions":        func(o *Options) { o.MaxSessions = 0 },
	} {
		opts := defaultOptions()
		mod(&opts)
		if tr, err := New(nil, opts); err == nil {
			tr.Close(context.Background())
			t.Errorf("New with %s not positive succeeded, want an error", name)
		}
	}
}

// ---------------------------------------------------------------------------
// Content negotiation

func TestContentNegotiation(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	for _, tc := range []struct {
		name   string
		method string
		body   []byte
		hdr    []string
		want   int
		id     string
	}{
		{"Content-Type text/plain", http.MethodPost, th.RPC(1, "tools/list", nil), []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType, "null"},
		{"Content-Type form", http.MethodPost, th.RPC(1, "tools/list", nil), []string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType, "null"},
		{"Accept text/html", http.MethodPost, th.RPC(1, "tools/list", nil), []string{"Accept", "text/html"}, http.StatusNotAcceptable, "null"},
		{"GET Accept application/json", http.MethodGet, nil, []string{"Accept", "application/json"}, http.StatusNotAcceptable, "null"},
		{"GET without Accept", http.MethodGet, nil, []string{"Accept", ""}, http.StatusNotAcceptable, "null"},
		{"PUT", http.MethodPut, th.RPC(1, "tools/list", nil), nil, http.StatusMethodNotAllowed, "null"},
		{"PATCH", http.MethodPatch, th.RPC(1, "tools/list", nil), nil, http.StatusMethodNotAllowed, "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Send(t, tc.method, sid, tc.body, tc.hdr...)
			th.WantRPCError(t, r, tc.want, tc.id, protocol.CodeInvalidRequest)
			if tc.want == http.StatusMethodNotAllowed {
				allow := r.Header.Get("Allow")
				for _, m := range []string{"GET", "POST", "DELETE"} {
					if !strings.Contains(allow, m) {
						t.Errorf("Allow = %q, want it to list %s", allow, m)
					}
				}
			}
			h.ToolsListOK(t, sid)
		})
	}

	t.Run("Content-Type with charset", func(t *testing.T) {
		th.ResultOf(t, h.Post(t, sid, th.RPC(2, "tools/list", nil), "Content-Type", "application/json; charset=utf-8"), "2")
	})
	t.Run("Accept */*", func(t *testing.T) {
		th.ResultOf(t, h.Post(t, sid, th.RPC(2, "tools/list", nil), "Accept", "*/*"), "2")
	})
	t.Run("notifications and responses get 202 with no body", func(t *testing.T) {
		for _, body := range [][]byte{
			th.RPC(nil, "notifications/initialized", nil),
			th.RPC(nil, "notifications/roots/list_changed", nil),
			th.RPC(nil, "notifications/no-such-notification", map[string]any{"x": 1}),
			th.RPC(nil, "notifications/cancelled", map[string]any{"requestId": 999}),
			[]byte(`{"jsonrpc":"2.0","id":"s404","result":{}}`),
			[]byte(`{"jsonrpc":"2.0","id":17,"error":{"code":-1,"message":"no"}}`),
		} {
			r := h.Post(t, sid, body)
			if r.Status != http.StatusAccepted || len(r.Body) != 0 {
				t.Errorf("%s: %s, want 202 with an empty body", body, r)
			}
		}
	})
}

// With Accept: application/json only, a tool that reports progress answers
// with application/json, and its progress goes to the GET stream.
func TestContentNegotiation_JSONOnlyProgressGoesToGET(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	get := h.OpenGET(t, sid)
	if ev := get.Next(t); !ev.Priming() {
		t.Fatalf("first GET event = %+v, want a priming event", ev)
	}
	r := h.Post(t, sid, th.ToolCall(9, "progress", map[string]any{"n": 3}, "tok"), "Accept", "application/json")
	if text, isErr := th.ToolText(t, th.ResultOf(t, r, "9")); text != "done 3" || isErr {
		t.Fatalf("result %q isError=%v", text, isErr)
	}
	for i := 1; i <= 3; i++ {
		_, m := get.NextMessage(t)
		p := th.ProgressOf(t, m)
		if p.Token != `"tok"` || p.Progress != float64(i) {
			t.Fatalf("GET event %d = %+v, want progress %d for token \"tok\"", i, p, i)
		}
	}
}

// q=0 refuses a media type (RFC 9110 §12.5.1). A client that refuses
// text/event-stream gets a streamed tool call as application/json (its
// progress goes to the GET stream); one that refuses both is 406; a GET that
// refuses text/event-stream is 406. Once, parameters were ignored and q=0
// read as acceptance.
func TestContentNegotiation_QZeroRefuses(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	for i, tc := range []struct {
		accept string
		want   string // "json", "sse" or "406"
	}{
		{"application/json, text/event-stream;q=0", "json"},
		{"application/json, text/event-stream; q=0.000", "json"},
		{"application/json, text/event-stream;Q=0", "json"},
		{"application/json, text/*;q=0", "json"},
		{"application/json, text/event-stream;q=0.001", "sse"},
		{"application/json;q=0, text/event-stream", "sse"},
		{"application/json;q=0, text/event-stream;q=0", "406"},
	} {
		t.Run("POST "+tc.accept, func(t *testing.T) {
			r := h.Post(t, sid, th.ToolCall(i, "progress", map[string]any{"n": 2}, "pt"), "Accept", tc.accept)
			ct := r.Header.Get("Content-Type")
			switch tc.want {
			case "406":
				th.WantRPCError(t, r, http.StatusNotAcceptable, "null", protocol.CodeInvalidRequest)
				return
			case "json":
				if !strings.HasPrefix(ct, "application/json") {
					t.Fatalf("%s, want application/json: the client refused text/event-stream", r)
				}
			case "sse":
				if ct != "text/event-stream" {
					t.Fatalf("%s, want text/event-stream", r)
				}
			}
			if text, _ := th.ToolText(t, th.ResultOf(t, r, fmt.Sprint(i))); text != "done 2" {
				t.Fatalf("result %q", text)
			}
		})
	}
	for _, accept := range []string{"text/event-stream;q=0", "text/event-stream; q=0, application/json", "text/*;q=0"} {
		t.Run("GET "+accept, func(t *testing.T) {
			th.WantRPCError(t, h.Send(t, http.MethodGet, sid, nil, "Accept", accept), http.StatusNotAcceptable, "null", protocol.CodeInvalidRequest)
		})
	}
	t.Run("GET text/event-stream;q=0.5", func(t *testing.T) {
		if ev := h.OpenGET(t, sid, "Accept", "text/event-stream;q=0.5").Next(t); !ev.Priming() {
			t.Fatalf("first event %+v, want the priming event", ev)
		}
	})
	t.Run("explicit refusal beats a wildcard", func(t *testing.T) {
		r := h.Post(t, sid, th.ToolCall(99, "progress", map[string]any{"n": 2}, "pt"), "Accept", "text/event-stream;q=0, */*")
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s, want application/json", r)
		}
	})
}
