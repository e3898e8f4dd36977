package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// scriptedServer is an MCP server written by hand, so that a test decides
// exactly what a tools/call's stream carries: it does the handshake and
// tools/list, and answers every tools/call with the events onCall writes.
// A GET with Last-Event-ID is answered by onResume.
type scriptedServer struct {
	mu     sync.Mutex
	posted []string // bodies of the client's POSTs other than the handshake's
	// answered gets a token per such POST.
	answered chan struct{}
	called   int // tools/call requests
	// callBodies and callHeaders are every tools/call's body and headers.
	callBodies  []string
	callHeaders []http.Header
	// hangAnswers makes every POST other than the handshake's and
	// tools/call wait until the request ends.
	hangAnswers bool
	// modern answers server/discover (the 2026-07-28 era) and checks that
	// each tools/call carries the era's _meta.
	modern bool
	// discovers counts server/discover requests.
	discovers atomic.Int64
	// onDiscover, when set, answers server/discover instead.
	onDiscover atomic.Pointer[func(w http.ResponseWriter, id json.RawMessage)]
	// listHint is added to the tools/list result: its ttlMs and
	// cacheScope members.
	listHint string
	onCall   func(w http.ResponseWriter, id json.RawMessage)
	onResume func(w http.ResponseWriter, lastID string)
}

func (s *scriptedServer) start(t *testing.T) string {
	s.answered = make(chan struct{}, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if last := r.Header.Get("Last-Event-ID"); last != "" && s.onResume != nil {
				s.onResume(w, last)
				return
			}
			w.WriteHeader(http.StatusMethodNotAllowed) // no standalone stream
			return
		}
		if r.Method == http.MethodDelete {
			return
		}
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		w.Header().Set("Mcp-Session-Id", "scripted")
		switch m.Method {
		case "server/discover":
			w.Header().Set("Content-Type", "application/json")
			s.discovers.Add(1)
			if f := s.onDiscover.Load(); s.modern && f != nil {
				(*f)(w, m.ID)
				return
			}
			if s.modern {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"scripted","version":"1"}}}}`, m.ID)
				return
			}
			// A server of the 2025-11-25 era: the SDK falls back to
			// initialize.
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
		case "initialize":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}}`, m.ID)
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
		case "tools/list":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]%s}}`, m.ID, s.listHint)
		case "resources/read":
			// A server of the 2025-11-25 era, which knows no cache hint.
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"contents":[{"uri":"file:///a","text":"a"}]}}`, m.ID)
		case "tools/call":
			s.mu.Lock()
			s.called++
			s.callBodies, s.callHeaders = append(s.callBodies, string(body)), append(s.callHeaders, r.Header.Clone())
			s.mu.Unlock()
			if s.modern && !strings.Contains(string(body), `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"missing _meta"}}`, m.ID)
				return
			}
			s.onCall(w, m.ID)
		default:
			s.mu.Lock()
			s.posted = append(s.posted, string(body))
			s.mu.Unlock()
			select {
			case s.answered <- struct{}{}:
			default:
			}
			if s.hangAnswers {
				<-r.Context().Done()
				return
			}
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (s *scriptedServer) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.called
}

func (s *scriptedServer) answers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.posted...)
}

func writeEvents(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		fmt.Fprint(w, e)
	}
	w.(http.Flusher).Flush()
}

// awaitAnswer waits until the client posted an answer to s, as a server
// waits for the answer to its request before it goes on.
func (s *scriptedServer) awaitAnswer() {
	select {
	case <-s.answered:
	case <-time.After(10 * time.Second): // a hang guard
	}
}

// recordingRelay records what a call relays and answers requests.
type recordingRelay struct {
	mu       sync.Mutex
	progress []string
	logs     []string
	answer   func(method string) (json.RawMessage, error)
}

func (r *recordingRelay) Progress(_ context.Context, p float64, total *float64, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, fmt.Sprintf("%v/%v %s", p, *total, msg))
}

func (r *recordingRelay) Log(_ context.Context, params json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, string(params))
}

func (r *recordingRelay) Request(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	return r.answer(method)
}

