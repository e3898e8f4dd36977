package transport

// Test harness for the Streamable HTTP transport: a handlers.Server with
// fixture tools, a Transport with small limits mounted on a chi router and
// served by httptest, and a small client (JSON-RPC over POST, SSE readers).
//
// The tests are white-box (package transport) only so that they can wait for
// server-side state that is otherwise invisible to a client — "the server has
// noticed that this SSE connection is gone" — instead of sleeping.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/r3labs/sse/v2"
	"github.com/rs/zerolog"
	"gopkg.in/cenkalti/backoff.v1"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

const (
	// waitLong bounds every wait for something that must happen.
	waitLong = 5 * time.Second
	// waitShort bounds a wait for something that must NOT happen.
	waitShort = 200 * time.Millisecond

	acceptBoth = "application/json, text/event-stream"
)

// ---------------------------------------------------------------------------
// Fixture tools

// blockState follows one call of the "block" tool, keyed by its "key"
// argument.
type blockState struct {
	started   chan struct{} // closed once the handler runs (after its first progress, if any)
	release   chan struct{} // closed by the test to let the handler finish
	cancelled chan struct{} // closed when the handler saw its ctx end
	finished  chan struct{} // closed when the handler returned

	startOnce, releaseOnce sync.Once
}

func (b *blockState) Release() { b.releaseOnce.Do(func() { close(b.release) }) }

func (b *blockState) waitStarted(t testing.TB) {
	t.Helper()
	waitChan(t, b.started, "block tool to start")
}

type fixtures struct {
	mu     sync.Mutex
	blocks map[string]*blockState
	// touch is what the "touch" tool calls; the harness points it at
	// Transport.ResourceUpdated.
	touch func(uri string) error
}

func (f *fixtures) block(key string) *blockState {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.blocks[key]
	if b == nil {
		b = &blockState{started: make(chan struct{}), release: make(chan struct{}), cancelled: make(chan struct{}), finished: make(chan struct{})}
		f.blocks[key] = b
	}
	return b
}

func objectSchema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if len(required) == 0 {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `}`)
}

func echoTool() handlers.Tool {
	type in struct {
		Text string `json:"text"`
	}
	return handlers.Tool{
		Name: "echo", Description: "Returns its text argument.",
		InputSchema: objectSchema(`"text":{"type":"string"}`, "text"),
		Handler: handlers.Typed(func(_ context.Context, _ *handlers.ToolCall, a in) (*protocol.CallToolResult, error) {
			return handlers.TextResult(a.Text), nil
		}),
	}
}

// long returns t registered LongRunning under the name t.Name+"_long": the
// transport runs such a tool on a goroutine of its own when the client
// accepts SSE (detached), every other tool on the request's goroutine.
func long(t handlers.Tool) handlers.Tool {
	t.Name += "_long"
	t.LongRunning = true
	return t
}

// tools returns the fixture tools. echo, progress, sample, block and panic
// also exist as LongRunning "<name>_long" variants so that the tests cover
// both ways the transport runs a tool.
func (f *fixtures) tools() []handlers.Tool {
	base := f.baseTools()
	out := append([]handlers.Tool(nil), base...)
	for _, t := range base {
		switch t.Name {
		case "echo", "progress", "sample", "block", "panic", "ctxvalue":
			out = append(out, long(t))
		}
	}
	return append(out, f.pollTool(true), f.pollTool(false), f.lateTool())
}

// requestValue is the context key of harnessConfig.spanValue.
type requestValue struct{}

// ctxValueTool returns the requestValue its handler's context carries.
func ctxValueTool() handlers.Tool {
	return handlers.Tool{
		Name: "ctxvalue", Description: "Returns the request value its context carries.",
		InputSchema: objectSchema(""),
		Handler: handlers.Typed(func(ctx context.Context, _ *handlers.ToolCall, _ struct{}) (*protocol.CallToolResult, error) {
			v, _ := ctx.Value(requestValue{}).(string)
			return handlers.TextResult(v), nil
		}),
	}
}

