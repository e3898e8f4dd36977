package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer is a minimal Streamable HTTP MCP server with an "echo" tool.
// It checks the headers mcpload must send and reports violations through t.
type fakeServer struct {
	t         *testing.T
	sse       bool   // answer requests with text/event-stream
	stateless bool   // no Mcp-Session-Id
	version   string // force this negotiated version ("" = echo the request)
	failInit  bool   // initialize returns HTTP 500
	idPrefix  string // prefix of its session ids, so that servers of one test never share an id
	callFail  string // tools/*: "status" answers 503, "content-type" text/plain, "truncate" cuts the SSE stream
	// dropEvery > 0: every dropEvery-th notification is not sent.
	dropEvery int64
	// closeGetAfter > 0: a GET stream ends after that many notifications
	// (the queue keeps the rest for the next GET).
	closeGetAfter int
	// onCall, when set, runs with the count of tools/* requests each time
	// one is counted, before it is answered: a test's signal that the
	// run has got so far.
	onCall func(n int64)

	mu       sync.Mutex
	sessions map[string]bool
	deleted  []string
	texts    []string // the text argument of every tools/call of echo
	nextID   int
	calls    atomic.Int64
	inits    atomic.Int64
	notified atomic.Int64

	// State Sync: the "store" tool changes store://KEY, and sessions that
	// subscribed to it (resources/subscribe) hear of it on their GET stream.
	subs     map[string]string      // session id -> subscribed URI
	streams  map[string]chan string // session id -> its GET stream's queue
	gets     atomic.Int64
	resumes  atomic.Int64 // GETs with Last-Event-ID
	stores   atomic.Int64
	updates  atomic.Int64 // notifications sent or dropped
	toolSeen map[string]int
}

// get serves a session's GET stream: notifications queued for it, as SSE.
func (s *fakeServer) get(w http.ResponseWriter, r *http.Request) {
	if got := r.Header.Get("Accept"); got != "text/event-stream" {
		s.t.Errorf("GET: Accept = %q", got)
	}
	sid := r.Header.Get(headerSessionID)
	s.mu.Lock()
	ch, ok := s.streams[sid]
	if !ok && s.sessions[sid] {
		ch = make(chan string, 100000)
		s.streams[sid] = ch
		ok = true
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	s.gets.Add(1)
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		if !strings.HasPrefix(last, "g-") {
			s.t.Errorf("Last-Event-ID %q", last)
		}
		s.resumes.Add(1)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "id: g-0\ndata:\n\n")
	w.(http.Flusher).Flush()
	for n := 1; ; n++ {
		if s.closeGetAfter > 0 && n > s.closeGetAfter {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case msg := <-ch:
			_, _ = fmt.Fprintf(w, "id: g-%d\nevent: message\ndata: %s\n\n", n, msg)
			w.(http.Flusher).Flush()
		}
	}
}

// changed notifies the subscribers of uri.
func (s *fakeServer) changed(uri string) {
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":%q}}`, uri)
	s.mu.Lock()
	defer s.mu.Unlock()
	for sid, u := range s.subs {
		if u != uri {
			continue
		}
		if n := s.updates.Add(1); s.dropEvery > 0 && n%s.dropEvery == 0 {
			continue
		}
		ch := s.streams[sid]
		if ch == nil {
			ch = make(chan string, 100000)
			s.streams[sid] = ch
		}
		ch <- msg
	}
}