// What a call's stream carries is the call's: progress under its token
// (another token's is not relayed), log messages, the server's requests
// answered through the relay (or refused with its error), and a stream
// the server ends early is resumed from the last event id.
func TestCallStream(t *testing.T) {
	result := `{"content":[{"type":"text","text":"ok","annotations":{"priority":1}}],"structuredContent":{"n":1}}`
	var cur *scriptedServer // the case's server (the cases run one at a time)
	cases := []struct {
		name        string
		onCall      func(w http.ResponseWriter, id json.RawMessage)
		onResume    func(w http.ResponseWriter, lastID string)
		answer      func(method string) (json.RawMessage, error)
		noRelay     bool
		wantErr     string
		wantProg    []string
		wantLogs    int
		wantAnswers []string // substrings of the answers posted back, in order
	}{
		{name: "progress and logs before the response", onCall: func(w http.ResponseWriter, id json.RawMessage) {
			writeEvents(w,
				`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcp-runtime-1","progress":1,"total":2,"message":"half"}}`+"\n\n",
				`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"someone-else","progress":9,"total":9}}`+"\n\n",
				`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`+"\n\n",
				fmt.Sprintf("data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, result))
		}, wantProg: []string{"1/2 half"}, wantLogs: 1},
		{name: "a server request answered through the relay", onCall: func(w http.ResponseWriter, id json.RawMessage) {
			writeEvents(w, `data: {"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"maxTokens":1,"messages":[]}}`+"\n\n")
			cur.awaitAnswer() // a server waits for the answer before it goes on
			writeEvents(w, fmt.Sprintf("data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, result))
		}, answer: func(string) (json.RawMessage, error) {
			return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"Paris"}}`), nil
		},
			wantAnswers: []string{`"id":7,"result":{"role":"assistant"`}},
		{name: "a client's refusal passed to the server", onCall: func(w http.ResponseWriter, id json.RawMessage) {
			writeEvents(w, `data: {"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{}}`+"\n\n")
			cur.awaitAnswer()
			writeEvents(w, fmt.Sprintf("data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, result))
		}, answer: func(string) (json.RawMessage, error) {
			return nil, protocol.Errorf(protocol.CodeMethodNotFound, "the client did not declare elicitation")
		}, wantAnswers: []string{`"id":"e1","error":{"code":-32601,"message":"the client did not declare elicitation"`}},
		{name: "without a relay, requests are refused", noRelay: true, onCall: func(w http.ResponseWriter, id json.RawMessage) {
			writeEvents(w, `data: {"jsonrpc":"2.0","id":3,"method":"roots/list"}`+"\n\n")
			cur.awaitAnswer()
			writeEvents(w, fmt.Sprintf("data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, result))
		}, wantAnswers: []string{`"id":3,"error":{"code":-32601`}},
		{name: "a stream ended early is resumed", onCall: func(w http.ResponseWriter, _ json.RawMessage) {
			writeEvents(w, "id: ev-1\nretry: 1\ndata: \n\n")
		}, onResume: func(w http.ResponseWriter, lastID string) {
			if lastID != "ev-1" {
				http.Error(w, "wrong id", http.StatusBadRequest)
				return
			}
			writeEvents(w, "id: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"mcp-runtime-1\",\"result\":"+result+"}\n\n")
		}},
		{name: "a stream ended without an id to resume from", onCall: func(w http.ResponseWriter, _ json.RawMessage) {
			writeEvents(w, "data: \n\n")
		}, wantErr: "the server ended the call's stream without answering"},
		{name: "a message that is not JSON-RPC", onCall: func(w http.ResponseWriter, _ json.RawMessage) {
			writeEvents(w, "data: <html>\n\n")
		}, wantErr: "protocol error: the server's answer is not valid MCP"},
		{name: "a JSON-RPC error answer", onCall: func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool"}}`, id)
		}, wantErr: "JSON-RPC error -32602: unknown tool"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := &scriptedServer{onCall: tc.onCall, onResume: tc.onResume}
			cur = srv
			url := srv.start(t)
			c := cfg("s", url)
			c.MaxRetries = intp(0)
			m := testManager(t, Options{Declared: []Config{c}})
			if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
				t.Fatal(err)
			}
			relay := &recordingRelay{answer: tc.answer}
			var r Relay = relay
			if tc.noRelay {
				r = nil
			}
			res, err := m.CallRelayed(ctx(t), "s", "t", json.RawMessage(`{}`), r)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to say %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.Content[0]); got != `{"type":"text","text":"ok","annotations":{"priority":1}}` || string(res.StructuredContent) != `{"n":1}` {
				t.Errorf("result %s %s: want the blocks as the server wrote them", got, res.StructuredContent)
			}
			relay.mu.Lock()
			defer relay.mu.Unlock()
			if fmt.Sprint(relay.progress) != fmt.Sprint(tc.wantProg) || len(relay.logs) != tc.wantLogs {
				t.Errorf("relayed progress %q, %d log messages; want %q, %d", relay.progress, len(relay.logs), tc.wantProg, tc.wantLogs)
			}
			answers := srv.answers()
			if len(answers) != len(tc.wantAnswers) {
				t.Fatalf("answers posted back %q, want %d", answers, len(tc.wantAnswers))
			}
			for i, want := range tc.wantAnswers {
				if !strings.Contains(answers[i], want) {
					t.Errorf("answer %d %s, want it to contain %s", i, answers[i], want)
				}
			}
		})
	}
}

// A call whose context ends after its request left tells the server,
// which gets notifications/cancelled naming the request.
func TestCallStreamCancelled(t *testing.T) {
	release := make(chan struct{})
	srv := &scriptedServer{onCall: func(w http.ResponseWriter, _ json.RawMessage) {
		writeEvents(w, ": started\n\n")
		<-release
	}}
	defer close(release)
	url := srv.start(t)
	m := testManager(t, Options{Declared: []Config{cfg("s", url)}})
	if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx(t))
	done := make(chan error, 1)
	go func() {
		_, err := m.CallRelayed(cctx, "s", "t", nil, &recordingRelay{})
		done <- err
	}()
	waitFor(t, "the call to reach the server", func() bool { return srv.calls() > 0 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) && !strings.Contains(fmt.Sprint(err), "cancel") {
		t.Errorf("err = %v", err)
	}
	answers := srv.answers()
	if len(answers) != 1 || !strings.Contains(answers[0], `"method":"notifications/cancelled"`) || !strings.Contains(answers[0], `"requestId":"mcp-runtime-1"`) {
		t.Errorf("posted %q, want one notifications/cancelled for mcp-runtime-1", answers)
	}
}

// A server of the 2026-07-28 era gets its calls in that era's form (the
// go-sdk builds them), and its result is passed on.
func TestCallStreamModernServer(t *testing.T) {
	srv := &scriptedServer{modern: true, onCall: func(w http.ResponseWriter, id json.RawMessage) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"modern"}],"resultType":"complete"}}`, id)
	}}
	url := srv.start(t)
	m := testManager(t, Options{Declared: []Config{cfg("s", url)}})
	if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
		t.Fatal(err)
	}
	if st := status(t, m, "s"); st.ProtocolVersion != "2026-07-28" {
		t.Fatalf("negotiated %q, want the modern era", st.ProtocolVersion)
	}
	res, err := m.CallRelayed(ctx(t), "s", "t", json.RawMessage(`{}`), &recordingRelay{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || !strings.Contains(string(res.Content[0]), `"modern"`) {
		t.Errorf("result %s", res.Content)
	}
}

// connectedModern starts srv (a server of the 2026-07-28 era) as upstream
// "s" of a new manager and connects to it.
func connectedModern(t *testing.T, srv *scriptedServer) (*Manager, *server) {
	t.Helper()
	m := testManager(t, Options{Declared: []Config{cfg("s", srv.start(t))}})
	if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m, m.servers["s"]
}

// A server of the 2026-07-28 era, which has no ping, is health-checked
// with server/discover: an answer keeps it connected, an error answer
// drops its connection.
func TestHealthCheckModernServer(t *testing.T) {
	srv := &scriptedServer{modern: true}
	m, s := connectedModern(t, srv)
	before := srv.discovers.Load()
	m.check(ctx(t), s)
	if st := status(t, m, "s"); st.State != StateConnected || srv.discovers.Load() != before+1 {
		t.Fatalf("after a health check: %s, %d server/discover (was %d)", st.State, srv.discovers.Load(), before)
	}
	srv.mu.Lock()
	for _, b := range srv.posted {
		if strings.Contains(b, `"method":"ping"`) {
			t.Errorf("a modern server was pinged: %s", b)
		}
	}
	srv.mu.Unlock()
	overloaded := func(w http.ResponseWriter, id json.RawMessage) {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"overloaded"}}`, id)
	}
	srv.onDiscover.Store(&overloaded)
	m.check(ctx(t), s)
	if st := status(t, m, "s"); st.State == StateConnected || !strings.Contains(st.LastError, "server/discover answered with error -32603") {
		t.Errorf("after a failed health check: %s, %q", st.State, st.LastError)
	}
}

