// Package guard is the runtime's gate policy (docs/spec/optimization-prd.md, "Guard
// Policy"): before a tool runs, memory pressure, request size and array
// sizes are checked in that order and the first gate that fails rejects the
// call; after it runs, a call that used more than 80 % of its timeout is
// audited. Every decision is logged and counted, so an operator can see why
// a call was refused or why memory is tight.
package guard

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/runtime/limits"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
)

// Pressure is a memory pressure level, as the cache reports it.
type Pressure string

const (
	PressureLow      Pressure = "low"
	PressureMedium   Pressure = "medium"
	PressureHigh     Pressure = "high"
	PressureCritical Pressure = "critical"
)

// Input is what the gates look at before a call.
type Input struct {
	Tool         string
	RequestBytes int64
	Violations   []limits.Violation
}

// Stats counts the policy's decisions since start.
type Stats struct {
	RejectedPressure  int64
	RejectedSize      int64
	RejectedArrays    int64
	PressureWarnings  int64
	NearTimeoutAudits int64
	SourceFailures    int64 // the pressure source failed (the gate passed)
}

// Policy runs the gates.
type Policy struct {
	log             zerolog.Logger
	maxRequestBytes int64
	pressure        func() Pressure

	rejectedPressure, rejectedSize, rejectedArrays atomic.Int64
	pressureWarnings, nearTimeout, sourceFailures  atomic.Int64
}

// NewPolicy returns a policy. pressure reports the current memory pressure
// (nil: the gate always passes); maxRequestBytes bounds a call's arguments.
func NewPolicy(log zerolog.Logger, maxRequestBytes int64, pressure func() Pressure) *Policy {
	return &Policy{log: log, maxRequestBytes: maxRequestBytes, pressure: pressure}
}

// Before runs the pre-call gates in order and returns the first failure as
// a tool error, or nil when the call may proceed.
func (p *Policy) Before(in Input) *response.Error {
	if rej := p.MemoryGate(in.Tool); rej != nil {
		return rej
	}
	return p.Limits(in)
}

// MemoryGate is Before's first gate, on its own: the memory-pressure
// check, which rejects a call of tool while pressure is critical.
func (p *Policy) MemoryGate(tool string) *response.Error {
	in := Input{Tool: tool}
	if p.pressure != nil {
		switch p.level(in.Tool) {
		case PressureCritical:
			p.rejectedPressure.Add(1)
			p.log.Warn().Str("gate", "memory-pressure-check").Str("tool", in.Tool).
				Msg("guard: rejected: memory pressure is critical")
			return response.NewError(response.CodeMemoryPressure,
				"memory pressure is critical; retry shortly (recommendation: wait for cache eviction or raise the memory limit)").
				WithRetryAfter(time.Second)
		case PressureHigh:
			p.pressureWarnings.Add(1)
			p.log.Warn().Str("gate", "memory-pressure-check").Str("tool", in.Tool).
				Msg("guard: memory pressure is high; consider reducing cache usage")
		}
	}
	return nil
}

// Limits is Before's gates after the memory gate: the request size and
// the argument limits' violations.
func (p *Policy) Limits(in Input) *response.Error {
	if p.maxRequestBytes > 0 && in.RequestBytes > p.maxRequestBytes {
		p.rejectedSize.Add(1)
		p.log.Warn().Str("gate", "request-size-check").Str("tool", in.Tool).
			Int64("actual", in.RequestBytes).Int64("limit", p.maxRequestBytes).Msg("guard: rejected: request too large")
		return response.NewError(response.CodeInvalidInput,
			"request size (%d bytes) exceeds limit (%d bytes); reduce the payload", in.RequestBytes, p.maxRequestBytes).
			WithContext("violations", []limits.Violation{{Code: limits.CodeRequestTooLarge, Limit: p.maxRequestBytes, Actual: in.RequestBytes,
				Message: "arguments exceed maxRequestBytes"}})
	}
	if len(in.Violations) > 0 {
		return p.rejectViolations(in)
	}
	return nil
}

