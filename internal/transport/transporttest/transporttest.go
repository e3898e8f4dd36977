// Package transporttest is the test harness of the Streamable HTTP
// transport and of what shares its client sessions: a handlers.Server
// with fixture tools, the transport under test mounted on a chi router and
// served by httptest, and a small client (JSON-RPC over POST, SSE
// readers).
//
// It does not import the transport, whose white-box tests would then make
// an import cycle: each test package builds its transport (New's build),
// so that the transport's own tests use the harness as well as the
// packages above it.
package transporttest

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
	"strconv"
	"strings"
	"sync"
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
	// WaitLong bounds every wait for something that must happen.
	WaitLong = 5 * time.Second
	// WaitShort bounds a wait for something that must NOT happen.
	WaitShort = 200 * time.Millisecond

	// AcceptBoth is the Accept header of a client that takes either answer.
	AcceptBoth = "application/json, text/event-stream"
)

// ---------------------------------------------------------------------------
// Fixture tools

// BlockState follows one call of the "block" tool, keyed by its "key"
// argument.
type BlockState struct {
	Started   chan struct{} // closed once the handler runs (after its first progress, if any)
	release   chan struct{} // closed by the test to let the handler finish
	Cancelled chan struct{} // closed when the handler saw its ctx end
	Finished  chan struct{} // closed when the handler returned

	startOnce, releaseOnce sync.Once
}

// Release lets the handler finish; more than once is fine.
func (b *BlockState) Release() { b.releaseOnce.Do(func() { close(b.release) }) }

// WaitStarted waits until the handler runs.
func (b *BlockState) WaitStarted(t testing.TB) {
	t.Helper()
	WaitChan(t, b.Started, "block tool to start")
}

// Fixtures are the harness's tools and what the tests follow of them.
type Fixtures struct {
	mu     sync.Mutex
	blocks map[string]*BlockState
	// touch is what the "touch" tool calls; the harness points it at
	// Transport.ResourceUpdated.
	touch func(uri string) error
}

