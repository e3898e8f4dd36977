package config

import (
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/runtime/limits"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
)

// Timeouts configures tool-call timeouts (INV-MCP-TIMEOUT-001…005).
type Timeouts struct {
	// DefaultTimeoutMs applies to a tool whose category has no timeout.
	DefaultTimeoutMs int64 `yaml:"defaultTimeoutMs"`
	// ToolTimeouts are the per-category timeouts.
	ToolTimeouts ToolTimeouts `yaml:"toolTimeouts"`
	// ToolOverrides beat the category, keyed by canonical (memory.store)
	// or exposed (memory_store) tool name.
	ToolOverrides map[string]int64 `yaml:"toolOverrides"`
}

// ToolTimeouts are the per-category timeouts in milliseconds.
type ToolTimeouts struct {
	Query     int64 `yaml:"query"`
	Mutation  int64 `yaml:"mutation"`
	Scan      int64 `yaml:"scan"`
	Execution int64 `yaml:"execution"`
}

// Limits configures request limits (INV-MCP-LIMIT-001…004).
type Limits struct {
	MaxArraySize    int   `yaml:"maxArraySize"`
	MaxStringLength int   `yaml:"maxStringLength"`
	MaxObjectDepth  int   `yaml:"maxObjectDepth"`
	MaxRequestBytes int64 `yaml:"maxRequestBytes"`
	// ToolArrayLimits beat MaxArraySize for the named tools.
	ToolArrayLimits map[string]int `yaml:"toolArrayLimits"`
}

// Response configures the response envelope's size limits
// (INV-MCP-RESP-003, -004).
type Response struct {
	MaxResponseBytes int    `yaml:"maxResponseBytes"`
	MaxListItems     int    `yaml:"maxListItems"`
	MaxStringLength  int    `yaml:"maxStringLength"`
	TruncationSuffix string `yaml:"truncationSuffix"`
}

// The defaults come from the runtime packages, which take them from the
// PRD, so they are written down once.
func defaultTimeouts() Timeouts {
	d := timeout.DefaultConfig()
	return Timeouts{
		DefaultTimeoutMs: d.Default.Milliseconds(),
		ToolTimeouts: ToolTimeouts{
			Query: d.Categories[timeout.Query].Milliseconds(), Mutation: d.Categories[timeout.Mutation].Milliseconds(),
			Scan: d.Categories[timeout.Scan].Milliseconds(), Execution: d.Categories[timeout.Execution].Milliseconds(),
		},
		ToolOverrides: map[string]int64{},
	}
}

func defaultLimits() Limits {
	d := limits.DefaultConfig()
	return Limits{
		MaxArraySize: d.MaxArraySize, MaxStringLength: d.MaxStringLength, MaxObjectDepth: d.MaxObjectDepth,
		MaxRequestBytes: d.MaxRequestBytes, ToolArrayLimits: d.ToolArrayLimits,
	}
}

func defaultResponse() Response {
	d := response.DefaultLimits()
	return Response{MaxResponseBytes: d.MaxResponseBytes, MaxListItems: d.MaxListItems,
		MaxStringLength: d.MaxStringLength, TruncationSuffix: d.TruncationSuffix}
}

// TimeoutConfig returns the timeouts as runtime/timeout takes them.
func (t Timeouts) TimeoutConfig() timeout.Config {
	c := timeout.Config{
		Default: ms(t.DefaultTimeoutMs),
		Categories: map[timeout.Category]time.Duration{
			timeout.Query: ms(t.ToolTimeouts.Query), timeout.Mutation: ms(t.ToolTimeouts.Mutation),
			timeout.Scan: ms(t.ToolTimeouts.Scan), timeout.Execution: ms(t.ToolTimeouts.Execution),
		},
		Overrides: make(map[string]time.Duration, len(t.ToolOverrides)),
	}
	for name, v := range t.ToolOverrides {
		c.Overrides[name] = ms(v)
	}
	return c
}

// LimitsConfig returns the limits as runtime/limits takes them.
func (l Limits) LimitsConfig() limits.Config {
	arr := make(map[string]int, len(l.ToolArrayLimits))
	for k, v := range l.ToolArrayLimits {
		arr[k] = v
	}
	return limits.Config{MaxArraySize: l.MaxArraySize, MaxStringLength: l.MaxStringLength,
		MaxObjectDepth: l.MaxObjectDepth, MaxRequestBytes: l.MaxRequestBytes, ToolArrayLimits: arr}
}

// ResponseLimits returns the response limits as runtime/response takes them.
func (r Response) ResponseLimits() response.Limits {
	return response.Limits{MaxResponseBytes: r.MaxResponseBytes, MaxListItems: r.MaxListItems,
		MaxStringLength: r.MaxStringLength, TruncationSuffix: r.TruncationSuffix}
}

// validateRuntime checks the guardrail sections with the rules of the
// packages that use them; their errors name the keys as YAML does.
func (c Config) validateRuntime() []error {
	var errs []error
	for _, t := range []int64{c.Timeouts.DefaultTimeoutMs, c.Timeouts.ToolTimeouts.Query, c.Timeouts.ToolTimeouts.Mutation,
		c.Timeouts.ToolTimeouts.Scan, c.Timeouts.ToolTimeouts.Execution} {
		if t > maxDurationMs {
			errs = append(errs, &FieldError{Key: "timeouts", Value: t, Want: "timeouts below 292 years"})
			return errs
		}
	}
	if err := c.Timeouts.TimeoutConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Limits.LimitsConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Response.ResponseLimits().Validate(); err != nil {
		errs = append(errs, err)
	}
	return errs
}