// level reads the pressure source. A failing source (the cache behind it,
// say) must not stop tool calls (INV-MCP-XC-002): it is logged, counted,
// and the gate passes.
func (p *Policy) level(tool string) (lvl Pressure) {
	defer func() {
		if v := recover(); v != nil {
			p.sourceFailures.Add(1)
			p.log.Error().Interface("panic", v).Str("gate", "memory-pressure-check").Str("tool", tool).
				Msg("guard: pressure source failed; gate passes")
			lvl = PressureLow
		}
	}()
	return p.pressure()
}

// rejectViolations turns limit violations into one error listing all of
// them (INV-MCP-LIMIT-004): ARRAY_TOO_LARGE when any array is too large,
// INVALID_INPUT for the other limits.
func (p *Policy) rejectViolations(in Input) *response.Error {
	code := response.CodeInvalidInput
	for _, v := range in.Violations {
		if v.Code == limits.CodeArrayTooLarge {
			code = response.CodeArrayTooLarge
		}
	}
	// A hostile document can hold a violation every few bytes: the error
	// names the first maxReported in full and counts the rest.
	shown := in.Violations[:min(len(in.Violations), maxReported)]
	parts := make([]string, 0, len(shown)+1)
	// The log gets the codes and sizes only: a path is made of the
	// argument's keys, and no tool argument, key or value, is logged.
	codes := make([]string, 0, len(shown))
	for _, v := range shown {
		parts = append(parts, fmt.Sprintf("%s: %s (%d, max %d)", pathOrRoot(v.Path), v.Code, v.Actual, v.Limit))
		codes = append(codes, fmt.Sprintf("%s (%d, max %d)", v.Code, v.Actual, v.Limit))
	}
	if more := len(in.Violations) - len(shown); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	if code == response.CodeArrayTooLarge {
		p.rejectedArrays.Add(1)
	} else {
		p.rejectedSize.Add(1)
	}
	p.log.Warn().Str("gate", "array-size-check").Str("tool", in.Tool).Int("violationCount", len(in.Violations)).
		Str("violations", strings.Join(codes, "; ")).Msg("guard: rejected: request limits exceeded")
	return response.NewError(code, "request limits exceeded: %s; reduce sizes or paginate", strings.Join(parts, "; ")).
		WithContext("violations", shown).WithContext("violationCount", len(in.Violations))
}

// maxReported bounds the violations one rejection carries.
const maxReported = 20

func pathOrRoot(p string) string {
	if p == "" {
		return "(arguments)"
	}
	return p
}

// After audits a finished call: over 80 % of its timeout is logged as a
// near_timeout event with the ratio, so timeouts can be tuned before they
// fire.
func (p *Policy) After(tool string, elapsed, timeout time.Duration) {
	if timeout <= 0 {
		return
	}
	ratio := float64(elapsed) / float64(timeout)
	if ratio <= 0.8 {
		return
	}
	p.nearTimeout.Add(1)
	p.log.Warn().Str("gate", "timeout-audit").Str("event", "near_timeout").Str("tool", tool).
		Int64("durationMs", elapsed.Milliseconds()).Int64("timeoutMs", timeout.Milliseconds()).
		Str("ratio", fmt.Sprintf("%.1f%%", ratio*100)).Msg("guard: tool call near its timeout")
}

// Stats returns the decision counters.
func (p *Policy) Stats() Stats {
	return Stats{
		RejectedPressure: p.rejectedPressure.Load(), RejectedSize: p.rejectedSize.Load(),
		RejectedArrays: p.rejectedArrays.Load(), PressureWarnings: p.pressureWarnings.Load(),
		NearTimeoutAudits: p.nearTimeout.Load(), SourceFailures: p.sourceFailures.Load(),
	}
}