// lateTool answers at once (after one progress notification when asked for
// progress) and leaves a goroutine behind that sends a log message once the
// test releases it: a message that arrives after the response.
func (f *fixtures) lateTool() handlers.Tool {
	type in struct {
		Key string `json:"key"`
	}
	return handlers.Tool{
		Name: "late", Description: "Answers, then sends a log message when released.",
		InputSchema: objectSchema(`"key":{"type":"string"}`, "key"),
		Handler: handlers.Typed(func(ctx context.Context, call *handlers.ToolCall, a in) (*protocol.CallToolResult, error) {
			b := f.block(a.Key)
			if err := call.Progress(ctx, 1, 0, "started"); err != nil {
				return nil, err
			}
			b.startOnce.Do(func() { close(b.started) })
			go func() {
				defer close(b.finished)
				<-b.release
				_ = call.Peer.Notify(context.Background(), protocol.NotificationMessage,
					protocol.LoggingMessageParams{Level: protocol.LevelInfo, Logger: "late", Data: a.Key})
			}()
			return handlers.TextResult("answered " + a.Key), nil
		}),
	}
}

// pollTool ends its SSE stream early with CloseStream (SEP-1699 polling):
// it optionally sends a progress notification ("started"), closes its
// stream with a 25 ms retry hint, waits for the test to release it, sends
// a progress notification ("after") and answers. The LongRunning variant is
// "poll"; "poll_inline" is the same handler on a tool that is not
// LongRunning, for which CloseStream does nothing.
func (f *fixtures) pollTool(longRunning bool) handlers.Tool {
	type in struct {
		Key   string `json:"key"`
		Early bool   `json:"early"` // CloseStream before any message
	}
	name := "poll"
	if !longRunning {
		name = "poll_inline"
	}
	return handlers.Tool{
		Name: name, Description: "Closes its SSE stream for polling, then finishes when released.", LongRunning: longRunning,
		InputSchema: objectSchema(`"key":{"type":"string"},"early":{"type":"boolean"}`, "key"),
		Handler: handlers.Typed(func(ctx context.Context, call *handlers.ToolCall, a in) (*protocol.CallToolResult, error) {
			b := f.block(a.Key)
			defer close(b.finished)
			if !a.Early {
				if err := call.Progress(ctx, 1, 0, "started"); err != nil {
					return nil, err
				}
			}
			call.Peer.CloseStream(25)
			b.startOnce.Do(func() { close(b.started) })
			select {
			case <-ctx.Done():
				close(b.cancelled)
				return nil, ctx.Err()
			case <-b.release:
			}
			if err := call.Progress(ctx, 2, 0, "after"); err != nil {
				return nil, err
			}
			return handlers.TextResult("polled " + a.Key), nil
		}),
	}
}

func (f *fixtures) baseTools() []handlers.Tool {
	type progressIn struct {
		N int `json:"n"`
	}
	type sampleIn struct {
		Prompt string `json:"prompt"`
	}
	type blockIn struct {
		Key string `json:"key"`
	}
	type touchIn struct {
		URI string `json:"uri"`
	}
	return []handlers.Tool{
		echoTool(),
		ctxValueTool(),
		{
			Name: "big", Description: "Answers with n bytes of text.",
			InputSchema: objectSchema(`"n":{"type":"integer","minimum":0,"maximum":67108864}`, "n"),
			Handler: handlers.Typed(func(_ context.Context, _ *handlers.ToolCall, a progressIn) (*protocol.CallToolResult, error) {
				return handlers.TextResult(strings.Repeat("x", a.N)), nil
			}),
		},
		{
			Name: "progress", Description: "Sends n progress notifications when asked for progress, then answers.",
			InputSchema: objectSchema(`"n":{"type":"integer","minimum":0,"maximum":1000}`, "n"),
			Handler: handlers.Typed(func(ctx context.Context, call *handlers.ToolCall, a progressIn) (*protocol.CallToolResult, error) {
				for i := 1; i <= a.N; i++ {
					if err := call.Progress(ctx, float64(i), float64(a.N), fmt.Sprintf("step %d", i)); err != nil {
						return nil, err
					}
				}
				return handlers.TextResult(fmt.Sprintf("done %d", a.N)), nil
			}),
		},
		{
			Name: "sample", Description: "Asks the client to sample a completion for prompt.",
			InputSchema: objectSchema(`"prompt":{"type":"string"}`, "prompt"),
			Handler: handlers.Typed(func(ctx context.Context, call *handlers.ToolCall, a sampleIn) (*protocol.CallToolResult, error) {
				raw, err := call.Peer.Request(ctx, protocol.MethodSamplingCreateMessage, map[string]any{
					"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": a.Prompt}}},
					"maxTokens": 16,
				})
				if err != nil {
					return nil, err
				}
				return handlers.TextResult("sampled: " + string(raw)), nil
			}),
		},
		{
			Name: "block", Description: "Blocks until released by the test or until its context ends.",
			InputSchema: objectSchema(`"key":{"type":"string"}`, "key"),
			Handler: handlers.Typed(func(ctx context.Context, call *handlers.ToolCall, a blockIn) (*protocol.CallToolResult, error) {
				b := f.block(a.Key)
				defer close(b.finished)
				// Sent only when the caller gave a progressToken; it turns
				// the response into an SSE stream.
				if err := call.Progress(ctx, 1, 0, "started"); err != nil {
					return nil, err
				}
				b.startOnce.Do(func() { close(b.started) })
				select {
				case <-ctx.Done():
					close(b.cancelled)
					return nil, ctx.Err()
				case <-b.release:
				}
				if err := call.Progress(ctx, 2, 0, "released"); err != nil {
					return nil, err
				}
				return handlers.TextResult("released " + a.Key), nil
			}),
		},
		{
			Name: "panic", Description: "Panics, after one progress notification when asked for progress.",
			Handler: func(ctx context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
				_ = call.Progress(ctx, 1, 0, "about to panic")
				panic("fixture panic")
			},
		},
		{
			Name: "touch", Description: "Marks a resource as updated.",
			InputSchema: objectSchema(`"uri":{"type":"string"}`, "uri"),
			Handler: handlers.Typed(func(_ context.Context, _ *handlers.ToolCall, a touchIn) (*protocol.CallToolResult, error) {
				if err := f.touch(a.URI); err != nil {
					return nil, err
				}
				return handlers.TextResult("touched " + a.URI), nil
			}),
		},
	}
}

