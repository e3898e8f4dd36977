package guarded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/guard"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/limits"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
)

type session struct{}

func (session) ID() string                                      { return "s" }
func (session) ProtocolVersion() string                         { return protocol.LatestVersion }
func (session) ClientInfo() protocol.Implementation             { return protocol.Implementation{} }
func (session) ClientCapabilities() protocol.ClientCapabilities { return protocol.ClientCapabilities{} }
func (session) LogLevel() protocol.LoggingLevel                 { return protocol.LevelInfo }
func (session) SetLogLevel(protocol.LoggingLevel)               {}
func (session) Subscribe(string) error                          { return nil }
func (session) Unsubscribe(string)                              {}

// peer records an early answer the way the transport sends one.
type peer struct{ early chan any }

func (peer) Notify(context.Context, string, any) error { return nil }
func (peer) Request(context.Context, string, any) (json.RawMessage, error) {
	return nil, errors.New("no client")
}
func (peer) CloseStream(int) {}
func (p peer) Answer(result any) bool {
	if p.early == nil {
		return false
	}
	select {
	case p.early <- result:
		return true
	default:
		return false
	}
}

func defaultConfig() pipeline.Config {
	return pipeline.Config{Limits: limits.DefaultConfig(), Timeouts: timeout.DefaultConfig(), Response: response.DefaultLimits(), Separator: "_"}
}

// env is a server whose tools go through a pipeline.
type env struct {
	srv    *handlers.Server
	policy *guard.Policy
}

func newEnv(t *testing.T, cfg pipeline.Config, pressure func() guard.Pressure, tools ...Tool) *env {
	t.Helper()
	reg, err := handlers.NewToolRegistry("_")
	if err != nil {
		t.Fatal(err)
	}
	policy := guard.NewPolicy(zerolog.Nop(), cfg.Limits.MaxRequestBytes, pressure)
	p, err := New(cfg, policy, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := Register(reg, p, tools...); err != nil {
		t.Fatal(err)
	}
	return &env{srv: handlers.NewServer(handlers.Options{Name: "t", Version: "1"}, reg), policy: policy}
}

type envelope struct {
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data"`
	Error   *struct {
		Code         string         `json:"code"`
		Message      string         `json:"message"`
		Retryable    bool           `json:"retryable"`
		RetryAfterMs int64          `json:"retryAfterMs"`
		Context      map[string]any `json:"context"`
	} `json:"error"`
	Metadata struct {
		DurationMs *int64 `json:"durationMs"`
		Truncated  bool   `json:"truncated"`
	} `json:"metadata"`
}

func (e *env) call(t *testing.T, tool string, args string) (envelope, *protocol.CallToolResult) {
	t.Helper()
	params := fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args)
	res, err := e.srv.Handle(context.Background(), &handlers.Request{Method: protocol.MethodToolsCall, ID: protocol.IntID(1), Params: json.RawMessage(params), Session: session{}, Peer: peer{}})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	r := res.(*protocol.CallToolResult)
	var env envelope
	if err := json.Unmarshal(r.StructuredContent, &env); err != nil {
		t.Fatalf("structuredContent %s: %v", r.StructuredContent, err)
	}
	if len(r.Content) == 0 || r.Content[0].Text != string(r.StructuredContent) {
		t.Fatalf("first text block differs from structuredContent")
	}
	if env.Metadata.DurationMs == nil || *env.Metadata.DurationMs < 0 {
		t.Fatalf("durationMs missing: %s", r.StructuredContent)
	}
	if r.IsError == env.Success {
		t.Fatalf("isError %v with success %v", r.IsError, env.Success)
	}
	return env, r
}