// A modern server's tool-list hint is read whatever its ttlMs: one too
// long for a time.Duration is kept for as long as one can say, not
// wrapped around into a short or negative one (which the gateway would
// send as 0, stale at once), and a negative one is 0.
func TestToolListHintOfAnyTTL(t *testing.T) {
	for _, tc := range []struct {
		hint string
		want ListHint
	}{
		{`,"ttlMs":5000,"cacheScope":"private"`, ListHint{TTL: 5 * time.Second, Private: true}},
		{`,"ttlMs":-5,"cacheScope":"public"`, ListHint{}},
		{`,"ttlMs":5000,"cacheScope":"Private"`, ListHint{TTL: 5 * time.Second, Private: true}},
		{`,"ttlMs":5000`, ListHint{TTL: 5 * time.Second, Private: true}},
		{`,"ttlMs":9223372036854775807,"cacheScope":"public"`, ListHint{TTL: math.MaxInt64}},
		{`,"ttlMs":9223372036855,"cacheScope":"public"`, ListHint{TTL: math.MaxInt64}},
		{`,"ttlMs":9223372036854,"cacheScope":"public"`, ListHint{TTL: 9223372036854 * time.Millisecond}},
	} {
		t.Run(tc.hint, func(t *testing.T) {
			m, _ := connectedModern(t, &scriptedServer{modern: true, listHint: tc.hint})
			if got, ok := m.ToolListHint(); !ok || got != tc.want {
				t.Errorf("hint %+v %v, want %+v", got, ok, tc.want)
			}
		})
	}
}

