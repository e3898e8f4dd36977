package timeout

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestINV_MCP_TIMEOUT_001_GuaranteedTermination: a handler that sleeps and
// ignores its context still yields within timeout + 100 ms.
func TestINV_MCP_TIMEOUT_001_GuaranteedTermination(t *testing.T) {
	const limit = 50 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	start := time.Now()
	_, out, err := Run(context.Background(), limit, func(context.Context) (int, error) {
		<-release // ignores ctx entirely
		return 1, nil
	})
	if took := time.Since(start); took > limit+100*time.Millisecond {
		t.Fatalf("Run returned after %v, want within %v", took, limit+100*time.Millisecond)
	}
	if !out.TimedOut || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("out = %+v, err = %v; want a timeout", out, err)
	}
}

// TestINV_MCP_TIMEOUT_002_CategoryConsistency: with no override, every tool
// of a category gets that category's timeout.
func TestINV_MCP_TIMEOUT_002_CategoryConsistency(t *testing.T) {
	c := DefaultConfig()
	for _, cat := range []Category{Query, Mutation, Scan, Execution} {
		a := c.For("memory.retrieve", "memory_retrieve", cat)
		b := c.For("agent.get", "agent_get", cat)
		if a != b || a != c.Categories[cat] {
			t.Errorf("%s: %v and %v, want both %v", cat, a, b, c.Categories[cat])
		}
	}
	want := map[Category]time.Duration{Query: 10 * time.Second, Mutation: 30 * time.Second, Scan: 2 * time.Minute, Execution: 20 * time.Minute}
	for cat, d := range want {
		if c.Categories[cat] != d {
			t.Errorf("default %s = %v, want %v (PRD)", cat, c.Categories[cat], d)
		}
	}
	if got := c.For("x.y", "x_y", Category("unknown")); got != c.Default {
		t.Errorf("unknown category = %v, want the default %v", got, c.Default)
	}
}

// TestINV_MCP_TIMEOUT_003_OverridePrecedence: an override beats the
// category, by canonical or by exposed name.
func TestINV_MCP_TIMEOUT_003_OverridePrecedence(t *testing.T) {
	for _, key := range []string{"memory.search", "memory_search"} {
		c := DefaultConfig()
		c.Overrides[key] = 3 * time.Second
		if got := c.For("memory.search", "memory_search", Query); got != 3*time.Second {
			t.Errorf("override %q: got %v, want 3s", key, got)
		}
		if got := c.For("memory.retrieve", "memory_retrieve", Query); got != 10*time.Second {
			t.Errorf("override %q leaked to another tool: %v", key, got)
		}
	}
}

// TestINV_MCP_TIMEOUT_004_TimeoutErrorCode: Run reports a timeout as such
// (the pipeline maps it to TOOL_TIMEOUT; see its tests), and a cancelled
// parent is not a timeout.
func TestINV_MCP_TIMEOUT_004_TimeoutErrorCode(t *testing.T) {
	_, out, err := Run(context.Background(), 10*time.Millisecond, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	if !out.TimedOut || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: out=%+v err=%v", out, err)
	}
	parent, cancel := context.WithCancel(context.Background())
	cancel()
	_, out, err = Run(parent, time.Second, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	if out.TimedOut || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled parent: out=%+v err=%v, want Canceled and no timeout", out, err)
	}
}

// TestINV_MCP_TIMEOUT_005_DurationTracking: completed, failed and timed-out
// runs all report their elapsed time.
func TestINV_MCP_TIMEOUT_005_DurationTracking(t *testing.T) {
	cases := []struct {
		name string
		fn   func(context.Context) (int, error)
	}{
		{"completed", func(context.Context) (int, error) { time.Sleep(5 * time.Millisecond); return 1, nil }},
		{"error", func(context.Context) (int, error) { time.Sleep(5 * time.Millisecond); return 0, errors.New("boom") }},
		{"timeout", func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() }},
		{"panic", func(context.Context) (int, error) { panic("boom") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, out, err := Run(context.Background(), 20*time.Millisecond, tc.fn)
			if out.Elapsed <= 0 {
				t.Errorf("Elapsed = %v", out.Elapsed)
			}
			if tc.name == "panic" && (err == nil || out.TimedOut) {
				t.Errorf("panic: err = %v, out = %+v; want an error", err, out)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Config)
		key  string
	}{
		{"default", func(c *Config) { c.Default = 0 }, "timeouts.defaultTimeoutMs"},
		{"category", func(c *Config) { c.Categories[Scan] = -1 }, "timeouts.toolTimeouts.scan"},
		{"unknown category", func(c *Config) { c.Categories["slow"] = time.Second }, "timeouts.toolTimeouts.slow"},
		{"override", func(c *Config) { c.Overrides["memory.store"] = 0 }, "timeouts.toolOverrides.memory.store"},
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range cases {
		c := DefaultConfig()
		tc.mod(&c)
		if err := c.Validate(); err == nil || !contains(err.Error(), tc.key) {
			t.Errorf("%s: err = %v, want one naming %s", tc.name, err, tc.key)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// A handler that returns promptly is never reported as timed out or
// cancelled (the result must not race the context's own cancellation).
func TestRun_FastResultAlwaysWins(t *testing.T) {
	for i := range 2000 {
		v, out, err := Run(context.Background(), time.Second, func(context.Context) (int, error) { return i, nil })
		if v != i || err != nil || out.TimedOut {
			t.Fatalf("run %d: v=%d err=%v out=%+v", i, v, err, out)
		}
	}
}