func (s *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := s.t
	if got := r.Header.Get("Authorization"); got != "Bearer test-token" {
		t.Errorf("%s: Authorization = %q", r.Method, got)
	}
	if r.Method == http.MethodDelete {
		s.mu.Lock()
		id := r.Header.Get(headerSessionID)
		if !s.sessions[id] {
			t.Errorf("DELETE of unknown session %q", id)
		}
		delete(s.sessions, id)
		s.deleted = append(s.deleted, id)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method == http.MethodGet && s.subs != nil {
		s.get(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if got := r.Header.Get("Accept"); !strings.Contains(got, "application/json") || !strings.Contains(got, "text/event-stream") {
		t.Errorf("Accept = %q", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil || msg.JSONRPC != "2.0" {
		t.Errorf("bad JSON-RPC body: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}

	if msg.Method == "initialize" {
		s.inits.Add(1)
		if s.failInit {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
			ClientInfo      struct {
				Name string `json:"name"`
			} `json:"clientInfo"`
		}
		if err := json.Unmarshal(msg.Params, &p); err != nil || p.ClientInfo.Name != "mcpload" {
			t.Errorf("initialize params %s: %v", msg.Params, err)
		}
		version := p.ProtocolVersion
		if s.version != "" {
			version = s.version
		}
		if !s.stateless {
			s.mu.Lock()
			s.nextID++
			id := fmt.Sprintf("%ssess-%d", s.idPrefix, s.nextID)
			s.sessions[id] = true
			s.mu.Unlock()
			w.Header().Set(headerSessionID, id)
		}
		s.reply(w, msg.ID, fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`, version))
		return
	}

	// Everything after initialize carries the negotiated version and the
	// session id.
	wantVersion := s.version
	if wantVersion == "" {
		wantVersion = "2025-11-25"
	}
	if got := r.Header.Get(headerProtocolVersion); got != wantVersion {
		t.Errorf("%s: %s = %q, want %q", msg.Method, headerProtocolVersion, got, wantVersion)
	}
	sid := r.Header.Get(headerSessionID)
	if s.stateless {
		if sid != "" {
			t.Errorf("stateless server got session id %q", sid)
		}
	} else {
		s.mu.Lock()
		ok := s.sessions[sid]
		s.mu.Unlock()
		if !ok {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
	}

	if strings.HasPrefix(msg.Method, "tools/") {
		switch s.callFail {
		case "status":
			s.countCall()
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		case "content-type":
			s.countCall()
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("hello"))
			return
		case "truncate":
			s.countCall()
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,", msg.ID)
			return
		}
	}

	switch msg.Method {
	case "notifications/initialized":
		s.notified.Add(1)
		w.WriteHeader(http.StatusAccepted)
	case "tools/list":
		s.countCall()
		s.reply(w, msg.ID, `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)
	case "resources/subscribe":
		var p struct {
			URI string `json:"uri"`
		}
		if err := json.Unmarshal(msg.Params, &p); err != nil || p.URI == "" || s.subs == nil {
			s.replyRaw(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"cannot subscribe"}}`, msg.ID))
			return
		}
		s.mu.Lock()
		s.subs[sid] = p.URI
		s.mu.Unlock()
		s.reply(w, msg.ID, `{}`)
	case "tools/call":
		s.countCall()
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Text  string `json:"text"`
				Key   string `json:"key"`
				Value *int64 `json:"value"`
			} `json:"arguments"`
		}
		if err := json.Unmarshal(msg.Params, &p); err != nil {
			t.Errorf("tools/call params %s: %v", msg.Params, err)
		}
		s.mu.Lock()
		if s.toolSeen != nil {
			s.toolSeen[p.Name]++
		}
		s.mu.Unlock()
		if p.Name == "store" {
			if p.Arguments.Key == "" || p.Arguments.Value == nil {
				t.Errorf("store without key or value: %s", msg.Params)
			}
			s.stores.Add(1)
			s.changed("store://" + p.Arguments.Key)
			s.reply(w, msg.ID, `{"content":[{"type":"text","text":"stored"}]}`)
			return
		}
		if p.Name == "echo" {
			s.mu.Lock()
			s.texts = append(s.texts, p.Arguments.Text)
			s.mu.Unlock()
		}
		switch {
		case p.Name != "echo":
			s.replyRaw(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool %s"}}`, msg.ID, p.Name))
		case p.Arguments.Text == "fail":
			s.reply(w, msg.ID, `{"content":[{"type":"text","text":"it failed"}],"isError":true}`)
		default:
			text, _ := json.Marshal(p.Arguments.Text)
			s.reply(w, msg.ID, fmt.Sprintf(`{"content":[{"type":"text","text":%s}]}`, text))
		}
	default:
		s.replyRaw(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no such method"}}`, msg.ID))
	}
}

// countCall counts a tools/* request and tells onCall.
func (s *fakeServer) countCall() {
	n := s.calls.Add(1)
	if s.onCall != nil {
		s.onCall(n)
	}
}

func (s *fakeServer) reply(w http.ResponseWriter, id json.RawMessage, result string) {
	s.replyRaw(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
}

// replyRaw writes one JSON-RPC message, as JSON or as an SSE stream that
// exercises the parser: comments, a priming event without data, an unrelated
// notification, a server-to-client request with another id, and the response
// split over two data lines with CRLF line endings.
func (s *fakeServer) replyRaw(w http.ResponseWriter, message string) {
	if !s.sse {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(message))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	_, _ = fmt.Fprint(w, ": stream opened\n\nid: prime-1\ndata:\n\n")
	flush()
	_, _ = fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
	_, _ = fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}\n\n")
	flush()
	half := len(message) / 2
	for half < len(message) && message[half] != ',' {
		half++
	}
	_, _ = fmt.Fprintf(w, "id: ev-2\r\nevent: message\r\ndata: %s\r\ndata: %s\r\n\r\n", message[:half], message[half:])
}

func TestEndToEnd(t *testing.T) {
	tests := []struct {
		name       string
		sse        bool
		callFail   string
		stateless  bool
		version    string
		args       []string
		wantErrors errorCounts
		perRequest bool // wantErrors counts are multiplied by -requests
	}{
		{name: "json tools/call", args: []string{"-tool", "echo", "-args", `{"text":"hi"}`}},
		{name: "sse tools/call", sse: true, args: []string{"-tool", "echo", "-args", `{"text":"hi"}`}},
		{name: "json tools/list stateless", stateless: true},
		{name: "sse tools/list stateless", sse: true, stateless: true},
		{name: "negotiated older version", version: "2025-06-18", args: []string{"-tool", "echo", "-args", `{"text":"hi"}`}},
		{name: "sse negotiated 2025-03-26", sse: true, version: "2025-03-26"},
		{
			name: "json tool error", args: []string{"-tool", "echo", "-args", `{"text":"fail"}`},
			wantErrors: errorCounts{Tool: 1}, perRequest: true,
		},
		{
			name: "sse tool error", sse: true, args: []string{"-tool", "echo", "-args", `{"text":"fail"}`},
			wantErrors: errorCounts{Tool: 1}, perRequest: true,
		},
		{
			name: "json jsonrpc error", args: []string{"-tool", "nope"},
			wantErrors: errorCounts{JSONRPC: 1}, perRequest: true,
		},
		{
			name: "sse jsonrpc error", sse: true, args: []string{"-tool", "nope"},
			wantErrors: errorCounts{JSONRPC: 1}, perRequest: true,
		},
		{name: "http status error", callFail: "status", wantErrors: errorCounts{HTTP: 1}, perRequest: true},
		{name: "unexpected content type", callFail: "content-type", wantErrors: errorCounts{Protocol: 1}, perRequest: true},
		{name: "truncated sse stream", callFail: "truncate", wantErrors: errorCounts{Protocol: 1}, perRequest: true},
	}
	const requests = 60
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &fakeServer{
				t: t, sse: tt.sse, stateless: tt.stateless, version: tt.version,
				callFail: tt.callFail, sessions: map[string]bool{},
			}
			srv := httptest.NewServer(fs)
			defer srv.Close()

			args := append([]string{
				"-url", srv.URL, "-sessions", "3", "-concurrency", "4",
				"-requests", fmt.Sprint(requests), "-warmup", "50ms", "-json",
				"-header", "Authorization: Bearer test-token", "-timeout", "5s",
			}, tt.args...)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, &stdout, &stderr, false)
			if code != exitOK {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
			}
			var sum summary
			if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
				t.Fatalf("decode summary %q: %v", stdout.String(), err)
			}
			if n := bytes.Count(stdout.Bytes(), []byte("\n")); n != 1 {
				t.Errorf("-json printed %d lines, want 1", n)
			}
			if sum.Requests != requests {
				t.Errorf("requests = %d, want %d", sum.Requests, requests)
			}
			want := tt.wantErrors
			if tt.perRequest {
				want = errorCounts{
					HTTP: want.HTTP * requests, JSONRPC: want.JSONRPC * requests, Tool: want.Tool * requests,
					Transport: want.Transport * requests, Protocol: want.Protocol * requests,
				}
			}
			if sum.ErrorsByKind != want {
				t.Errorf("errors by kind = %+v, want %+v; samples %q", sum.ErrorsByKind, want, sum.ErrorSamples)
			}
			wantTotal := want.HTTP + want.JSONRPC + want.Tool + want.Transport + want.Protocol
			if sum.Errors != wantTotal || sum.OK != requests-wantTotal {
				t.Errorf("errors = %d, ok = %d", sum.Errors, sum.OK)
			}
			// Every failure of a case has the same message: one distinct sample.
			if wantTotal > 0 && len(sum.ErrorSamples) != 1 {
				t.Errorf("error samples = %q, want one", sum.ErrorSamples)
			}
			if sum.LatencyUS.P50 == 0 || sum.LatencyUS.Max < sum.LatencyUS.P99 || sum.LatencyUS.P99 < sum.LatencyUS.P50 {
				t.Errorf("implausible latency %+v", sum.LatencyUS)
			}
			if sum.RPS <= 0 || sum.DurationS <= 0 {
				t.Errorf("rps = %v, duration = %v", sum.RPS, sum.DurationS)
			}
			wantVersion := tt.version
			if wantVersion == "" {
				wantVersion = "2025-11-25"
			}
			if sum.ProtocolVersion != wantVersion || sum.Server != "fake 1" {
				t.Errorf("protocol %q server %q", sum.ProtocolVersion, sum.Server)
			}
			// The warmup requests reach the server too.
			if got := fs.calls.Load(); got < requests {
				t.Errorf("server saw %d calls, want at least %d", got, requests)
			}
			if fs.inits.Load() != 3 || fs.notified.Load() != 3 {
				t.Errorf("inits %d, initialized notifications %d, want 3 each", fs.inits.Load(), fs.notified.Load())
			}
			fs.mu.Lock()
			defer fs.mu.Unlock()
			if tt.stateless {
				if len(fs.deleted) != 0 {
					t.Errorf("stateless: DELETEs %q", fs.deleted)
				}
			} else if len(fs.deleted) != 3 || len(fs.sessions) != 0 {
				t.Errorf("deleted %q, still open %v", fs.deleted, fs.sessions)
			}
		})
	}
}