// A health check is passed by an answer to server/discover only: a 2xx
// that is not one (a proxy's page, an empty 202, a null result) drops
// the connection, as a failed ping does in the legacy era.
func TestHealthCheckModernServerNeedsAnAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter, id json.RawMessage)
	}{
		{"a proxy's page", func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>upstream is under maintenance</html>")
		}},
		{"202 without a body", func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Del("Content-Type")
			w.WriteHeader(http.StatusAccepted)
		}},
		{"a null result", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":null}`, id)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &scriptedServer{modern: true}
			m, s := connectedModern(t, srv)
			srv.onDiscover.Store(&tc.answer)
			m.check(ctx(t), s)
			if st := status(t, m, "s"); st.State == StateConnected || st.LastError == "" {
				t.Errorf("after a health check answered with %s: %s, %q", tc.name, st.State, st.LastError)
			}
		})
	}
}

// A result goes on as the server sent it: the go-sdk's result type adds a
// cache hint the legacy server never sent, and it is taken out again.
func TestReadResourceAddsNoCacheHint(t *testing.T) {
	srv := &scriptedServer{}
	url := srv.start(t)
	m := testManager(t, Options{Declared: []Config{cfg("s", url)}})
	if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := m.ReadResource(ctx(t), "s", "file:///a")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"contents":[{"uri":"file:///a","text":"a"}]}`; string(got) != want {
		t.Fatalf("resources/read = %s, want %s", got, want)
	}
}

// Attacks of a hostile upstream on a call's stream, each bounded: a 404 to
// the resume of a call it accepted does not get the call sent again; a
// flood of requests whose answers it never takes does not hold the call
// past its deadline; an oversized answer fails that call only, not the
// session other calls share; a ping is answered and a request with a null
// id is not.
func TestCallStreamHostileUpstream(t *testing.T) {
	t.Run("a 404 to the resume does not send the call again", func(t *testing.T) {
		srv := &scriptedServer{onCall: func(w http.ResponseWriter, _ json.RawMessage) {
			writeEvents(w, "id: ev-1\nretry: 1\ndata: \n\n")
		}, onResume: func(w http.ResponseWriter, _ string) { w.WriteHeader(http.StatusNotFound) }}
		url := srv.start(t)
		c := cfg("s", url)
		c.MaxRetries = intp(2)
		m := testManager(t, Options{Declared: []Config{c}})
		if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.CallRelayed(ctx(t), "s", "t", nil, nil); err == nil {
			t.Fatal("no error")
		}
		if n := srv.calls(); n != 1 {
			t.Errorf("the server got the call %d times, want once", n)
		}
		if st := status(t, m, "s"); st.State != StateConnected {
			t.Errorf("state %s after one call's lost stream, want the session kept", st.State)
		}
	})
	t.Run("requests it never takes the answers to do not hold the call", func(t *testing.T) {
		stop := make(chan struct{})
		srv := &scriptedServer{hangAnswers: true, onCall: func(w http.ResponseWriter, _ json.RawMessage) {
			for i := range 40 {
				writeEvents(w, fmt.Sprintf("data: {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"roots/list\"}\n\n", i))
			}
			<-stop // never answers
		}}
		url := srv.start(t)
		t.Cleanup(func() { close(stop) }) // before the server's Close, which waits for handlers
		c := cfg("s", url)
		c.RequestTimeoutMs, c.MaxRetries = 300, intp(0)
		m := testManager(t, Options{Declared: []Config{c}})
		if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err := m.CallRelayed(ctx(t), "s", "t", nil, nil)
		var e *Error
		if !errors.As(err, &e) || !e.Timeout {
			t.Fatalf("err = %v, want the call's timeout", err)
		}
		if took := time.Since(start); took > 5*time.Second { // a hang guard: it was 12 s before
			t.Errorf("the call took %v past its 300 ms deadline", took)
		}
		n := 0
		for _, a := range srv.answers() {
			if !strings.Contains(a, `"method"`) { // not the cancellation
				n++
			}
		}
		if n > relayedRequests {
			t.Errorf("%d answers posted, want at most %d (the rest dropped)", n, relayedRequests)
		}
	})
	t.Run("an oversized answer fails the call, not the session", func(t *testing.T) {
		srv := &scriptedServer{onCall: func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}`, id, strings.Repeat("x", 64<<10))
		}}
		url := srv.start(t)
		m := testManager(t, Options{Declared: []Config{cfg("s", url)}, maxResponseBytes: 32 << 10})
		if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.CallRelayed(ctx(t), "s", "t", nil, nil); err == nil {
			t.Fatal("no error for a 64 KiB answer over a 32 KiB bound")
		}
		if st := status(t, m, "s"); st.State != StateConnected || st.ConsecutiveFailures != 0 {
			t.Errorf("state %s, %d failures: one call's answer took the session down", st.State, st.ConsecutiveFailures)
		}
	})
	t.Run("a ping is answered, a null id is no request", func(t *testing.T) {
		var pinged *scriptedServer
		srv := &scriptedServer{onCall: func(w http.ResponseWriter, id json.RawMessage) {
			writeEvents(w, `data: {"jsonrpc":"2.0","id":"p1","method":"ping"}`+"\n\n",
				`data: {"jsonrpc":"2.0","id":null,"method":"roots/list"}`+"\n\n")
			pinged.awaitAnswer()
			writeEvents(w, fmt.Sprintf("data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\n\n", id))
		}}
		pinged = srv
		url := srv.start(t)
		m := testManager(t, Options{Declared: []Config{cfg("s", url)}})
		if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.CallRelayed(ctx(t), "s", "t", nil, &recordingRelay{}); err != nil {
			t.Fatal(err)
		}
		answers := srv.answers()
		if len(answers) != 1 || !strings.Contains(answers[0], `"id":"p1","result":{}`) {
			t.Errorf("answers %q, want one: the ping's", answers)
		}
	})
}

// The event reader takes events however their bytes arrive: data lines
// joined, CR LF endings, a last event without its blank line, comments,
// and an event over the bound refused.
func TestEventReader(t *testing.T) {
	stream := ": comment\r\nid: 1\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nretry: 5\ndata: x\n\ndata: " + strings.Repeat("y", 100) + "\n\ndata: last"
	er := &eventReader{r: bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(stream)), 16), max: 1 << 10}
	cs := &callState{}
	var got []string
	for {
		d, err := er.next(cs)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(d))
	}
	want := []string{"{\"a\":\n1}", "x", strings.Repeat("y", 100), "last"}
	if fmt.Sprint(got) != fmt.Sprint(want) || cs.lastID != "1" || cs.retry != 5*time.Millisecond {
		t.Errorf("events %q, id %q, retry %v; want %q, 1, 5ms", got, cs.lastID, cs.retry, want)
	}
	big := &eventReader{r: bufio.NewReaderSize(strings.NewReader("data: "+strings.Repeat("z", 4096)+"\n\n"), 16), max: 1 << 10}
	if _, err := big.next(cs); !errors.Is(err, errResponseTooLarge) {
		t.Errorf("an event over the bound: %v", err)
	}
}