func echo(cat timeout.Category) Tool {
	return Tool{Name: "test.echo", Description: "echo", Category: cat,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"items":{"type":"array"},"text":{"type":"string"}}}`),
		Run:         func(_ context.Context, c *handlers.ToolCall) (any, error) { return json.RawMessage(c.Arguments), nil }}
}

// TestINV_MCP_LIMIT_002_EarlyRejection: a request over the limits is
// refused with ARRAY_TOO_LARGE, path, limit and actual, and the handler is
// never called.
func TestINV_MCP_LIMIT_002_EarlyRejection(t *testing.T) {
	tool := Tool{Name: "test.never", Description: "must not run", Category: timeout.Mutation,
		Run: func(context.Context, *handlers.ToolCall) (any, error) {
			t.Error("handler called for a request that exceeds the limits")
			return nil, nil
		}}
	e := newEnv(t, defaultConfig(), nil, tool)
	items := "[" + strings.TrimSuffix(strings.Repeat("1,", 101), ",") + "]"
	env, _ := e.call(t, "test_never", `{"items":`+items+`}`)
	if env.Success || env.Error.Code != "ARRAY_TOO_LARGE" {
		t.Fatalf("got %+v, want ARRAY_TOO_LARGE", env)
	}
	vs, _ := env.Error.Context["violations"].([]any)
	if len(vs) != 1 {
		t.Fatalf("violations = %v", env.Error.Context)
	}
	v := vs[0].(map[string]any)
	if v["path"] != "/items" || v["limit"] != float64(100) || v["actual"] != float64(101) {
		t.Errorf("violation %v, want path /items, limit 100, actual 101", v)
	}
	// Schema failures are refused before the handler too, in the envelope.
	env, _ = e.call(t, "test_never", `[1]`)
	if env.Success || env.Error.Code != "INVALID_INPUT" {
		t.Errorf("non-object arguments: %+v", env)
	}
}

// TestINV_MCP_TIMEOUT_001_004_ThroughThePipeline: a handler that ignores
// its context is answered with TOOL_TIMEOUT, retryable, within timeout +
// 100 ms (through the peer, while it still runs), and the timeout comes
// from the category, or the override.
func TestINV_MCP_TIMEOUT_001_004_ThroughThePipeline(t *testing.T) {
	// In a synctest bubble the answer comes at the limit exactly, on the
	// bubble's clock, however busy the machine is.
	synctest.Test(t, func(t *testing.T) {
		cfg := defaultConfig()
		cfg.Timeouts.Categories[timeout.Query] = 40 * time.Millisecond
		cfg.Timeouts.Overrides["test.slow2"] = 80 * time.Millisecond
		release := make(chan struct{})
		stuck := func(context.Context, *handlers.ToolCall) (any, error) { <-release; return "late", nil }
		e := newEnv(t, cfg, nil,
			Tool{Name: "test.slow", Description: "ignores ctx", Category: timeout.Query, Run: stuck},
			Tool{Name: "test.slow2", Description: "ignores ctx", Category: timeout.Query, Run: stuck})
		for tool, limit := range map[string]time.Duration{"test_slow": 40 * time.Millisecond, "test_slow2": 80 * time.Millisecond} {
			early := make(chan any, 1)
			done := make(chan any, 1)
			start := time.Now()
			go func() {
				res, _ := e.srv.Handle(context.Background(), &handlers.Request{Method: protocol.MethodToolsCall, ID: protocol.IntID(1),
					Params: json.RawMessage(fmt.Sprintf(`{"name":%q,"arguments":{}}`, tool)), Session: session{}, Peer: peer{early: early}})
				done <- res
			}()
			ans := <-early
			if took := time.Since(start); took != limit {
				t.Errorf("%s answered after %v, want at its timeout %v", tool, took, limit)
			}
			r := ans.(*protocol.CallToolResult)
			var env envelope
			_ = json.Unmarshal(r.StructuredContent, &env)
			if !r.IsError || env.Error == nil || env.Error.Code != "TOOL_TIMEOUT" || !env.Error.Retryable || env.Metadata.DurationMs == nil {
				t.Errorf("%s: %s, want retryable TOOL_TIMEOUT with durationMs", tool, r.StructuredContent)
			}
			if got := env.Error.Context["timeoutMs"]; got != float64(limit.Milliseconds()) {
				t.Errorf("%s: timeoutMs %v, want %d", tool, got, limit.Milliseconds())
			}
			release <- struct{}{} // the handler returns late: its result is a timeout too
			if late := (<-done).(*protocol.CallToolResult); !late.IsError {
				t.Errorf("%s: the late result is not the timeout", tool)
			}
		}
	})
}

// A handler that honours its context times out the same way.
func TestTimeoutHonouringHandler(t *testing.T) {
	cfg := defaultConfig()
	cfg.Timeouts.Categories[timeout.Query] = 30 * time.Millisecond
	e := newEnv(t, cfg, nil, Tool{Name: "test.wait", Description: "waits", Category: timeout.Query,
		Run: func(ctx context.Context, _ *handlers.ToolCall) (any, error) { <-ctx.Done(); return nil, ctx.Err() }})
	env, _ := e.call(t, "test_wait", `{}`)
	if env.Error == nil || env.Error.Code != "TOOL_TIMEOUT" {
		t.Fatalf("got %+v", env)
	}
}

// TestINV_MCP_XC_001_NoSilentFailures: a failing, panicking or unencodable
// tool never yields a success envelope.
func TestINV_MCP_XC_001_NoSilentFailures(t *testing.T) {
	cases := []struct {
		name string
		run  func(context.Context, *handlers.ToolCall) (any, error)
		code string
	}{
		{"coded error", func(context.Context, *handlers.ToolCall) (any, error) {
			return nil, response.NewError(response.CodeNotFound, "no such key")
		}, "NOT_FOUND"},
		{"plain error", func(context.Context, *handlers.ToolCall) (any, error) { return nil, errors.New("disk on fire") }, "INTERNAL_ERROR"},
		{"panic", func(context.Context, *handlers.ToolCall) (any, error) { panic("boom") }, "INTERNAL_ERROR"},
		{"unencodable", func(context.Context, *handlers.ToolCall) (any, error) { return func() {}, nil }, "INTERNAL_ERROR"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, defaultConfig(), nil, Tool{Name: "test.fail", Description: "fails", Category: timeout.Query, Run: tc.run})
			env, _ := e.call(t, "test_fail", `{}`)
			if env.Success || env.Error == nil || env.Error.Code != tc.code {
				t.Fatalf("got %+v, want failure %s", env, tc.code)
			}
		})
	}
}

// TestINV_MCP_XC_002_GracefulDegradation: the memory-pressure gate reads
// the cache's stats; when that source fails, calls still run.
func TestINV_MCP_XC_002_GracefulDegradation(t *testing.T) {
	e := newEnv(t, defaultConfig(), func() guard.Pressure { panic("cache unavailable") }, echo(timeout.Query))
	env, _ := e.call(t, "test_echo", `{"text":"still works"}`)
	if !env.Success || string(env.Data) != `{"text":"still works"}` {
		t.Fatalf("got %+v %+v", env, env.Error)
	}
	if e.policy.Stats().SourceFailures != 1 {
		t.Errorf("the failing source was not counted")
	}
}

// Memory pressure at critical refuses calls, retryably; the guard decides
// before the handler runs.
func TestMemoryPressureGate(t *testing.T) {
	var ran atomic.Bool
	tool := echo(timeout.Query)
	tool.Run = func(context.Context, *handlers.ToolCall) (any, error) { ran.Store(true); return nil, nil }
	e := newEnv(t, defaultConfig(), func() guard.Pressure { return guard.PressureCritical }, tool)
	env, _ := e.call(t, "test_echo", `{}`)
	if env.Success || env.Error.Code != "MEMORY_PRESSURE" || !env.Error.Retryable || env.Error.RetryAfterMs <= 0 || ran.Load() {
		t.Fatalf("got %+v (ran %v)", env, ran.Load())
	}
}

// Responses over the limits are truncated, and say so.
func TestTruncationThroughThePipeline(t *testing.T) {
	cfg := defaultConfig()
	cfg.Response.MaxListItems = 3
	cfg.Limits.MaxArraySize = 1000
	e := newEnv(t, cfg, nil, echo(timeout.Query))
	env, _ := e.call(t, "test_echo", `{"items":[1,2,3,4,5]}`)
	if !env.Success || !env.Metadata.Truncated || !strings.Contains(string(env.Data), `"hasMore":true`) {
		t.Fatalf("got %+v %s", env, env.Data)
	}
	env, _ = e.call(t, "test_echo", `{"items":[1,2,3]}`)
	if env.Metadata.Truncated {
		t.Errorf("truncated set with nothing cut: %s", env.Data)
	}
}

func TestToolRegistrationErrors(t *testing.T) {
	p, err := New(defaultConfig(), guard.NewPolicy(zerolog.Nop(), 0, nil), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Wrap(p, Tool{Name: "a.b", Description: "d", Category: "slow", Run: echo("").Run}); err == nil {
		t.Error("unknown category accepted")
	}
	if _, err := Wrap(p, Tool{Name: "a.b", Description: "d", Category: timeout.Query}); err == nil {
		t.Error("nil Run accepted")
	}
	bad := defaultConfig()
	bad.Timeouts.Default = 0
	if _, err := New(bad, nil, zerolog.Nop()); err == nil {
		t.Error("invalid timeouts accepted")
	}
}