func TestHandshakeFailure(t *testing.T) {
	fs := &fakeServer{t: t, failInit: true, sessions: map[string]bool{}}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-url", srv.URL, "-header", "Authorization: Bearer test-token"}, &stdout, &stderr, false)
	if code != exitFailure {
		t.Fatalf("exit code %d, want %d", code, exitFailure)
	}
	if !strings.Contains(stderr.String(), "handshake failed") || !strings.Contains(stderr.String(), "500") {
		t.Errorf("stderr = %q", stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
}

func TestDurationModeAndProgress(t *testing.T) {
	fs := &fakeServer{t: t, sse: true, sessions: map[string]bool{}}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(context.Background(), []string{
		"-url", srv.URL, "-duration", "1200ms", "-warmup", "0", "-concurrency", "2",
		"-header", "Authorization: Bearer test-token",
	}, &stdout, &stderr, false)
	if code != exitOK {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
	}
	if el := time.Since(start); el < time.Second || el > 10*time.Second {
		t.Errorf("run took %v", el)
	}
	if !strings.Contains(stderr.String(), "requests") || !strings.Contains(stderr.String(), "rate") {
		t.Errorf("no progress line on stderr: %q", stderr.String())
	}
	for _, want := range []string{"throughput", "p50", "p99", "tools/list"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestInterrupt(t *testing.T) {
	// Interrupt once the server has answered a few calls (not after a fixed
	// time, which a loaded machine may spend on the handshake alone). One
	// worker sends a call only after it has its previous answer, so by the
	// fifth request the server sees, the client holds answers it has
	// counted; with many workers all the answers could still be on the
	// wire when the interrupt comes (CI saw "requests 0").
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fs := &fakeServer{t: t, sessions: map[string]bool{}, onCall: func(n int64) {
		if n == 5 {
			cancel()
		}
	}}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"-url", srv.URL, "-duration", "1h", "-warmup", "0", "-json", "-concurrency", "1",
		"-header", "Authorization: Bearer test-token"}, &stdout, &stderr, false)
	if code != exitInterrupt {
		t.Fatalf("exit code %d, want %d", code, exitInterrupt)
	}
	var sum summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("decode summary %q: %v", stdout.String(), err)
	}
	if sum.Errors != 0 || sum.Requests == 0 {
		t.Errorf("requests %d errors %d (%q)", sum.Requests, sum.Errors, sum.ErrorSamples)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.deleted) != 1 {
		t.Errorf("session not deleted after interrupt: %q", fs.deleted)
	}
}

func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-url", "ftp://x"},
		{"-url", "http://x", "-args", "[1]"},
		{"-url", "http://x", "-args", "{"},
		{"-url", "http://x", "-header", "NoColon"},
		{"-url", "http://x", "-concurrency", "0"},
		{"-url", "http://x", "extra"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr, false); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
}