// ---------------------------------------------------------------------------
// Harness

type harnessConfig struct {
	opts     Options
	echoOnly bool // only the echo tool (fuzzing, benchmarks)
	noServer bool // router only, no httptest server
	// spanValue, when set, is put on every request's context under
	// requestValue, as a tracing middleware puts its span.
	spanValue string
}

func defaultOptions() Options {
	return Options{
		MaxBodyBytes:       64 << 10,
		SessionIdleTimeout: time.Minute,
		KeepAliveInterval:  50 * time.Millisecond,
		EventLogSize:       16,
		MaxSessions:        2000,
		// Every request is logged (to nowhere) so that the logging code
		// runs under -race in every test.
		Logger: zerolog.New(io.Discard).Level(zerolog.DebugLevel),
	}
}

type harness struct {
	tb     testing.TB
	srv    *handlers.Server
	tr     *Transport
	router http.Handler
	ts     *httptest.Server
	url    string
	client *http.Client
	fx     *fixtures
}

func newHarness(tb testing.TB, mods ...func(*harnessConfig)) *harness {
	tb.Helper()
	cfg := harnessConfig{opts: defaultOptions()}
	for _, m := range mods {
		m(&cfg)
	}
	reg, err := handlers.NewToolRegistry("_")
	if err != nil {
		tb.Fatal(err)
	}
	fx := &fixtures{blocks: map[string]*blockState{}}
	tools := fx.tools()
	if cfg.echoOnly {
		tools = []handlers.Tool{echoTool()}
	}
	if err := reg.Add(tools...); err != nil {
		tb.Fatal(err)
	}
	srv := handlers.NewServer(handlers.Options{Name: "transport-test", Version: "test"}, reg)
	tr, err := New(srv, cfg.opts)
	if err != nil {
		tb.Fatal(err)
	}
	fx.touch = func(uri string) error { _, err := tr.ResourceUpdated("", uri); return err }
	r := chi.NewRouter()
	if v := cfg.spanValue; v != "" {
		r.Use(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				next.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), requestValue{}, v)))
			})
		})
	}
	tr.Mount(r, "/mcp")
	h := &harness{tb: tb, srv: srv, tr: tr, router: r, fx: fx}
	if !cfg.noServer {
		h.ts = httptest.NewServer(r)
		h.url = h.ts.URL + "/mcp"
		h.client = h.ts.Client()
	}
	tb.Cleanup(h.close)
	return h
}

// close ends the transport first (which ends every open stream, so the
// httptest server's Close does not wait for them), then the server. It is
// idempotent.
func (h *harness) close() {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := h.tr.Close(ctx); err != nil {
		h.tb.Errorf("Transport.Close: %v", err)
	}
	if h.ts != nil {
		h.ts.Close()
		h.client.CloseIdleConnections()
	}
}