// Block returns the state of the block tool's call with this key.
func (f *Fixtures) Block(key string) *BlockState {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.blocks[key]
	if b == nil {
		b = &BlockState{Started: make(chan struct{}), release: make(chan struct{}), Cancelled: make(chan struct{}), Finished: make(chan struct{})}
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
func (f *Fixtures) tools() []handlers.Tool {
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

// requestValue is the context key of Config.SpanValue.
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
func (f *Fixtures) lateTool() handlers.Tool {
	type in struct {
		Key string `json:"key"`
	}
	return handlers.Tool{
		Name: "late", Description: "Answers, then sends a log message when released.",
		InputSchema: objectSchema(`"key":{"type":"string"}`, "key"),
		Handler: handlers.Typed(func(ctx context.Context, call *handlers.ToolCall, a in) (*protocol.CallToolResult, error) {
			b := f.Block(a.Key)
			if err := call.Progress(ctx, 1, 0, "started"); err != nil {
				return nil, err
			}
			b.startOnce.Do(func() { close(b.Started) })
			go func() {
				defer close(b.Finished)
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
func (f *Fixtures) pollTool(longRunning bool) handlers.Tool {
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
			b := f.Block(a.Key)
			defer close(b.Finished)
			if !a.Early {
				if err := call.Progress(ctx, 1, 0, "started"); err != nil {
					return nil, err
				}
			}
			call.Peer.CloseStream(25)
			b.startOnce.Do(func() { close(b.Started) })
			select {
			case <-ctx.Done():
				close(b.Cancelled)
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

func (f *Fixtures) baseTools() []handlers.Tool {
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
				b := f.Block(a.Key)
				defer close(b.Finished)
				// Sent only when the caller gave a progressToken; it turns
				// the response into an SSE stream.
				if err := call.Progress(ctx, 1, 0, "started"); err != nil {
					return nil, err
				}
				b.startOnce.Do(func() { close(b.Started) })
				select {
				case <-ctx.Done():
					close(b.Cancelled)
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

type (
	// Transport is what the harness needs of the transport under test.
	Transport interface {
		Mount(r chi.Router, path string)
		Close(ctx context.Context) error
		ResourceUpdated(tenantID, uri string) (int, error)
	}

	// Config shapes a harness.
	Config struct {
		EchoOnly bool // only the echo tool (fuzzing, benchmarks)
		NoServer bool // router only, no httptest server
		// SpanValue, when set, is put on every request's context under
		// requestValue, as a tracing middleware puts its span.
		SpanValue string
		// Tools are registered besides the fixtures.
		Tools []handlers.Tool
	}
)

// The settings of a test transport: small, so that the tests reach the
// bounds.
const (
	MaxBodyBytes       = 64 << 10
	SessionIdleTimeout = time.Minute
	KeepAliveInterval  = 50 * time.Millisecond
	EventLogSize       = 16
	MaxSessions        = 2000
)

// Logger logs every request, to nowhere, so that the logging code runs
// under -race in every test.
func Logger() zerolog.Logger { return zerolog.New(io.Discard).Level(zerolog.DebugLevel) }

// Harness is one transport under test and a client of it.
type Harness struct {
	tb        testing.TB
	Server    *handlers.Server
	Transport Transport
	Router    http.Handler
	TS        *httptest.Server
	URL       string
	Client    *http.Client
	Fx        *Fixtures
}

// New builds the fixture tools' server, has build make the
// transport for it, and serves it; the harness closes with tb.
func New(tb testing.TB, cfg Config, build func(*handlers.Server) (Transport, error)) *Harness {
	tb.Helper()
	reg, err := handlers.NewToolRegistry("_")
	if err != nil {
		tb.Fatal(err)
	}
	fx := &Fixtures{blocks: map[string]*BlockState{}}
	tools := fx.tools()
	if cfg.EchoOnly {
		tools = []handlers.Tool{echoTool()}
	}
	if err := reg.Add(append(tools, cfg.Tools...)...); err != nil {
		tb.Fatal(err)
	}
	srv := handlers.NewServer(handlers.Options{Name: "transport-test", Version: "test"}, reg)
	tr, err := build(srv)
	if err != nil {
		tb.Fatal(err)
	}
	fx.touch = func(uri string) error { _, err := tr.ResourceUpdated("", uri); return err }
	r := chi.NewRouter()
	if v := cfg.SpanValue; v != "" {
		r.Use(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				next.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), requestValue{}, v)))
			})
		})
	}
	tr.Mount(r, "/mcp")
	h := &Harness{tb: tb, Server: srv, Transport: tr, Router: r, Fx: fx}
	if !cfg.NoServer {
		h.TS = httptest.NewServer(r)
		h.URL = h.TS.URL + "/mcp"
		h.Client = h.TS.Client()
	}
	tb.Cleanup(h.Close)
	return h
}

// Close ends the transport first (which ends every open stream, so the
// httptest server's Close does not wait for them), then the server. It is
// idempotent.
func (h *Harness) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), WaitLong)
	defer cancel()
	if err := h.Transport.Close(ctx); err != nil {
		h.tb.Errorf("Transport.Close: %v", err)
	}
	if h.TS != nil {
		h.TS.Close()
		h.Client.CloseIdleConnections()
	}
}

// ---------------------------------------------------------------------------
// JSON-RPC bodies

// MustJSON encodes v, which must encode.
func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// RPC builds a request (id != nil) or notification (id == nil).
func RPC(id any, method string, params any) []byte {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	return MustJSON(m)
}

// ToolCall builds a tools/call request; token, when not nil, is sent as
// _meta.progressToken.
func ToolCall(id any, name string, args any, token any) []byte {
	p := map[string]any{"name": name}
	if args != nil {
		p["arguments"] = args
	}
	if token != nil {
		p["_meta"] = map[string]any{"progressToken": token}
	}
	return RPC(id, "tools/call", p)
}

// InitBody is an initialize request for version with the client capabilities caps.
func InitBody(version string, caps any) []byte {
	if caps == nil {
		caps = map[string]any{}
	}
	return RPC(0, "initialize", map[string]any{
		"protocolVersion": version,
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "transport-test", "version": "1"},
	})
}

// ---------------------------------------------------------------------------
// HTTP client

// Reply is a whole HTTP response.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r *Reply) String() string {
	return fmt.Sprintf("HTTP %d %s %q", r.Status, r.Header.Get("Content-Type"), truncate(r.Body, 300))
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// NewRequest builds a request to the MCP endpoint. hdrs are name/value
// pairs applied after the defaults; an empty value removes the header.
func (h *Harness) NewRequest(t testing.TB, ctx context.Context, method, sid string, body io.Reader, hdrs ...string) *http.Request {
	t.Helper()
	var req *http.Request
	if h.URL == "" { // router-only harness
		req = httptest.NewRequestWithContext(ctx, method, "/mcp", body)
	} else {
		var err error
		if req, err = http.NewRequestWithContext(ctx, method, h.URL, body); err != nil {
			t.Fatal(err)
		}
	}
	switch method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", AcceptBoth)
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

// Do sends req and reads the whole response.
func (h *Harness) Do(t testing.TB, req *http.Request) *Reply {
	t.Helper()
	if h.TS == nil {
		rec := httptest.NewRecorder()
		h.Router.ServeHTTP(rec, req)
		res := rec.Result()
		body, _ := io.ReadAll(res.Body)
		return &Reply{Status: res.StatusCode, Header: res.Header, Body: body}
	}
	res, err := h.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return &Reply{Status: res.StatusCode, Header: res.Header, Body: body}
}

// Send sends a request of method to the endpoint and reads the whole response.
func (h *Harness) Send(t testing.TB, method, sid string, body []byte, hdrs ...string) *Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitLong)
	defer cancel()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	return h.Do(t, h.NewRequest(t, ctx, method, sid, r, hdrs...))
}

