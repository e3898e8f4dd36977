// Package pipeline applies the runtime guardrails to a tool: it turns a
// tool that returns data into the handlers of a guarded tool, whose every
// call goes through the request path of DESIGN.md, steps 3 to 7:
//
//  1. request limits, one walk over the arguments (runtime/limits,
//     INV-MCP-LIMIT-*), and the guard gates (runtime/guard), before the
//     arguments are even validated against the schema;
//  2. a deadline from the tool's category or override (runtime/timeout,
//     INV-MCP-TIMEOUT-*), enforced even against a handler that ignores it;
//  3. the response envelope with its error codes, retryable flag and
//     truncation (runtime/response, INV-MCP-RESP-*), and durationMs on
//     every result, completed, failed or timed out;
//  4. the near-timeout audit.
//
// It knows nothing of the MCP layer (docs/architecture-layers.md): it is
// generic in the call type, of which it reads only what Call declares, so
// a tool's Run gets the MCP layer's call whole. Package guarded
// instantiates it with handlers.ToolCall and registers the result.
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/guard"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/limits"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry/mcpconv"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
	"github.com/mcp-runtime/mcp-runtime/internal/toolname"
)

// Call is what the guardrails read of one tool call.
type Call interface {
	// ToolName is the canonical name of the tool called.
	ToolName() string
	// RawArguments are the arguments as the client sent them.
	RawArguments() json.RawMessage
	// ClientSessionID is the id of the call's client session, "" without one.
	ClientSessionID() string
	// AnswerEarly sends res as the call's response before the handler
	// returns; false if it was already answered.
	AnswerEarly(res *protocol.CallToolResult) bool
}

// Tool is a tool as the pipeline takes it: Run returns the data of a
// successful call or an error (a *response.Error keeps its code; other
// errors map through response.FromError). Title, Description,
// InputSchema, Annotations and LongRunning are carried to the guarded
// tool for the registry.
type Tool[C Call] struct {
	Name        string // canonical dotted name
	Title       string
	Description string
	InputSchema json.RawMessage
	Annotations *protocol.ToolAnnotations
	// Category decides the timeout (INV-MCP-TIMEOUT-002): there is no
	// per-tool timeout in code, only the configuration's override.
	Category    timeout.Category
	LongRunning bool
	// PassThrough marks a tool whose successful Run returns a
	// response.Passed: another server's result, passed on as it was sent
	// (response.PassThrough) instead of wrapped in the envelope. Its
	// outputSchema is OutputSchema, the other server's (nil for none),
	// and the failures the guardrails answer carry their envelope in the
	// text block only when there is one, since it does not match that
	// schema (DESIGN.md, "Gateway fidelity").
	PassThrough  bool
	OutputSchema json.RawMessage
	Run          func(ctx context.Context, call C) (any, error)
}

// Guarded is a Tool with the guardrails around it: the functions and the
// outputSchema the tool registry takes (handlers.Tool's Precheck, Invalid,
// Handler and OutputSchema), besides the tool's own description.
type Guarded[C Call] struct {
	Tool[C]
	// Output is the outputSchema to list: the envelope's JSON Schema, or
	// the other server's (Tool.OutputSchema) for a PassThrough tool.
	Output json.RawMessage
	// Precheck runs the limits and the guard gates before the arguments
	// are validated against the schema; a non-nil result rejects the call.
	Precheck func(ctx context.Context, call C) *protocol.CallToolResult
	// Invalid answers a call whose arguments fail the input schema.
	Invalid func(ctx context.Context, call C, message string) *protocol.CallToolResult
	// Handler runs the call under its deadline and builds the envelope.
	Handler func(ctx context.Context, call C) (*protocol.CallToolResult, error)
}

// Config holds the guardrails' settings.
type Config struct {
	Limits   limits.Config
	Timeouts timeout.Config
	Response response.Limits
	// Separator is the exposed-name separator, to match configuration
	// keys given either as canonical or exposed names.
	Separator string
	// Record, if set, is told about every call once it has its result —
	// completed, failed, timed out or rejected before running. It runs on
	// the request's goroutine and must not block (the trace recorder
	// queues and drops when full).
	Record func(CallRecord)
	// Admit, if set, decides first whether the call may run at all (the
	// caller's rate limit, rateLimits.toolCalls); a non-nil error (RATE_LIMITED
	// with retryAfterMs) answers the call, which is recorded like any
	// other rejection.
	Admit func(ctx context.Context, tool string) *response.Error
	// Tracer, if set, records the guardrails as child spans of the call's
	// span (mcpconv.SpanRateLimit, SpanLimits, SpanTimeout) and the
	// envelope's error code on it — only when that span is recorded, so
	// an unsampled or untraced call pays nothing
	// (docs/adr/0046-opentelemetry.md).
	Tracer trace.Tracer
}