func withOpts(f func(*Options)) func(*harnessConfig) {
	return func(c *harnessConfig) { f(&c.opts) }
}

// ---------------------------------------------------------------------------
// JSON-RPC bodies

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// rpc builds a request (id != nil) or notification (id == nil).
func rpc(id any, method string, params any) []byte {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	return mustJSON(m)
}

// toolCall builds a tools/call request; token, when not nil, is sent as
// _meta.progressToken.
func toolCall(id any, name string, args any, token any) []byte {
	p := map[string]any{"name": name}
	if args != nil {
		p["arguments"] = args
	}
	if token != nil {
		p["_meta"] = map[string]any{"progressToken": token}
	}
	return rpc(id, "tools/call", p)
}

func initBody(version string, caps any) []byte {
	if caps == nil {
		caps = map[string]any{}
	}
	return rpc(0, "initialize", map[string]any{
		"protocolVersion": version,
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "transport-test", "version": "1"},
	})
}

// ---------------------------------------------------------------------------
// HTTP client

type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r *reply) String() string {
	return fmt.Sprintf("HTTP %d %s %q", r.Status, r.Header.Get("Content-Type"), truncate(r.Body, 300))
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// newRequest builds a request to the MCP endpoint. hdrs are name/value
// pairs applied after the defaults; an empty value removes the header.
func (h *harness) newRequest(t testing.TB, ctx context.Context, method, sid string, body io.Reader, hdrs ...string) *http.Request {
	t.Helper()
	var req *http.Request
	if h.url == "" { // router-only harness
		req = httptest.NewRequestWithContext(ctx, method, "/mcp", body)
	} else {
		var err error
		if req, err = http.NewRequestWithContext(ctx, method, h.url, body); err != nil {
			t.Fatal(err)
		}
	}
	switch method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", acceptBoth)
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if len(hdrs)%2 != 0 {
		t.Fatalf("headers must be name/value pairs: %q", hdrs)
	}
	for i := 0; i < len(hdrs); i += 2 {
		if strings.EqualFold(hdrs[i], "Host") {
			req.Host = hdrs[i+1]
			continue
		}
		if hdrs[i+1] == "" {
			req.Header.Del(hdrs[i])
		} else {
			req.Header.Set(hdrs[i], hdrs[i+1])
		}
	}
	return req
}

// do sends req and reads the whole response.
func (h *harness) do(t testing.TB, req *http.Request) *reply {
	t.Helper()
	if h.ts == nil {
		rec := httptest.NewRecorder()
		h.router.ServeHTTP(rec, req)
		res := rec.Result()
		body, _ := io.ReadAll(res.Body)
		return &reply{Status: res.StatusCode, Header: res.Header, Body: body}
	}
	res, err := h.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return &reply{Status: res.StatusCode, Header: res.Header, Body: body}
}

func (h *harness) send(t testing.TB, method, sid string, body []byte, hdrs ...string) *reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	return h.do(t, h.newRequest(t, ctx, method, sid, r, hdrs...))
}

func (h *harness) post(t testing.TB, sid string, body []byte, hdrs ...string) *reply {
	t.Helper()
	return h.send(t, http.MethodPost, sid, body, hdrs...)
}

// postAsync sends a POST in the background (for requests that block).
func (h *harness) postAsync(t testing.TB, ctx context.Context, sid string, body []byte, hdrs ...string) <-chan *reply {
	t.Helper()
	req := h.newRequest(t, ctx, http.MethodPost, sid, bytes.NewReader(body), hdrs...)
	out := make(chan *reply, 1)
	go func() {
		res, err := h.client.Do(req)
		if err != nil {
			out <- &reply{Status: -1, Body: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		out <- &reply{Status: res.StatusCode, Header: res.Header, Body: b}
	}()
	return out
}

func waitReply(t testing.TB, ch <-chan *reply) *reply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitLong):
		t.Fatal("timed out waiting for an HTTP response")
		return nil
	}
}

// initialize opens a 2025-11-25 client session without capabilities.
func (h *harness) initialize(t testing.TB) string {
	t.Helper()
	sid, _ := h.initializeWith(t, protocol.LatestVersion, nil)
	return sid
}

