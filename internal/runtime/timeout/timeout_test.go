package timeout

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestINV_MCP_TIMEOUT_001_GuaranteedTermination: while a handler sleeps
// and ignores its context, the expiry callback (which answers the client)
// still runs within timeout + 100 ms.
func TestINV_MCP_TIMEOUT_001_GuaranteedTermination(t *testing.T) {
	// In a synctest bubble the clock is the bubble's: the callback must
	// fire at the limit exactly, however busy the machine is.
	synctest.Test(t, func(t *testing.T) {
		const limit = 50 * time.Millisecond
		expired := make(chan time.Duration, 1)
		start := time.Now()
		_, stop := Watch(context.Background(), limit, func(e time.Duration) { expired <- e })
		// The "handler" ignores ctx entirely and is still running when
		// the callback must fire.
		handler := make(chan struct{})
		go func() {
			time.Sleep(time.Hour)
			close(handler)
		}()
		e := <-expired
		if took := time.Since(start); took != limit {
			t.Fatalf("expiry after %v, want %v", took, limit)
		}
		if e != limit {
			t.Errorf("reported elapsed %v, want %v", e, limit)
		}
		if out := stop(); !out.TimedOut {
			t.Errorf("stop after expiry: %+v, want TimedOut", out)
		}
		<-handler
	})
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

// TestINV_MCP_TIMEOUT_004_TimeoutErrorCode: the context expires with
// DeadlineExceeded and stop reports the timeout (the pipeline turns it into
// TOOL_TIMEOUT; see its tests); a cancelled parent is not a timeout.
func TestINV_MCP_TIMEOUT_004_TimeoutErrorCode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, stop := Watch(context.Background(), 10*time.Millisecond, func(time.Duration) {})
		<-ctx.Done()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("ctx.Err() = %v", ctx.Err())
		}
		synctest.Wait() // the timer's callback has run
		if out := stop(); !out.TimedOut {
			t.Errorf("out = %+v, want TimedOut", out)
		}
	})
	parent, cancel := context.WithCancel(context.Background())
	cancel()
	var fired atomic.Bool
	ctx, stop := Watch(parent, time.Second, func(time.Duration) { fired.Store(true) })
	<-ctx.Done()
	if out := stop(); out.TimedOut || fired.Load() || !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("cancelled parent: out=%+v fired=%v err=%v", out, fired.Load(), ctx.Err())
	}
}

// TestINV_MCP_TIMEOUT_005_DurationTracking: completed and timed-out calls
// report their elapsed time.
func TestINV_MCP_TIMEOUT_005_DurationTracking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, stop := Watch(context.Background(), time.Second, func(time.Duration) { t.Error("fired early") })
		time.Sleep(5 * time.Millisecond) // the call's work, on the bubble's clock
		if out := stop(); out.TimedOut || out.Elapsed != 5*time.Millisecond {
			t.Errorf("completed: %+v, want 5ms", out)
		}
		ctx, stop := Watch(context.Background(), 5*time.Millisecond, func(time.Duration) {})
		<-ctx.Done()
		time.Sleep(5 * time.Millisecond) // the handler ignores its deadline
		if out := stop(); !out.TimedOut || out.Elapsed != 10*time.Millisecond {
			t.Errorf("timed out: %+v, want 10ms", out)
		}
	})
}

// A call that finishes in time never fires the callback, however many.
func TestWatch_FastCallsNeverFire(t *testing.T) {
	for range 2000 {
		_, stop := Watch(context.Background(), time.Second, func(time.Duration) { t.Error("fired") })
		if out := stop(); out.TimedOut {
			t.Fatalf("%+v", out)
		}
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
