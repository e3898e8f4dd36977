package config

import (
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
)

// The guardrail sections load from YAML with the PRD defaults for what is
// not set, and map onto the runtime packages' types.
func TestLoadRuntimeSections(t *testing.T) {
	path := writeConfig(t, `
timeouts:
  toolTimeouts: {query: 5000}
  toolOverrides: {memory.search: 2500}
limits:
  maxArraySize: 50
  toolArrayLimits: {memory_bulk_delete: 2000}
response:
  maxListItems: 20
  truncationSuffix: "…"
`)
	cfg, err := load([]string{"-config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.Timeouts.TimeoutConfig()
	if got := tc.For("memory.retrieve", "memory_retrieve", timeout.Query); got != 5*time.Second {
		t.Errorf("query timeout = %v, want 5s", got)
	}
	if got := tc.For("memory.search", "memory_search", timeout.Query); got != 2500*time.Millisecond {
		t.Errorf("override = %v, want 2.5s", got)
	}
	if got := tc.For("x.y", "x_y", timeout.Scan); got != 2*time.Minute {
		t.Errorf("scan keeps its PRD default, got %v", got)
	}
	lc := cfg.Limits.LimitsConfig()
	if lc.MaxArraySize != 50 || lc.ToolArrayLimits["memory_bulk_delete"] != 2000 || lc.ToolArrayLimits["ability_inject"] != 20 {
		t.Errorf("limits = %+v", lc)
	}
	rl := cfg.Response.ResponseLimits()
	if rl.MaxListItems != 20 || rl.TruncationSuffix != "…" || rl.MaxResponseBytes != 1<<20 {
		t.Errorf("response = %+v", rl)
	}
}

func TestValidateRuntimeNamesKeys(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Config)
		key  string
	}{
		{"default timeout", func(c *Config) { c.Timeouts.DefaultTimeoutMs = 0 }, "timeouts.defaultTimeoutMs"},
		{"category", func(c *Config) { c.Timeouts.ToolTimeouts.Scan = -5 }, "timeouts.toolTimeouts.scan"},
		{"override", func(c *Config) { c.Timeouts.ToolOverrides = map[string]int64{"memory.store": 0} }, "timeouts.toolOverrides.memory.store"},
		{"array size", func(c *Config) { c.Limits.MaxArraySize = 0 }, "limits.maxArraySize"},
		{"tool array limit", func(c *Config) { c.Limits.ToolArrayLimits = map[string]int{"memory_bulk_delete": -1} }, "limits.toolArrayLimits"},
		{"response bytes", func(c *Config) { c.Response.MaxResponseBytes = 10 }, "response.maxResponseBytes"},
		{"list items", func(c *Config) { c.Response.MaxListItems = 0 }, "response.maxListItems"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mod(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("err = %v, want one naming %s", err, tc.key)
			}
		})
	}
}