// initializeWith opens a client session and returns its id and the
// negotiated version.
func (h *harness) initializeWith(t testing.TB, version string, caps any) (string, string) {
	t.Helper()
	r := h.post(t, "", initBody(version, caps))
	if r.Status != http.StatusOK {
		t.Fatalf("initialize: %s", r)
	}
	var res protocol.InitializeResult
	if err := json.Unmarshal(resultOf(t, r, "0"), &res); err != nil {
		t.Fatalf("initialize result: %v", err)
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: no Mcp-Session-Id: %s", r)
	}
	if rr := h.post(t, sid, rpc(nil, "notifications/initialized", nil)); rr.Status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %s", rr)
	}
	return sid, res.ProtocolVersion
}

// toolsListOK asserts that the session still answers tools/list.
func (h *harness) toolsListOK(t testing.TB, sid string) {
	t.Helper()
	r := h.post(t, sid, rpc("after", "tools/list", nil))
	if r.Status != http.StatusOK {
		t.Fatalf("tools/list after the case: %s", r)
	}
	var res protocol.ListToolsResult
	if err := json.Unmarshal(resultOf(t, r, `"after"`), &res); err != nil || len(res.Tools) == 0 {
		t.Fatalf("tools/list after the case: %v %s", err, r)
	}
}

// shared returns the shared session store of a replica made with Redis.
func (h *harness) shared() *redisSessions { return h.tr.sessions.(*redisSessions) }

// waitSweeps waits until the session store's sweeper has run n whole
// rounds that began after the call: whatever they evict, refresh or
// write back is done. (A round under way when it is called does not
// count.)
func (h *harness) waitSweeps(t testing.TB, n int) {
	t.Helper()
	var rounds *atomic.Int64
	switch s := h.tr.sessions.(type) {
	case *memorySessions:
		rounds = &s.sweeps
	case *redisSessions:
		rounds = &s.sweeps
	default:
		t.Fatalf("no sweeper to wait for in %T", s)
	}
	target := rounds.Load() + int64(n) + 1
	testutil.Eventually(t, waitLong, fmt.Sprintf("%d sweeps", n), func() bool { return rounds.Load() >= target })
}

// waitBeats waits until the replica has sent n heartbeats that began
// after the call.
func (h *harness) waitBeats(t testing.TB, n int) {
	t.Helper()
	beats := &h.shared().beats
	target := beats.Load() + int64(n) + 1
	testutil.Eventually(t, waitLong, fmt.Sprintf("%d heartbeats", n), func() bool { return beats.Load() >= target })
}

func (h *harness) session(t testing.TB, sid string) *ClientSession {
	t.Helper()
	s, err := h.tr.Sessions().Get(context.Background(), sid)
	if err != nil {
		t.Fatalf("session %s: %v", sid, err)
	}
	return s
}

// subscribe subscribes the session to uris.
func (h *harness) subscribe(t testing.TB, sid string, uris ...string) {
	t.Helper()
	for _, u := range uris {
		r := h.post(t, sid, rpc("sub", "resources/subscribe", map[string]any{"uri": u}))
		if r.Status != http.StatusOK {
			t.Fatalf("subscribe %s: %s", u, r)
		}
		resultOf(t, r, `"sub"`)
	}
}

// ---------------------------------------------------------------------------
// JSON-RPC checks

