// Package timeout bounds every tool call (INV-MCP-TIMEOUT-001..005).
//
// A tool has a category — query, mutation, scan or execution — set when it
// is registered, never a timeout of its own in code (INV-MCP-TIMEOUT-002).
// The timeout is the tool's override if the configuration has one
// (INV-MCP-TIMEOUT-003), else its category's, else the default.
//
// Watch gives the handler a context with that deadline and calls back at
// the deadline if the handler has not finished, so the call is answered on
// time even when the handler ignores its context (INV-MCP-TIMEOUT-001); the
// caller turns that into TOOL_TIMEOUT (INV-MCP-TIMEOUT-004) and reports the
// measured duration (INV-MCP-TIMEOUT-005).
package timeout

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"time"
)

// Category is a tool's timeout class (docs/spec/optimization-prd.md, Feature 2).
type Category string

const (
	Query     Category = "query"     // quick reads
	Mutation  Category = "mutation"  // writes
	Scan      Category = "scan"      // scans and analyses
	Execution Category = "execution" // agent and workflow runs
)

// Valid reports whether c is one of the four categories.
func (c Category) Valid() bool {
	switch c {
	case Query, Mutation, Scan, Execution:
		return true
	}
	return false
}

// Config holds the timeouts. Overrides are keyed by the tool's canonical
// name (memory.store) or its exposed name (memory_store).
type Config struct {
	Default    time.Duration
	Categories map[Category]time.Duration
	Overrides  map[string]time.Duration
}

// DefaultConfig returns the PRD's defaults: 30 s default; query 10 s,
// mutation 30 s, scan 120 s, execution 20 min.
func DefaultConfig() Config {
	return Config{
		Default: 30 * time.Second,
		Categories: map[Category]time.Duration{
			Query: 10 * time.Second, Mutation: 30 * time.Second,
			Scan: 2 * time.Minute, Execution: 20 * time.Minute,
		},
		Overrides: map[string]time.Duration{},
	}
}

// Validate checks every timeout is positive and every category known; it
// names keys as the configuration file does.
func (c Config) Validate() error {
	if c.Default <= 0 {
		return fmt.Errorf("timeouts.defaultTimeoutMs: must be positive, got %v", c.Default)
	}
	for cat, d := range c.Categories {
		if !cat.Valid() {
			return fmt.Errorf("timeouts.toolTimeouts.%s: unknown category; use query, mutation, scan or execution", cat)
		}
		if d <= 0 {
			return fmt.Errorf("timeouts.toolTimeouts.%s: must be positive, got %v", cat, d)
		}
	}
	names := make([]string, 0, len(c.Overrides))
	for name := range c.Overrides {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if c.Overrides[name] <= 0 {
			return fmt.Errorf("timeouts.toolOverrides.%s: must be positive, got %v", name, c.Overrides[name])
		}
	}
	return nil
}

// For returns the timeout of a tool: its override (by canonical or
// exposed name), else its category's, else the default.
func (c Config) For(canonical, exposed string, cat Category) time.Duration {
	if d, ok := c.Overrides[canonical]; ok {
		return d
	}
	if d, ok := c.Overrides[exposed]; ok {
		return d
	}
	if d, ok := c.Categories[cat]; ok {
		return d
	}
	return c.Default
}

// Watch returns ctx with a deadline d from now and arranges for onExpiry
// to run, on a timer goroutine, if the deadline passes before stop is
// called. The caller runs its work inline, on its own goroutine (no
// goroutine per call), and calls stop when done: stop reports the elapsed
// time and whether the deadline had passed. onExpiry is how a call is
// answered on time even when its handler ignores ctx
// (INV-MCP-TIMEOUT-001): the transport sends the TOOL_TIMEOUT response
// while the handler is still running, and drops what it returns later.
func Watch(ctx context.Context, d time.Duration, onExpiry func(elapsed time.Duration)) (context.Context, func() Outcome) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d)
	var fired atomic.Bool
	timer := time.AfterFunc(d, func() {
		fired.Store(true)
		onExpiry(time.Since(start))
	})
	return ctx, func() Outcome {
		stopped := timer.Stop()
		cancel()
		return Outcome{Elapsed: time.Since(start), TimedOut: !stopped || fired.Load()}
	}
}

// Outcome is how a watched call ended.
type Outcome struct {
	TimedOut bool
	Elapsed  time.Duration
}