// CallRecord describes one finished tools/call for the trace: sizes, never
// the arguments themselves.
type CallRecord struct {
	Tenant   string
	Tool     string // canonical name
	Category timeout.Category
	// ClientSession is the client session's id, a credential: it stays
	// in process, and a stored trace keeps only its
	// store.ClientSessionHandle.
	ClientSession string
	ErrorCode     response.Code // "" when the call succeeded
	Duration      time.Duration
	ArgBytes      int
	ResultBytes   int // the envelope's length
	// TraceID is the OpenTelemetry trace the call belongs to, in hex, when
	// that trace is sampled; "" otherwise.
	TraceID string
}

// inputNeeded is what an error of Run says when the tool needs the
// client's input before it can answer: a round of a multi-round-trip
// request (basic/patterns/mrtr; docs/adr/0055-multi-round-trip-requests.md).
// Such an error passes through the guardrails as it is, neither an
// envelope nor a failure.
type inputNeeded interface{ InputNeeded() bool }

// Result lets Run report how its data was obtained; returning a Result
// instead of bare data sets the envelope's metadata.cached.
type Result struct {
	Data   any
	Cached bool
}

// Pipeline wraps tools in the guardrails.
type Pipeline[C Call] struct {
	cfg     Config
	checker *limits.Checker
	guard   *guard.Policy
	log     zerolog.Logger
}

// New validates cfg and returns a pipeline whose gates use policy.
func New[C Call](cfg Config, policy *guard.Policy, log zerolog.Logger) (*Pipeline[C], error) {
	if err := cfg.Timeouts.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Response.Validate(); err != nil {
		return nil, err
	}
	checker, err := limits.New(cfg.Limits, limits.WithSeparator(cfg.Separator))
	if err != nil {
		return nil, err
	}
	return &Pipeline[C]{cfg: cfg, checker: checker, guard: policy, log: log}, nil
}

// Wrap returns t with the guardrails around it and the envelope's JSON
// Schema as its outputSchema.
func (p *Pipeline[C]) Wrap(t Tool[C]) (Guarded[C], error) {
	if !t.Category.Valid() {
		return Guarded[C]{}, fmt.Errorf("tool %s: category %q: use query, mutation, scan or execution", t.Name, t.Category)
	}
	if t.Run == nil {
		return Guarded[C]{}, fmt.Errorf("tool %s: Run is nil", t.Name)
	}
	exposed := toolname.Exposed(t.Name, p.cfg.Separator)
	limit := p.cfg.Timeouts.For(t.Name, exposed, t.Category)
	output := response.EnvelopeSchema()
	if t.PassThrough {
		output = t.OutputSchema
	}
	return Guarded[C]{
		Tool: t, Output: output,
		Precheck: p.precheck(t),
		Invalid: func(ctx context.Context, call C, msg string) *protocol.CallToolResult {
			return p.fail(ctx, call, t, time.Now(), response.NewError(response.CodeInvalidInput, "%s", msg))
		},
		Handler: p.handler(t, exposed, limit),
	}, nil
}

// failure is the guardrails' answer to a failed call of t: the envelope,
// without its structuredContent when t lists another server's
// outputSchema, which the envelope does not match (a client validating
// structuredContent against the listed schema would reject the answer).
func (p *Pipeline[C]) failure(t Tool[C], e *response.Error, meta response.Metadata) *protocol.CallToolResult {
	res := response.Failure(e, meta, p.cfg.Response)
	if t.PassThrough && len(t.OutputSchema) > 0 {
		res.StructuredContent, res.StructuredCompact = nil, false
	}
	return res
}

func (p *Pipeline[C]) precheck(t Tool[C]) func(context.Context, C) *protocol.CallToolResult {
	name := t.Name
	return func(ctx context.Context, call C) *protocol.CallToolResult {
		start := time.Now()
		if p.cfg.Admit != nil {
			actx, sp := p.span(ctx, mcpconv.SpanRateLimit)
			rej := p.cfg.Admit(actx, name)
			endSpan(sp, codeOf(rej))
			if rej != nil {
				return p.fail(ctx, call, t, start, rej)
			}
		}
		_, sp := p.span(ctx, mcpconv.SpanMemoryGate)
		rej := p.guard.MemoryGate(name)
		endSpan(sp, codeOf(rej))
		if rej != nil {
			return p.fail(ctx, call, t, start, rej)
		}
		_, sp = p.span(ctx, mcpconv.SpanLimits)
		args := call.RawArguments()
		var violations []limits.Violation
		if len(args) > 0 {
			violations = p.checker.Check(name, args)
		}
		rej = p.guard.Limits(guard.Input{Tool: name, RequestBytes: int64(len(args)), Violations: violations})
		endSpan(sp, codeOf(rej))
		if rej == nil {
			return nil
		}
		return p.fail(ctx, call, t, start, rej)
	}
}

// fail answers a call rejected before its handler ran, and records it.
func (p *Pipeline[C]) fail(ctx context.Context, call C, t Tool[C], start time.Time, e *response.Error) *protocol.CallToolResult {
	d := time.Since(start)
	res := p.failure(t, e, response.Metadata{DurationMs: d.Milliseconds()})
	p.record(ctx, call, t.Category, e.Code, d, res)
	return res
}