// compactJSON returns the compact form of raw, or raw itself if invalid.
func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// decodeOne decodes exactly one JSON value of body into v (numbers as
// json.Number), failing on trailing data.
func decodeOne(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// checkRPCError checks that body is exactly one JSON-RPC error object with
// the given id (raw JSON; "null" when unreadable) and code, and returns its
// message.
func checkRPCError(body []byte, wantID string, wantCode int) (string, error) {
	var env map[string]json.RawMessage
	if err := decodeOne(body, &env); err != nil {
		return "", fmt.Errorf("body is not one JSON object: %v: %q", err, truncate(body, 200))
	}
	if len(env) != 3 || env["jsonrpc"] == nil || env["id"] == nil || env["error"] == nil {
		return "", fmt.Errorf("error response must have exactly jsonrpc, id, error: %q", truncate(body, 200))
	}
	if string(env["jsonrpc"]) != `"2.0"` {
		return "", fmt.Errorf(`jsonrpc = %s, want "2.0"`, env["jsonrpc"])
	}
	if got := compactJSON(env["id"]); got != compactJSON([]byte(wantID)) {
		return "", fmt.Errorf("id = %s, want %s", got, wantID)
	}
	var e map[string]json.RawMessage
	if err := decodeOne(env["error"], &e); err != nil {
		return "", fmt.Errorf("error member is not an object: %v", err)
	}
	for k := range e {
		if k != "code" && k != "message" && k != "data" {
			return "", fmt.Errorf("error member has unexpected key %q", k)
		}
	}
	var code int
	if err := json.Unmarshal(e["code"], &code); err != nil {
		return "", fmt.Errorf("error.code %s is not an integer", e["code"])
	}
	var msg string
	if err := json.Unmarshal(e["message"], &msg); err != nil || msg == "" {
		return "", fmt.Errorf("error.message %s is not a non-empty string", e["message"])
	}
	if code != wantCode {
		return msg, fmt.Errorf("error.code = %d (%s), want %d", code, msg, wantCode)
	}
	return msg, nil
}

// messageBody returns the JSON-RPC message a POST reply carries: the body
// of a JSON reply, or the data of the last event of an SSE reply
// (LongRunning tools always answer with a stream).
func messageBody(t testing.TB, r *reply) []byte {
	t.Helper()
	switch ct := r.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "application/json"):
		return r.Body
	case strings.HasPrefix(ct, "text/event-stream"):
		evs := parseSSE(r.Body)
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Data != "" {
				return []byte(evs[i].Data)
			}
		}
		t.Fatalf("SSE reply carries no message: %s", r)
	default:
		t.Fatalf("Content-Type = %q, want application/json or text/event-stream (%s)", ct, r)
	}
	return nil
}

func wantRPCError(t testing.TB, r *reply, wantStatus int, wantID string, wantCode int) string {
	t.Helper()
	if r.Status != wantStatus {
		t.Errorf("status = %d, want %d (%s)", r.Status, wantStatus, r)
	}
	msg, err := checkRPCError(messageBody(t, r), wantID, wantCode)
	if err != nil {
		t.Errorf("%v (%s)", err, r)
	}
	return msg
}

// resultOf checks a result response with id wantID and returns its
// result.
func resultOf(t testing.TB, r *reply, wantID string) json.RawMessage {
	t.Helper()
	return resultFromMessage(t, messageBody(t, r), wantID)
}

func resultFromMessage(t testing.TB, body []byte, wantID string) json.RawMessage {
	t.Helper()
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := decodeOne(body, &env); err != nil {
		t.Fatalf("response is not one JSON object: %v: %q", err, truncate(body, 300))
	}
	if env.JSONRPC != "2.0" || compactJSON(env.ID) != compactJSON([]byte(wantID)) || env.Result == nil || env.Error != nil {
		t.Fatalf("want a result response with id %s, got %q", wantID, truncate(body, 300))
	}
	return env.Result
}

// toolText returns the text of the first content block and isError.
func toolText(t testing.TB, result json.RawMessage) (string, bool) {
	t.Helper()
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("tool result %s: %v", result, err)
	}
	return res.Content[0].Text, res.IsError
}

// message is any JSON-RPC message as seen on an SSE stream.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

func parseMessage(t testing.TB, data string) message {
	t.Helper()
	var m message
	if err := decodeOne([]byte(data), &m); err != nil || m.JSONRPC != "2.0" {
		t.Fatalf("SSE data is not one JSON-RPC message: %v: %q", err, data)
	}
	return m
}

// ---------------------------------------------------------------------------
// SSE
//
// POST responses cannot go through the r3labs client (it only issues GETs),
// and the r3labs client drops comments (keep-alives) and cannot tell "the
// server ended the stream" from "the read failed" in a way a test can
// assert on, so this small reader exists beside it. It follows the SSE
// field rules (WHATWG HTML §9.2.6) for the fields the server writes: id,
// data (joined with \n), retry, and comment lines.

type sseEvent struct {
	ID      string
	HasID   bool
	Data    string
	HasData bool
	Retry   string
	Comment string // a comment line, delivered as its own frame
}

func (e sseEvent) isComment() bool { return e.Comment != "" && !e.HasID && !e.HasData && e.Retry == "" }

// priming reports whether e is a priming event: an id with empty data.
func (e sseEvent) priming() bool { return e.HasID && e.Data == "" }

// sseParser turns lines into frames.
type sseParser struct {
	cur sseEvent
	any bool
}

