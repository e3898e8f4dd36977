package transport

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// ---------------------------------------------------------------------------
// Sessions

func TestSession_MissingAndUnknownID(t *testing.T) {
	h := newHarness(t)
	h.initialize(t)
	for _, tc := range []struct {
		name, method, sid string
		body              []byte
		want              int
		id                string
	}{
		{"POST without id", http.MethodPost, "", rpc(3, "tools/list", nil), http.StatusBadRequest, "3"},
		{"GET without id", http.MethodGet, "", nil, http.StatusBadRequest, "null"},
		{"DELETE without id", http.MethodDelete, "", nil, http.StatusBadRequest, "null"},
		{"POST notification without id", http.MethodPost, "", rpc(nil, "notifications/initialized", nil), http.StatusBadRequest, "null"},
		{"POST with unknown id", http.MethodPost, "no-such-session", rpc(4, "tools/list", nil), http.StatusNotFound, "4"},
		{"GET with unknown id", http.MethodGet, "no-such-session", nil, http.StatusNotFound, "null"},
		{"DELETE with unknown id", http.MethodDelete, "no-such-session", nil, http.StatusNotFound, "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.send(t, tc.method, tc.sid, tc.body)
			wantRPCError(t, r, tc.want, tc.id, protocol.CodeInvalidRequest)
		})
	}
}

func TestSession_DeleteThen404(t *testing.T) {
	h := newHarness(t)
	sid := h.initialize(t)
	other := h.initialize(t)
	get := h.openGET(t, sid)
	get.next(t) // priming: attached
	if r := h.send(t, http.MethodDelete, sid, nil); r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Fatalf("DELETE: %s, want 204 with no body", r)
	}
	// Ending the session ends its open GET stream.
	get.waitEnd(t)
	wantRPCError(t, h.post(t, sid, rpc(1, "tools/list", nil)), http.StatusNotFound, "1", protocol.CodeInvalidRequest)
	wantRPCError(t, h.post(t, sid, rpc(nil, "notifications/initialized", nil)), http.StatusNotFound, "null", protocol.CodeInvalidRequest)
	wantRPCError(t, h.send(t, http.MethodGet, sid, nil), http.StatusNotFound, "null", protocol.CodeInvalidRequest)
	wantRPCError(t, h.send(t, http.MethodDelete, sid, nil), http.StatusNotFound, "null", protocol.CodeInvalidRequest)
	// Other sessions are untouched.
	h.toolsListOK(t, other)
	if n := h.tr.Sessions().Len(); n != 1 {
		t.Errorf("sessions = %d, want 1", n)
	}
}

func TestSession_IDsAndLimit(t *testing.T) {
	const n = 1000
	h := newHarness(t, withOpts(func(o *Options) { o.MaxSessions = n }))
	seen := make(map[string]bool, n)
	for i := 0; i < n; i++ {
		r := h.post(t, "", initBody(protocol.LatestVersion, nil))
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
	r := h.post(t, "", initBody(protocol.LatestVersion, nil))
	wantRPCError(t, r, http.StatusServiceUnavailable, "0", protocol.CodeInternalError)
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
	h.toolsListOK(t, some)
	if r := h.send(t, http.MethodDelete, some, nil); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %s", r)
	}
	h.initialize(t)
}

