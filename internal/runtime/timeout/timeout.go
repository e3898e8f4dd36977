// Package timeout bounds every tool call (INV-MCP-TIMEOUT-001..005).
//
// A tool has a category — query, mutation, scan or execution — set when it
// is registered, never a timeout of its own in code (INV-MCP-TIMEOUT-002).
// The timeout is the tool's override if the configuration has one
// (INV-MCP-TIMEOUT-003), else its category's, else the default.
//
// Run gives the handler a context with that deadline and returns when the
// handler does or when the deadline passes, whichever is first: a handler
// that ignores its context cannot hold the call (INV-MCP-TIMEOUT-001). It
// then reports a timeout, which the caller turns into TOOL_TIMEOUT
// (INV-MCP-TIMEOUT-004), and the measured duration (INV-MCP-TIMEOUT-005).
package timeout

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Category is a tool's timeout class (optimization-prd.md, Feature 2).
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

// Outcome is how a run ended.
type Outcome struct {
	TimedOut bool
	Elapsed  time.Duration
}

// Run calls fn with a context that expires after d and returns its result,
// or, if d passes first, the zero result and TimedOut. fn runs on its own
// goroutine so that a handler ignoring its context cannot delay the
// answer; it is left to finish on its own (its context is done, so a
// well-behaved handler stops at once), and what it returns late is dropped.
func Run[R any](ctx context.Context, d time.Duration, fn func(context.Context) (R, error)) (R, Outcome, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d)
	// Cancelled when Run returns, never by the handler's goroutine: a
	// finished result must not race its own cancellation below.
	defer cancel()
	type result struct {
		r   R
		err error
	}
	done := make(chan result, 1) // buffered: a late handler never blocks
	go func() {
		var res result
		defer func() {
			if v := recover(); v != nil {
				res = result{err: fmt.Errorf("tool handler panicked: %v", v)}
			}
			done <- res
		}()
		res.r, res.err = fn(ctx)
	}()
	// finished reports a handler's own result; one that gave up because
	// its deadline passed (a handler honouring ctx) timed out all the same.
	finished := func(res result) (R, Outcome, error) {
		out := Outcome{Elapsed: time.Since(start)}
		out.TimedOut = ctx.Err() == context.DeadlineExceeded && errors.Is(res.err, context.DeadlineExceeded)
		return res.r, out, res.err
	}
	select {
	case res := <-done:
		return finished(res)
	case <-ctx.Done():
		select {
		case res := <-done: // finished just as the deadline passed
			return finished(res)
		default:
		}
		var zero R
		out := Outcome{Elapsed: time.Since(start)}
		if ctx.Err() == context.DeadlineExceeded {
			out.TimedOut = true
			return zero, out, context.DeadlineExceeded
		}
		return zero, out, ctx.Err()
	}
}
