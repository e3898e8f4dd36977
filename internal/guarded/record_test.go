package guarded

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
)

// TestRecordEveryCall: every tools/call is reported to Record once —
// success, tool failure, rejection by the limits before the handler, and
// schema-invalid arguments — with its error code and sizes, never the
// arguments themselves, which is what a trace keeps.
func TestRecordEveryCall(t *testing.T) {
	var mu sync.Mutex
	var got []pipeline.CallRecord
	cfg := defaultConfig()
	cfg.Record = func(r pipeline.CallRecord) { mu.Lock(); got = append(got, r); mu.Unlock() }
	failing := Tool{Name: "test.fail", Description: "fails", Category: timeout.Query,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Run: func(context.Context, *handlers.ToolCall) (any, error) {
			return nil, response.NewError(response.CodeNotFound, "nothing here")
		}}
	e := newEnv(t, cfg, nil, echo(timeout.Query), failing)
	items := "[" + strings.TrimSuffix(strings.Repeat("1,", 101), ",") + "]"
	tests := []struct {
		name, tool, args string
		code             response.Code
	}{
		{"success", "test_echo", `{"text":"hi"}`, ""},
		{"tool failure", "test_fail", `{}`, response.CodeNotFound},
		{"rejected by limits", "test_echo", `{"items":` + items + `}`, response.CodeArrayTooLarge},
		{"schema-invalid", "test_fail", `{"n":"x"}`, response.CodeInvalidInput},
	}
	for _, tt := range tests {
		mu.Lock()
		got = nil
		mu.Unlock()
		_, res := e.call(t, tt.tool, tt.args)
		mu.Lock()
		if len(got) != 1 {
			t.Fatalf("%s: %d records, want 1", tt.name, len(got))
		}
		r := got[0]
		mu.Unlock()
		canonical := strings.Replace(tt.tool, "_", ".", 1)
		if r.Tool != canonical || r.ErrorCode != tt.code || r.ClientSession != "s" || r.Tenant != "default" {
			t.Errorf("%s: record %+v, want tool %s code %q session s tenant default", tt.name, r, canonical, tt.code)
		}
		if r.ArgBytes != len(tt.args) || r.ResultBytes != len(res.StructuredContent) || r.Duration < 0 {
			t.Errorf("%s: sizes %d/%d, want %d/%d", tt.name, r.ArgBytes, r.ResultBytes, len(tt.args), len(res.StructuredContent))
		}
	}
}

// TestResultCached: a Run returning Result{Cached: true} sets
// metadata.cached; bare data leaves it false.
func TestResultCached(t *testing.T) {
	cachedTool := Tool{Name: "test.cached", Description: "from cache", Category: timeout.Query,
		Run: func(context.Context, *handlers.ToolCall) (any, error) {
			return pipeline.Result{Data: map[string]int{"n": 1}, Cached: true}, nil
		}}
	e := newEnv(t, defaultConfig(), nil, echo(timeout.Query), cachedTool)
	for _, tt := range []struct {
		tool, args string
		cached     bool
	}{{"test_cached", `{}`, true}, {"test_echo", `{"text":"x"}`, false}} {
		_, res := e.call(t, tt.tool, tt.args)
		var env struct {
			Data     json.RawMessage `json:"data"`
			Metadata struct {
				Cached bool `json:"cached"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(res.StructuredContent, &env); err != nil {
			t.Fatal(err)
		}
		if env.Metadata.Cached != tt.cached {
			t.Errorf("%s: cached %v, want %v (%s)", tt.tool, env.Metadata.Cached, tt.cached, res.StructuredContent)
		}
		if tt.cached && string(env.Data) != `{"n":1}` {
			t.Errorf("%s: data %s, want the Result's data unwrapped", tt.tool, env.Data)
		}
	}
}