func TestSession_IdleTimeout(t *testing.T) {
	h := newHarness(t, withOpts(func(o *Options) { o.SessionIdleTimeout = 100 * time.Millisecond }))
	idle := h.initialize(t)
	streaming := h.initialize(t)
	busy := h.initialize(t)

	get := h.openGET(t, streaming)
	get.next(t) // priming event: the stream is attached
	// A request in flight keeps its session too.
	blk := h.fx.block("idle-busy")
	pending := h.postAsync(t, context.Background(), busy, toolCall(1, "block", map[string]any{"key": "idle-busy"}, nil), "Accept", "application/json")
	blk.waitStarted(t)

	// Poll the store, not the server: a request would count as activity.
	gone := func(sid string) bool {
		_, err := h.tr.Sessions().Get(context.Background(), sid)
		return errors.Is(err, ErrSessionNotFound)
	}
	eventually(t, waitLong, "the idle session to be ended", func() bool { return gone(idle) })
	wantRPCError(t, h.post(t, idle, rpc(1, "tools/list", nil)), http.StatusNotFound, "1", protocol.CodeInvalidRequest)

	// Several idle timeouts later the other two are still there.
	deadline := time.Now().Add(5 * 100 * time.Millisecond)
	for time.Now().Before(deadline) {
		if gone(streaming) {
			t.Fatal("a session with an open GET stream was reaped")
		}
		if gone(busy) {
			t.Fatal("a session with a request in flight was reaped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := h.tr.Sessions().Len(); n != 2 {
		t.Errorf("sessions = %d, want 2", n)
	}

	// Once the stream closes and the request ends, they are reaped as well.
	get.close()
	blk.Release()
	if r := waitReply(t, pending); r.Status != http.StatusOK {
		t.Fatalf("blocked call: %s", r)
	}
	eventually(t, waitLong, "the formerly streaming session to be ended", func() bool { return gone(streaming) })
	eventually(t, waitLong, "the formerly busy session to be ended", func() bool { return gone(busy) })
	if n := h.tr.Sessions().Len(); n != 0 {
		t.Errorf("sessions = %d, want 0", n)
	}
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
			if _, got := h.initializeWith(t, tc.ask, nil); got != tc.want {
				t.Errorf("negotiated %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVersion_Header(t *testing.T) {
	h := newHarness(t)
	sid, _ := h.initializeWith(t, "2025-06-18", nil)
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
			r := h.post(t, sid, rpc(5, "tools/list", nil), hdr...)
			if tc.want == http.StatusOK {
				resultOf(t, r, "5")
				return
			}
			wantRPCError(t, r, tc.want, "5", protocol.CodeInvalidRequest)
			// GET and DELETE check the header as well.
			wantRPCError(t, h.send(t, http.MethodGet, sid, nil, hdr...), tc.want, "null", protocol.CodeInvalidRequest)
			wantRPCError(t, h.send(t, http.MethodDelete, sid, nil, hdr...), tc.want, "null", protocol.CodeInvalidRequest)
			h.toolsListOK(t, sid) // a refused DELETE did not end the session
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
			r := h.post(t, "", initBody(protocol.LatestVersion, nil), hdr...)
			if tc.want == http.StatusOK {
				if r.Status != http.StatusOK {
					t.Fatalf("initialize: %s, want 200", r)
				}
				resultOf(t, r, "0")
				return
			}
			wantRPCError(t, r, tc.want, "null", protocol.CodeInvalidRequest)
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
	sid := h.initialize(t)
	evil := []string{"Origin", "https://evil.example.com"}
	wantRPCError(t, h.send(t, http.MethodGet, sid, nil, evil...), http.StatusForbidden, "null", protocol.CodeInvalidRequest)
	wantRPCError(t, h.send(t, http.MethodDelete, sid, nil, evil...), http.StatusForbidden, "null", protocol.CodeInvalidRequest)
	wantRPCError(t, h.post(t, sid, rpc(1, "tools/list", nil), evil...), http.StatusForbidden, "null", protocol.CodeInvalidRequest)
	h.toolsListOK(t, sid)
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
	sid := h.initialize(t)
	for _, tc := range []struct {
		name   string
		method string
		body   []byte
		hdr    []string
		want   int
		id     string
	}{
		{"Content-Type text/plain", http.MethodPost, rpc(1, "tools/list", nil), []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType, "null"},
		{"Content-Type form", http.MethodPost, rpc(1, "tools/list", nil), []string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType, "null"},
		{"Accept text/html", http.MethodPost, rpc(1, "tools/list", nil), []string{"Accept", "text/html"}, http.StatusNotAcceptable, "null"},
		{"GET Accept application/json", http.MethodGet, nil, []string{"Accept", "application/json"}, http.StatusNotAcceptable, "null"},
		{"GET without Accept", http.MethodGet, nil, []string{"Accept", ""}, http.StatusNotAcceptable, "null"},
		{"PUT", http.MethodPut, rpc(1, "tools/list", nil), nil, http.StatusMethodNotAllowed, "null"},
		{"PATCH", http.MethodPatch, rpc(1, "tools/list", nil), nil, http.StatusMethodNotAllowed, "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.send(t, tc.method, sid, tc.body, tc.hdr...)
			wantRPCError(t, r, tc.want, tc.id, protocol.CodeInvalidRequest)
			if tc.want == http.StatusMethodNotAllowed {
				allow := r.Header.Get("Allow")
				for _, m := range []string{"GET", "POST", "DELETE"} {
					if !strings.Contains(allow, m) {
						t.Errorf("Allow = %q, want it to list %s", allow, m)
					}
				}
			}
			h.toolsListOK(t, sid)
		})
	}

	t.Run("Content-Type with charset", func(t *testing.T) {
		resultOf(t, h.post(t, sid, rpc(2, "tools/list", nil), "Content-Type", "application/json; charset=utf-8"), "2")
	})
	t.Run("Accept */*", func(t *testing.T) {
		resultOf(t, h.post(t, sid, rpc(2, "tools/list", nil), "Accept", "*/*"), "2")
	})
	t.Run("notifications and responses get 202 with no body", func(t *testing.T) {
		for _, body := range [][]byte{
			rpc(nil, "notifications/initialized", nil),
			rpc(nil, "notifications/roots/list_changed", nil),
			rpc(nil, "notifications/no-such-notification", map[string]any{"x": 1}),
			rpc(nil, "notifications/cancelled", map[string]any{"requestId": 999}),
			[]byte(`{"jsonrpc":"2.0","id":"s404","result":{}}`),
			[]byte(`{"jsonrpc":"2.0","id":17,"error":{"code":-1,"message":"no"}}`),
		} {
			r := h.post(t, sid, body)
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
	sid := h.initialize(t)
	get := h.openGET(t, sid)
	if ev := get.next(t); !ev.priming() {
		t.Fatalf("first GET event = %+v, want a priming event", ev)
	}
	r := h.post(t, sid, toolCall(9, "progress", map[string]any{"n": 3}, "tok"), "Accept", "application/json")
	if text, isErr := toolText(t, resultOf(t, r, "9")); text != "done 3" || isErr {
		t.Fatalf("result %q isError=%v", text, isErr)
	}
	for i := 1; i <= 3; i++ {
		_, m := get.nextMessage(t)
		p := progressOf(t, m)
		if p.Token != `"tok"` || p.Progress != float64(i) {
			t.Fatalf("GET event %d = %+v, want progress %d for token \"tok\"", i, p, i)
		}
	}
}