// Post POSTs body and reads the whole response.
func (h *Harness) Post(t testing.TB, sid string, body []byte, hdrs ...string) *Reply {
	t.Helper()
	return h.Send(t, http.MethodPost, sid, body, hdrs...)
}

// PostAsync sends a POST in the background (for requests that block).
func (h *Harness) PostAsync(t testing.TB, ctx context.Context, sid string, body []byte, hdrs ...string) <-chan *Reply {
	t.Helper()
	req := h.NewRequest(t, ctx, http.MethodPost, sid, bytes.NewReader(body), hdrs...)
	out := make(chan *Reply, 1)
	go func() {
		res, err := h.Client.Do(req)
		if err != nil {
			out <- &Reply{Status: -1, Body: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		out <- &Reply{Status: res.StatusCode, Header: res.Header, Body: b}
	}()
	return out
}

// WaitReply waits for the response of a PostAsync.
func WaitReply(t testing.TB, ch <-chan *Reply) *Reply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(WaitLong):
		t.Fatal("timed out waiting for an HTTP response")
		return nil
	}
}

// Initialize opens a 2025-11-25 client session without capabilities.
func (h *Harness) Initialize(t testing.TB) string {
	t.Helper()
	sid, _ := h.InitializeWith(t, protocol.LatestVersion, nil)
	return sid
}

// InitializeWith opens a client session and returns its id and the
// negotiated version.
func (h *Harness) InitializeWith(t testing.TB, version string, caps any) (string, string) {
	t.Helper()
	r := h.Post(t, "", InitBody(version, caps))
	if r.Status != http.StatusOK {
		t.Fatalf("initialize: %s", r)
	}
	var res protocol.InitializeResult
	if err := json.Unmarshal(ResultOf(t, r, "0"), &res); err != nil {
		t.Fatalf("initialize result: %v", err)
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: no Mcp-Session-Id: %s", r)
	}
	if rr := h.Post(t, sid, RPC(nil, "notifications/initialized", nil)); rr.Status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %s", rr)
	}
	return sid, res.ProtocolVersion
}