// line consumes one line (without its newline) and returns a frame when
// one is complete.
func (p *sseParser) line(l string) (sseEvent, bool) {
	l = strings.TrimSuffix(l, "\r")
	if l == "" {
		if !p.any {
			return sseEvent{}, false
		}
		ev := p.cur
		p.cur, p.any = sseEvent{}, false
		return ev, true
	}
	if strings.HasPrefix(l, ":") {
		return sseEvent{Comment: strings.TrimPrefix(strings.TrimPrefix(l, ":"), " ")}, true
	}
	field, value, _ := strings.Cut(l, ":")
	value = strings.TrimPrefix(value, " ")
	switch field {
	case "id":
		p.cur.ID, p.cur.HasID = value, true
	case "data":
		if p.cur.HasData {
			p.cur.Data += "\n"
		}
		p.cur.Data += value
		p.cur.HasData = true
	case "retry":
		p.cur.Retry = value
	default:
		return sseEvent{}, false
	}
	p.any = true
	return sseEvent{}, false
}

// parseSSE parses a complete stream body.
func parseSSE(body []byte) []sseEvent {
	var p sseParser
	var out []sseEvent
	for _, l := range strings.Split(string(body), "\n") {
		if ev, ok := p.line(l); ok {
			out = append(out, ev)
		}
	}
	if ev, ok := p.line(""); ok { // unterminated last event
		out = append(out, ev)
	}
	return out
}

// sseConn is a live SSE response read in the background.
type sseConn struct {
	Resp   *http.Response
	cancel context.CancelFunc
	frames chan sseEvent
	done   chan struct{} // closed when the reader stops (end of stream or error)
	quit   chan struct{}
	once   sync.Once
	err    error // read error other than EOF, valid after done
}

func newSSEConn(res *http.Response, cancel context.CancelFunc) *sseConn {
	c := &sseConn{Resp: res, cancel: cancel, frames: make(chan sseEvent, 256), done: make(chan struct{}), quit: make(chan struct{})}
	go c.read()
	return c
}

func (c *sseConn) read() {
	defer close(c.done)
	br := bufio.NewReader(c.Resp.Body)
	var p sseParser
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.err = err
			}
			return
		}
		if ev, ok := p.line(strings.TrimSuffix(l, "\n")); ok {
			select {
			case c.frames <- ev:
			case <-c.quit:
				return
			}
		}
	}
}

// close disconnects (cancels the request) and waits for the reader.
func (c *sseConn) close() {
	c.once.Do(func() {
		c.cancel()
		close(c.quit)
		c.Resp.Body.Close()
	})
	<-c.done
}

// nextFrame returns the next frame including comments; ok is false when the
// stream ended first.
func (c *sseConn) nextFrame(t testing.TB, d time.Duration) (sseEvent, bool) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case ev := <-c.frames:
		return ev, true
	default:
	}
	select {
	case ev := <-c.frames:
		return ev, true
	case <-c.done:
		// Frames read before the end are still buffered.
		select {
		case ev := <-c.frames:
			return ev, true
		default:
			return sseEvent{}, false
		}
	case <-timer.C:
		t.Fatal("timed out waiting for an SSE frame")
		return sseEvent{}, false
	}
}

// next returns the next event, skipping comments; keep-alives do not
// extend the wait.
func (c *sseConn) next(t testing.TB) sseEvent {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		ev, ok := c.nextFrame(t, max(time.Until(deadline), time.Millisecond))
		if !ok {
			t.Fatalf("SSE stream ended while an event was expected (read error: %v)", c.err)
		}
		if !ev.isComment() {
			return ev
		}
	}
}

// nextMessage returns the next event carrying data, skipping comments and
// priming events.
func (c *sseConn) nextMessage(t testing.TB) (sseEvent, message) {
	t.Helper()
	for {
		ev := c.next(t) // at most one priming event precedes a message
		if ev.HasData && ev.Data != "" {
			return ev, parseMessage(t, ev.Data)
		}
		if !ev.priming() {
			t.Fatalf("unexpected SSE event %+v", ev)
		}
	}
}

// waitEnd asserts that the stream ends (after only comments) within waitLong.
func (c *sseConn) waitEnd(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		ev, ok := c.nextFrame(t, max(time.Until(deadline), time.Millisecond))
		if !ok {
			return
		}
		if !ev.isComment() {
			t.Fatalf("want the end of the stream, got event %+v", ev)
		}
	}
}