func (p *Pipeline[C]) record(ctx context.Context, call C, cat timeout.Category, code response.Code, d time.Duration, res *protocol.CallToolResult) {
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		sp.SetAttributes(mcpconv.ToolIsError.Bool(code != ""))
		if code != "" {
			sp.SetAttributes(mcpconv.ErrorCode.String(string(code)))
		}
	}
	if p.cfg.Record == nil {
		return
	}
	rec := CallRecord{Tenant: tenant.From(ctx), Tool: call.ToolName(), Category: cat, ErrorCode: code, Duration: d,
		ArgBytes: len(call.RawArguments()), ClientSession: call.ClientSessionID()}
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		rec.TraceID = sc.TraceID().String()
	}
	if res != nil {
		rec.ResultBytes = len(res.StructuredContent)
	}
	p.cfg.Record(rec)
}

func (p *Pipeline[C]) handler(t Tool[C], exposed string, limit time.Duration) func(context.Context, C) (*protocol.CallToolResult, error) {
	timedOut := func(elapsed time.Duration) *protocol.CallToolResult {
		e := response.NewError(response.CodeToolTimeout, "%s did not finish within %s", exposed, limit).
			WithContext("timeoutMs", limit.Milliseconds())
		return p.failure(t, e, response.Metadata{DurationMs: elapsed.Milliseconds()})
	}
	return func(ctx context.Context, call C) (*protocol.CallToolResult, error) {
		// The handler runs on this goroutine; at the deadline the watchdog
		// answers the client with TOOL_TIMEOUT through the peer, even if
		// the handler ignores ctx and keeps this goroutine
		// (INV-MCP-TIMEOUT-001, -004).
		rctx, sp := p.span(ctx, mcpconv.SpanTimeout)
		if sp != nil {
			sp.SetAttributes(mcpconv.TimeoutMs.Int64(limit.Milliseconds()))
		}
		rctx, stop := timeout.Watch(rctx, limit, func(elapsed time.Duration) { call.AnswerEarly(timedOut(elapsed)) })
		data, err := p.run(rctx, t, call)
		out := stop()
		if out.TimedOut {
			endSpan(sp, response.CodeToolTimeout)
		} else {
			endSpan(sp, "")
		}
		p.guard.After(t.Name, out.Elapsed, limit)
		var round inputNeeded
		if !out.TimedOut && errors.As(err, &round) && round.InputNeeded() {
			// Not the call's end: the MCP layer asks the client and the
			// call runs again with its answers; that run is the one
			// recorded, with its result.
			return nil, err
		}
		res, code, err := p.result(t, out, timedOut, data, err)
		p.record(ctx, call, t.Category, code, out.Elapsed, res)
		return res, err
	}
}

// result turns what Run returned into the envelope and its error code.
func (p *Pipeline[C]) result(t Tool[C], out timeout.Outcome, timedOut func(time.Duration) *protocol.CallToolResult, data any, err error) (*protocol.CallToolResult, response.Code, error) {
	if out.TimedOut {
		return timedOut(out.Elapsed), response.CodeToolTimeout, nil // dropped if the watchdog answered first
	}
	meta := response.Metadata{DurationMs: out.Elapsed.Milliseconds()}
	if err != nil {
		if perr, ok := err.(*protocol.Error); ok {
			return nil, response.CodeInternalError, perr
		}
		rerr := response.FromError(err)
		if rerr.Code == response.CodeInternalError {
			// The message the client sees is generic; the cause is here.
			p.log.Error().Err(err).Str("tool", t.Name).Msg("tool failed")
		}
		return p.failure(t, rerr, meta), rerr.Code, nil
	}
	if r, ok := data.(Result); ok {
		data, meta.Cached = r.Data, r.Cached
	}
	if passed, ok := data.(response.Passed); ok && t.PassThrough {
		res, err := response.PassThrough(passed, meta, p.cfg.Response)
		if err != nil {
			rerr := response.FromError(err)
			if rerr.Code == response.CodeInternalError {
				p.log.Error().Err(err).Str("tool", t.Name).Msg("pass on tool result")
			}
			return p.failure(t, rerr, meta), rerr.Code, nil
		}
		if res.IsError {
			// The tool's own failure, passed on as it said it; the trace
			// counts it as one.
			return res, response.CodeOperationFailed, nil
		}
		return res, "", nil
	}
	res, err := response.Success(data, meta, p.cfg.Response)
	if err != nil {
		p.log.Error().Err(err).Str("tool", t.Name).Msg("encode tool result")
		e := response.NewError(response.CodeInternalError, "the tool's result could not be encoded")
		return p.failure(t, e, meta), e.Code, nil
	}
	return res, "", nil
}

// run calls the tool, turning a panic into an error so it is reported in
// the envelope like any failure (INV-MCP-XC-001).
func (p *Pipeline[C]) run(ctx context.Context, t Tool[C], call C) (data any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("tool %s panicked: %v", t.Name, v)
		}
	}()
	return t.Run(ctx, call)
}

// ErrInvalid is a convenience for Run functions: an INVALID_INPUT error.
func ErrInvalid(format string, args ...any) error {
	return response.NewError(response.CodeInvalidInput, format, args...)
}