// ToolsListOK asserts that the session still answers tools/list.
func (h *Harness) ToolsListOK(t testing.TB, sid string) {
	t.Helper()
	r := h.Post(t, sid, RPC("after", "tools/list", nil))
	if r.Status != http.StatusOK {
		t.Fatalf("tools/list after the case: %s", r)
	}
	var res protocol.ListToolsResult
	if err := json.Unmarshal(ResultOf(t, r, `"after"`), &res); err != nil || len(res.Tools) == 0 {
		t.Fatalf("tools/list after the case: %v %s", err, r)
	}
}

// Subscribe subscribes the session to uris.
func (h *Harness) Subscribe(t testing.TB, sid string, uris ...string) {
	t.Helper()
	for _, u := range uris {
		r := h.Post(t, sid, RPC("sub", "resources/subscribe", map[string]any{"uri": u}))
		if r.Status != http.StatusOK {
			t.Fatalf("subscribe %s: %s", u, r)
		}
		ResultOf(t, r, `"sub"`)
	}
}

// ---------------------------------------------------------------------------
// JSON-RPC checks

// CompactJSON returns the compact form of raw, or raw itself if invalid.
func CompactJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// DecodeOne decodes exactly one JSON value of body into v (numbers as
// json.Number), failing on trailing data.
func DecodeOne(body []byte, v any) error {
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

// CheckRPCError checks that body is exactly one JSON-RPC error object with
// the given id (raw JSON; "null" when unreadable) and code, and returns its
// message.
func CheckRPCError(body []byte, wantID string, wantCode int) (string, error) {
	var env map[string]json.RawMessage
	if err := DecodeOne(body, &env); err != nil {
		return "", fmt.Errorf("body is not one JSON object: %v: %q", err, truncate(body, 200))
	}
	if len(env) != 3 || env["jsonrpc"] == nil || env["id"] == nil || env["error"] == nil {
		return "", fmt.Errorf("error response must have exactly jsonrpc, id, error: %q", truncate(body, 200))
	}
	if string(env["jsonrpc"]) != `"2.0"` {
		return "", fmt.Errorf(`jsonrpc = %s, want "2.0"`, env["jsonrpc"])
	}
	if got := CompactJSON(env["id"]); got != CompactJSON([]byte(wantID)) {
		return "", fmt.Errorf("id = %s, want %s", got, wantID)
	}
	var e map[string]json.RawMessage
	if err := DecodeOne(env["error"], &e); err != nil {
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

// MessageBody returns the JSON-RPC message a POST reply carries: the body
// of a JSON reply, or the data of the last event of an SSE reply
// (LongRunning tools always answer with a stream).
func MessageBody(t testing.TB, r *Reply) []byte {
	t.Helper()
	switch ct := r.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "application/json"):
		return r.Body
	case strings.HasPrefix(ct, "text/event-stream"):
		evs := ParseSSE(r.Body)
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

// WantRPCError checks that r has status wantStatus and carries one JSON-RPC
// error with id wantID and code wantCode, and returns its message.
func WantRPCError(t testing.TB, r *Reply, wantStatus int, wantID string, wantCode int) string {
	t.Helper()
	if r.Status != wantStatus {
		t.Errorf("status = %d, want %d (%s)", r.Status, wantStatus, r)
	}
	msg, err := CheckRPCError(MessageBody(t, r), wantID, wantCode)
	if err != nil {
		t.Errorf("%v (%s)", err, r)
	}
	return msg
}

// ResultOf checks a result response with id wantID and returns its
// result.
func ResultOf(t testing.TB, r *Reply, wantID string) json.RawMessage {
	t.Helper()
	return ResultFromMessage(t, MessageBody(t, r), wantID)
}

// ResultFromMessage checks that body is a result response with id wantID
// and returns its result.
func ResultFromMessage(t testing.TB, body []byte, wantID string) json.RawMessage {
	t.Helper()
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := DecodeOne(body, &env); err != nil {
		t.Fatalf("response is not one JSON object: %v: %q", err, truncate(body, 300))
	}
	if env.JSONRPC != "2.0" || CompactJSON(env.ID) != CompactJSON([]byte(wantID)) || env.Result == nil || env.Error != nil {
		t.Fatalf("want a result response with id %s, got %q", wantID, truncate(body, 300))
	}
	return env.Result
}

// ToolText returns the text of the first content block and isError.
func ToolText(t testing.TB, result json.RawMessage) (string, bool) {
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

// Message is any JSON-RPC message as seen on an SSE stream.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// ParseMessage decodes the data of an SSE event as one JSON-RPC message.
func ParseMessage(t testing.TB, data string) Message {
	t.Helper()
	var m Message
	if err := DecodeOne([]byte(data), &m); err != nil || m.JSONRPC != "2.0" {
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

// SSEEvent is one frame of an event stream.
type SSEEvent struct {
	ID      string
	HasID   bool
	Data    string
	HasData bool
	Retry   string
	Comment string // a comment line, delivered as its own frame
}

// IsComment reports whether e is a comment line alone (a keep-alive).
func (e SSEEvent) IsComment() bool { return e.Comment != "" && !e.HasID && !e.HasData && e.Retry == "" }

// Priming reports whether e is a priming event: an id with empty data.
func (e SSEEvent) Priming() bool { return e.HasID && e.Data == "" }

// sseParser turns lines into frames.
type sseParser struct {
	cur SSEEvent
	any bool
}

// line consumes one line (without its newline) and returns a frame when
// one is complete.
func (p *sseParser) line(l string) (SSEEvent, bool) {
	l = strings.TrimSuffix(l, "\r")
	if l == "" {
		if !p.any {
			return SSEEvent{}, false
		}
		ev := p.cur
		p.cur, p.any = SSEEvent{}, false
		return ev, true
	}
	if strings.HasPrefix(l, ":") {
		return SSEEvent{Comment: strings.TrimPrefix(strings.TrimPrefix(l, ":"), " ")}, true
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
		return SSEEvent{}, false
	}
	p.any = true
	return SSEEvent{}, false
}

// ParseSSE parses a complete stream body.
func ParseSSE(body []byte) []SSEEvent {
	var p sseParser
	var out []SSEEvent
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

// SSEConn is a live SSE response read in the background.
type SSEConn struct {
	Resp   *http.Response
	cancel context.CancelFunc
	Frames chan SSEEvent
	Done   chan struct{} // closed when the reader stops (end of stream or error)
	quit   chan struct{}
	once   sync.Once
	err    error // read error other than EOF, valid after done
}

// NewSSEConn reads res in the background; cancel ends its request.
func NewSSEConn(res *http.Response, cancel context.CancelFunc) *SSEConn {
	c := &SSEConn{Resp: res, cancel: cancel, Frames: make(chan SSEEvent, 256), Done: make(chan struct{}), quit: make(chan struct{})}
	go c.read()
	return c
}

func (c *SSEConn) read() {
	defer close(c.Done)
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
			case c.Frames <- ev:
			case <-c.quit:
				return
			}
		}
	}
}

// Close disconnects (cancels the request) and waits for the reader.
func (c *SSEConn) Close() {
	c.once.Do(func() {
		c.cancel()
		close(c.quit)
		c.Resp.Body.Close()
	})
	<-c.Done
}

// NextFrame returns the next frame including comments; ok is false when the
// stream ended first.
func (c *SSEConn) NextFrame(t testing.TB, d time.Duration) (SSEEvent, bool) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case ev := <-c.Frames:
		return ev, true
	default:
	}
	select {
	case ev := <-c.Frames:
		return ev, true
	case <-c.Done:
		// Frames read before the end are still buffered.
		select {
		case ev := <-c.Frames:
			return ev, true
		default:
			return SSEEvent{}, false
		}
	case <-timer.C:
		t.Fatal("timed out waiting for an SSE frame")
		return SSEEvent{}, false
	}
}

// Next returns the next event, skipping comments; keep-alives do not
// extend the wait.
func (c *SSEConn) Next(t testing.TB) SSEEvent {
	t.Helper()
	deadline := time.Now().Add(WaitLong)
	for {
		ev, ok := c.NextFrame(t, max(time.Until(deadline), time.Millisecond))
		if !ok {
			t.Fatalf("SSE stream ended while an event was expected (read error: %v)", c.err)
		}
		if !ev.IsComment() {
			return ev
		}
	}
}

// NextMessage returns the next event carrying data, skipping comments and
// priming events.
func (c *SSEConn) NextMessage(t testing.TB) (SSEEvent, Message) {
	t.Helper()
	for {
		ev := c.Next(t) // at most one priming event precedes a message
		if ev.HasData && ev.Data != "" {
			return ev, ParseMessage(t, ev.Data)
		}
		if !ev.Priming() {
			t.Fatalf("unexpected SSE event %+v", ev)
		}
	}
}

// WaitEnd asserts that the stream ends (after only comments) within WaitLong.
func (c *SSEConn) WaitEnd(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(WaitLong)
	for {
		ev, ok := c.NextFrame(t, max(time.Until(deadline), time.Millisecond))
		if !ok {
			return
		}
		if !ev.IsComment() {
			t.Fatalf("want the end of the stream, got event %+v", ev)
		}
	}
}

// Rest returns every frame up to the end of the stream, which must come
// within WaitLong.
func (c *SSEConn) Rest(t testing.TB) []SSEEvent {
	t.Helper()
	deadline := time.Now().Add(WaitLong)
	var out []SSEEvent
	for {
		ev, ok := c.NextFrame(t, max(time.Until(deadline), time.Millisecond))
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// OpenSSE sends a request of method that must answer with an event
// stream, and reads it in the background; it closes with t.
func (h *Harness) OpenSSE(t testing.TB, method, sid string, body []byte, hdrs ...string) *SSEConn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req := h.NewRequest(t, ctx, method, sid, r, hdrs...)
	res, err := h.Client.Do(req)
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
	c := NewSSEConn(res, cancel)
	t.Cleanup(c.Close)
	return c
}

// OpenGET opens the standalone stream (or resumes, with a Last-Event-ID
// header in hdrs).
func (h *Harness) OpenGET(t testing.TB, sid string, hdrs ...string) *SSEConn {
	t.Helper()
	return h.OpenSSE(t, http.MethodGet, sid, nil, hdrs...)
}

// PostSSE POSTs body and expects an SSE response.
func (h *Harness) PostSSE(t testing.TB, sid string, body []byte, hdrs ...string) *SSEConn {
	t.Helper()
	return h.OpenSSE(t, http.MethodPost, sid, body, hdrs...)
}

// RClient returns an r3labs SSE client for the session's GET stream, using
// the harness's HTTP client and never retrying on its own.
func (h *Harness) RClient(sid string) *sse.Client {
	c := sse.NewClient(h.URL)
	c.Connection = h.Client
	c.Headers["Mcp-Session-Id"] = sid
	c.Headers["Accept"] = "text/event-stream"
	c.ReconnectStrategy = &backoff.StopBackOff{}
	return c
}

// RSub is one r3labs subscription running in the background.
type RSub struct {
	Events chan SSEEvent
	cancel context.CancelFunc
	Done   chan error
}

// SubscribeR subscribes c in the background; the subscription stops with t.
func SubscribeR(t testing.TB, c *sse.Client) *RSub {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &RSub{Events: make(chan SSEEvent, 256), cancel: cancel, Done: make(chan error, 1)}
	go func() {
		s.Done <- c.SubscribeRawWithContext(ctx, func(e *sse.Event) {
			ev := SSEEvent{ID: string(e.ID), HasID: len(e.ID) > 0, Data: string(e.Data), HasData: len(e.Data) > 0, Retry: string(e.Retry)}
			select {
			case s.Events <- ev:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() { s.Stop(t) })
	return s
}

// Stop disconnects and waits for the subscription to return.
func (s *RSub) Stop(t testing.TB) {
	t.Helper()
	s.cancel()
	select {
	case err := <-s.Done:
		s.Done <- err // keep it for a second stop
	case <-time.After(WaitLong):
		t.Errorf("r3labs subscription did not return after cancel")
	}
}

// Next returns the next event, or fails.
func (s *RSub) Next(t testing.TB) SSEEvent {
	t.Helper()
	select {
	case ev := <-s.Events:
		return ev
	case err := <-s.Done:
		s.Done <- err
		t.Fatalf("r3labs subscription ended: %v", err)
	case <-time.After(WaitLong):
		t.Fatal("timed out waiting for an r3labs event")
	}
	return SSEEvent{}
}

// NextMessage skips priming events.
func (s *RSub) NextMessage(t testing.TB) (SSEEvent, Message) {
	t.Helper()
	for {
		ev := s.Next(t)
		if ev.Data != "" {
			return ev, ParseMessage(t, ev.Data)
		}
	}
}

// ---------------------------------------------------------------------------
// Waiting

// WaitChan waits until ch is closed, or fails after WaitLong.
func WaitChan(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(WaitLong):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// NotWithin asserts that ch stays open for d.
func NotWithin(t testing.TB, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s happened, but must not", what)
	case <-time.After(d):
	}
}

// WaitDetached waits until no connection serves st: the server has
// noticed that the client went away.
func WaitDetached(t testing.TB, st interface {
	Name() string
	Attached() bool
}) {
	t.Helper()
	testutil.Eventually(t, WaitLong, "stream "+st.Name()+" to be detached", func() bool { return !st.Attached() })
}

// ResourceUpdatedURI returns params.uri of a notifications/resources/updated.
func ResourceUpdatedURI(t testing.TB, m Message) string {
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

// WaitAfter fires after WaitLong.
func WaitAfter() <-chan time.Time { return time.After(WaitLong) }

// LockedBuffer is an io.Writer safe for concurrent use (log output).
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ---------------------------------------------------------------------------
// Progress and event ids

// ProgressNote is a notifications/progress as the tests read it.
type ProgressNote struct {
	Token    string // raw JSON, compact
	Progress float64
	Total    float64
	Message  string
}

// ProgressOf reads the progress notification m, failing on anything else.
func ProgressOf(t testing.TB, m Message) ProgressNote {
	t.Helper()
	if m.Method != "notifications/progress" || m.ID != nil {
		t.Fatalf("want a notifications/progress notification, got %+v", m)
	}
	var p struct {
		ProgressToken json.RawMessage `json:"progressToken"`
		Progress      float64         `json:"progress"`
		Total         float64         `json:"total"`
		Message       string          `json:"message"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatal(err)
	}
	return ProgressNote{Token: CompactJSON(p.ProgressToken), Progress: p.Progress, Total: p.Total, Message: p.Message}
}

// SplitEventID splits "<stream>-<seq>".
func SplitEventID(t testing.TB, id string) (string, uint64) {
	t.Helper()
	i := strings.LastIndexByte(id, '-')
	if i <= 0 {
		t.Fatalf("event id %q is not <stream>-<seq>", id)
	}
	seq, err := strconv.ParseUint(id[i+1:], 10, 64)
	if err != nil {
		t.Fatalf("event id %q is not <stream>-<seq>", id)
	}
	return id[:i], seq
}
