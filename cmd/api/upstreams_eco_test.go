package main

import (
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// federate runs a gateway in front of the given upstreams and returns a
// client session on it once every upstream tool in want is listed.
func federate(t *testing.T, ups []upstream.Config, want ...string) (*mcp.ClientSession, string) {
	t.Helper()
	cfg := config.Default()
	cfg.Upstreams = ups
	url, _ := runServer(t, cfg, io.Discard)
	cs := connect(t, url)
	waitFor(t, func() bool {
		names := toolNames(t, cs)
		for _, w := range want {
			if !slices.Contains(names, w) {
				return false
			}
		}
		return true
	})
	return cs, url
}

// TestECO300_ArgumentsValidated (INV-MCP-ECO-300): arguments are checked
// against the upstream tool's inputSchema before anything is sent; a
// failure names the field and the upstream is not contacted; valid
// arguments, and extra ones an open schema allows, go through.
func TestECO300_ArgumentsValidated(t *testing.T) {
	var calls atomic.Int64
	cs, _ := federate(t, []upstream.Config{{ID: "up", URL: sdkUpstream(t, "up", &calls)}}, "up_search", "up_open")
	tests := []struct {
		name      string
		tool      string
		args      map[string]any
		ok        bool
		mentions  string
		forwarded bool
	}{
		{"missing required argument", "up_search", map[string]any{}, false, "query", false},
		{"invalid argument type", "up_search", map[string]any{"query": 7}, false, "query", false},
		{"extra argument, closed schema", "up_search", map[string]any{"query": "q", "extra": true}, false, "extra", false},
		{"valid arguments", "up_search", map[string]any{"query": "q"}, true, "up:q", true},
		{"extra arguments, open schema", "up_open", map[string]any{"extra": true}, true, `\"extra\":true`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			env, _ := proxied(t, cs, tc.tool, tc.args)
			if env.Success != tc.ok {
				t.Fatalf("success = %v, want %v: %+v", env.Success, tc.ok, env)
			}
			text := env.Error.Message + string(env.Data)
			if !strings.Contains(text, tc.mentions) {
				t.Fatalf("answer does not mention %s: %s", tc.mentions, text)
			}
			if got := calls.Load() - before; (got == 1) != tc.forwarded {
				t.Fatalf("the upstream got %d calls; forwarded should be %v", got, tc.forwarded)
			}
		})
	}
}

// TestECO003_NamespacingPreventsCollisions (INV-MCP-ECO-003): two servers
// offering "search" both stay callable under their own names; the bare
// name is AMBIGUOUS_TOOL; a tool only one server has resolves bare.
func TestECO003_NamespacingPreventsCollisions(t *testing.T) {
	var a, b atomic.Int64
	cs, _ := federate(t, []upstream.Config{
		{ID: "server-a", URL: sdkUpstream(t, "server-a", &a)},
		{ID: "server-b", URL: sdkUpstream(t, "server-b", &b, "lookup")},
	}, "server-a_search", "server-b_search", "server-b_lookup")
	for _, name := range []string{"server-a.search", "server-b_search"} {
		env, _ := proxied(t, cs, name, map[string]any{"query": "q"})
		mustSucceed(t, env, name)
		if want := strings.SplitN(strings.ReplaceAll(name, "_", "."), ".", 2)[0] + ":q"; !strings.Contains(string(env.Data), want) {
			t.Fatalf("%s answered %s, want %s", name, env.Data, want)
		}
	}
	if env := call(t, cs, "search", map[string]any{"query": "q"}); env.Success || env.Error.Code != "AMBIGUOUS_TOOL" {
		t.Fatalf("bare search: %+v", env)
	}
	env, _ := proxied(t, cs, "lookup", map[string]any{"query": "q"})
	mustSucceed(t, env, "bare lookup")
	if a.Load() != 1 || b.Load() != 2 {
		t.Fatalf("calls: server-a %d, server-b %d; want 1 and 2", a.Load(), b.Load())
	}
}
