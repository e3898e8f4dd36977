package statetools

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/guarded"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

const (
	toolFilterProp = `"tool":{"type":"string","minLength":1,"maxLength":256,"description":"Canonical dotted tool name, e.g. memory.store."}`
	sinceProp      = `"since":{"type":"string","format":"date-time","description":"Only calls started at or after this RFC 3339 time."}`
)

func (t *tools) traceTools() []guarded.Tool {
	return []guarded.Tool{
		{
			Name:  "trace.list",
			Title: "List tool-call traces",
			Description: "Lists recorded tool calls newest first: tool, client session handle (the same for every call of one client session, never its id), " +
				"status, error code, duration and sizes (never the arguments). " +
				"Traces are written in batches, so the last fraction of a second may not be listed yet. " +
				"Failed calls are always recorded; successful ones may be sampled. Pass the returned nextCursor for the next page.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + toolFilterProp + `,` +
				`"status":{"type":"string","enum":["ok","error"]},` + sinceProp + `,` +
				`"cursor":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100,"default":50}` +
				`},"additionalProperties":false}`),
			Annotations: readOnly(),
			Category:    timeout.Query,
			Run:         t.traceList,
		},
		{
			Name:        "trace.get",
			Title:       "Get a trace",
			Description: "Returns one recorded tool call by its trace id.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"traceId":{"type":"string","minLength":1,"maxLength":128}},"required":["traceId"],"additionalProperties":false}`),
			Annotations: readOnly(),
			Category:    timeout.Query,
			Run:         t.traceGet,
		},
		{
			Name:  "trace.analyze",
			Title: "Analyze tool calls",
			Description: "Summarizes recorded tool calls per tool: number of calls, error rate, p50/p95/p99 duration in milliseconds and the most frequent error codes. " +
				"Use it to find slow or failing tools. When successful calls are sampled (sampleRate below 1 in the result), the figures are over the recorded traces, " +
				"in which failed calls are over-represented, and estimatedCalls and estimatedErrorRate estimate all calls.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + toolFilterProp + `,` + sinceProp + `},"additionalProperties":false}`),
			Annotations: readOnly(),
			Category:    timeout.Scan,
			Run:         t.traceAnalyze,
		},
	}
}

func (t *tools) traceList(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		Tool   string `json:"tool"`
		Status string `json:"status"`
		Since  string `json:"since"`
		Cursor string `json:"cursor"`
		Limit  int    `json:"limit"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	since, err := parseSince(a.Since)
	if err != nil {
		return nil, err
	}
	page, err := t.b.ListTraces(ctx, tenant.From(ctx), store.ListTraces{Tool: a.Tool, Status: a.Status, Since: since, Cursor: a.Cursor, Limit: a.Limit})
	if err != nil {
		return nil, t.storeError(err)
	}
	if page.Items == nil {
		page.Items = []store.Trace{}
	}
	return page, nil
}

func (t *tools) traceGet(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		TraceID string `json:"traceId"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	tr, err := t.b.GetTrace(ctx, tenant.From(ctx), a.TraceID)
	return tr, t.storeError(err)
}

func (t *tools) traceAnalyze(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		Tool  string `json:"tool"`
		Since string `json:"since"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	since, err := parseSince(a.Since)
	if err != nil {
		return nil, err
	}
	stats, err := t.b.AnalyzeTraces(ctx, tenant.From(ctx), store.AnalyzeTraces{Tool: a.Tool, Since: since})
	if err != nil {
		return nil, t.storeError(err)
	}
	if stats == nil {
		stats = []store.ToolStats{}
	}
	out := analysis{Tools: stats, SampleRate: 1}
	if !since.IsZero() {
		out.Since = &since
	}
	if r := t.opts.TraceSampleRate; r != nil && *r < 1 {
		out.sampled(stats, *r)
	}
	return out, nil
}

// analysis is trace_analyze's result.
type analysis struct {
	Tools      any        `json:"tools"` // []store.ToolStats, or []sampledStats when sampled
	Since      *time.Time `json:"since,omitempty"`
	SampleRate float64    `json:"sampleRate"` // traces.sampleRate: 1 when every call is traced
	Note       string     `json:"note,omitempty"`
}

// sampledStats are a tool's figures over sampled traces with estimates
// of all calls.
type sampledStats struct {
	store.ToolStats
	EstimatedCalls     int64   `json:"estimatedCalls"`
	EstimatedErrorRate float64 `json:"estimatedErrorRate"`
}

// sampled says the figures are over traces where only rate of the
// successful calls but every failed call was kept, and, when rate > 0,
// adds estimates of all calls: the errors plus the successes scaled by
// 1/rate. The counts are not scaled in place: an error rate over the
// traces is biased towards failures, and the raw figures are what the
// percentiles are computed over. The estimates assume the rate was the
// same when every selected trace was written.
func (a *analysis) sampled(stats []store.ToolStats, rate float64) {
	a.SampleRate = rate
	if rate == 0 {
		a.Note = "only failed calls are traced (traces.sampleRate 0): calls, errors and percentiles are of failed calls"
		return
	}
	a.Note = "successful calls are sampled, failed calls always traced: calls, errorRate and the percentiles are over the traces kept; " +
		"estimatedCalls and estimatedErrorRate estimate all calls at the current sampleRate"
	out := make([]sampledStats, len(stats))
	for i, st := range stats {
		est := st.Errors + int64(math.Round(float64(st.Calls-st.Errors)/rate))
		out[i] = sampledStats{ToolStats: st, EstimatedCalls: est}
		if est > 0 {
			out[i].EstimatedErrorRate = float64(st.Errors) / float64(est)
		}
	}
	a.Tools = out
}
