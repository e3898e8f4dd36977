package statetools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/guarded"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/cache"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/guard"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/limits"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/memstore"
	"github.com/mcp-runtime/mcp-runtime/internal/store/tiered"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

type session struct{}

func (session) ID() string                                      { return "client-1" }
func (session) ProtocolVersion() string                         { return protocol.LatestVersion }
func (session) ClientInfo() protocol.Implementation             { return protocol.Implementation{} }
func (session) ClientCapabilities() protocol.ClientCapabilities { return protocol.ClientCapabilities{} }
func (session) LogLevel() protocol.LoggingLevel                 { return protocol.LevelInfo }
func (session) SetLogLevel(protocol.LoggingLevel)               {}
func (session) Subscribe(string) error                          { return nil }
func (session) Unsubscribe(string)                              {}

type peer struct{}

func (peer) Notify(context.Context, string, any) error { return nil }
func (peer) Request(context.Context, string, any) (json.RawMessage, error) {
	return nil, errors.New("no client")
}
func (peer) CloseStream(int) {}
func (peer) Answer(any) bool { return false }

// env is a server with the state tools over the embedded store behind
// the in-process cache tier.
type env struct {
	srv     *handlers.Server
	backend Backend
}

func newEnv(t *testing.T, wrap func(Backend) Backend) *env {
	t.Helper()
	return newEnvOpts(t, wrap, Options{ParticipantLimit: 3})
}

func newEnvOpts(t *testing.T, wrap func(Backend) Backend, opts Options) *env {
	t.Helper()
	tb, err := tiered.New(context.Background(), memstore.New(store.Options{}), tiered.Options{L1: cache.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tb.Close)
	var b Backend = tb
	if wrap != nil {
		b = wrap(b)
	}
	reg, err := handlers.NewToolRegistry("_")
	if err != nil {
		t.Fatal(err)
	}
	srv := handlers.NewServer(handlers.Options{Name: "t", Version: "1", PageSize: 3}, reg)
	cfg := pipeline.Config{Limits: limits.DefaultConfig(), Timeouts: timeout.DefaultConfig(), Response: response.DefaultLimits(), Separator: "_"}
	p, err := guarded.New(cfg, guard.NewPolicy(zerolog.Nop(), cfg.Limits.MaxRequestBytes, nil), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := Register(srv, p, b, opts); err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, backend: b}
}

// envelope is the structuredContent of a tool result.
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
		Cached bool `json:"cached"`
	} `json:"metadata"`
}

func (e *env) request(ctx context.Context, t *testing.T, method, params string) (any, error) {
	t.Helper()
	return e.srv.Handle(ctx, &handlers.Request{Method: method, ID: protocol.IntID(1), Params: json.RawMessage(params), Session: session{}, Peer: peer{}})
}

// callIn calls tool (exposed name) with args as tenant tn.
func (e *env) callIn(t *testing.T, tn, tool, args string) envelope {
	t.Helper()
	res, err := e.request(tenant.With(context.Background(), tn), t, protocol.MethodToolsCall, fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args))
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	r := res.(*protocol.CallToolResult)
	var env envelope
	if err := json.Unmarshal(r.StructuredContent, &env); err != nil {
		t.Fatalf("%s: structuredContent %s: %v", tool, r.StructuredContent, err)
	}
	if r.IsError == env.Success {
		t.Fatalf("%s: isError %v with success %v", tool, r.IsError, env.Success)
	}
	return env
}

func (e *env) call(t *testing.T, tool, args string) envelope {
	t.Helper()
	return e.callIn(t, tenant.Default, tool, args)
}

// ok calls a tool that must succeed and decodes its data into out.
func (e *env) ok(t *testing.T, tool, args string, out any) envelope {
	t.Helper()
	env := e.call(t, tool, args)
	if !env.Success {
		t.Fatalf("%s %s failed: %+v", tool, args, env.Error)
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			t.Fatalf("%s: data %s: %v", tool, env.Data, err)
		}
	}
	return env
}

// fails calls a tool that must fail with code and returns the envelope.
func (e *env) fails(t *testing.T, code, tool, args string) envelope {
	t.Helper()
	env := e.call(t, tool, args)
	if env.Success || env.Error == nil || env.Error.Code != code {
		t.Fatalf("%s %s: got %s, want error %s", tool, args, mustJSON(env), code)
	}
	return env
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func tenantCtx(tn string) context.Context { return tenant.With(context.Background(), tn) }