// rest returns every frame up to the end of the stream, which must come
// within waitLong.
func (c *sseConn) rest(t testing.TB) []sseEvent {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	var out []sseEvent
	for {
		ev, ok := c.nextFrame(t, max(time.Until(deadline), time.Millisecond))
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

func (h *harness) openSSE(t testing.TB, method, sid string, body []byte, hdrs ...string) *sseConn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req := h.newRequest(t, ctx, method, sid, r, hdrs...)
	res, err := h.client.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("%s: %v", method, err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		t.Fatalf("%s: want 200 text/event-stream, got %d %q %q", method, res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	c := newSSEConn(res, cancel)
	t.Cleanup(c.close)
	return c
}

// openGET opens the standalone stream (or resumes, with a Last-Event-ID
// header in hdrs).
func (h *harness) openGET(t testing.TB, sid string, hdrs ...string) *sseConn {
	t.Helper()
	return h.openSSE(t, http.MethodGet, sid, nil, hdrs...)
}

// postSSE POSTs body and expects an SSE response.
func (h *harness) postSSE(t testing.TB, sid string, body []byte, hdrs ...string) *sseConn {
	t.Helper()
	return h.openSSE(t, http.MethodPost, sid, body, hdrs...)
}

// rClient returns an r3labs SSE client for the session's GET stream, using
// the harness's HTTP client and never retrying on its own.
func (h *harness) rClient(sid string) *sse.Client {
	c := sse.NewClient(h.url)
	c.Connection = h.client
	c.Headers["Mcp-Session-Id"] = sid
	c.Headers["Accept"] = "text/event-stream"
	c.ReconnectStrategy = &backoff.StopBackOff{}
	return c
}

// rSub is one r3labs subscription running in the background.
type rSub struct {
	events chan sseEvent
	cancel context.CancelFunc
	done   chan error
}

func subscribeR(t testing.TB, c *sse.Client) *rSub {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &rSub{events: make(chan sseEvent, 256), cancel: cancel, done: make(chan error, 1)}
	go func() {
		s.done <- c.SubscribeRawWithContext(ctx, func(e *sse.Event) {
			ev := sseEvent{ID: string(e.ID), HasID: len(e.ID) > 0, Data: string(e.Data), HasData: len(e.Data) > 0, Retry: string(e.Retry)}
			select {
			case s.events <- ev:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop disconnects and waits for the subscription to return.
func (s *rSub) stop(t testing.TB) {
	t.Helper()
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err // keep it for a second stop
	case <-time.After(waitLong):
		t.Errorf("r3labs subscription did not return after cancel")
	}
}

// next returns the next event, or fails.
func (s *rSub) next(t testing.TB) sseEvent {
	t.Helper()
	select {
	case ev := <-s.events:
		return ev
	case err := <-s.done:
		s.done <- err
		t.Fatalf("r3labs subscription ended: %v", err)
	case <-time.After(waitLong):
		t.Fatal("timed out waiting for an r3labs event")
	}
	return sseEvent{}
}

// nextMessage skips priming events.
func (s *rSub) nextMessage(t testing.TB) (sseEvent, message) {
	t.Helper()
	for {
		ev := s.next(t)
		if ev.Data != "" {
			return ev, parseMessage(t, ev.Data)
		}
	}
}

// ---------------------------------------------------------------------------
// Waiting

func waitChan(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLong):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// notWithin asserts that ch stays open for d.
func notWithin(t testing.TB, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s happened, but must not", what)
	case <-time.After(d):
	}
}

// waitDetached waits until no connection serves the stream: the server has
// noticed that the client went away.
func waitDetached(t testing.TB, st *stream) {
	t.Helper()
	testutil.Eventually(t, waitLong, "stream "+st.id+" to be detached", func() bool { return !st.attached() })
}

// resourceUpdatedURI returns params.uri of a notifications/resources/updated.
func resourceUpdatedURI(t testing.TB, m message) string {
	t.Helper()
	if m.Method != "notifications/resources/updated" {
		t.Fatalf("want notifications/resources/updated, got %+v", m)
	}
	var p struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatal(err)
	}
	return p.URI
}

func waitAfter() <-chan time.Time { return time.After(waitLong) }

// lockedBuffer is an io.Writer safe for concurrent use (log output).
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
