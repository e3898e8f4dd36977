package statetools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

const (
	toolFilterProp = `"tool":{"type":"string","minLength":1,"maxLength":256,"description":"Canonical dotted tool name, e.g. memory.store."}`
	sinceProp      = `"since":{"type":"string","format":"date-time","description":"Only calls started at or after this RFC 3339 time."}`
)

func (t *tools) traceTools() []pipeline.Tool {
	return []pipeline.Tool{
		{
			Name:  "trace.list",
			Title: "List tool-call traces",
			Description: "Lists recorded tool calls newest first: tool, client session, status, error code, duration and sizes (never the arguments). " +
				"Traces are written in batches, so the last fraction of a second may not be listed yet. Pass the returned nextCursor for the next page.",
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
				"Use it to find slow or failing tools.",
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
	out := struct {
		Tools []store.ToolStats `json:"tools"`
		Since *time.Time        `json:"since,omitempty"`
	}{Tools: stats}
	if !since.IsZero() {
		out.Since = &since
	}
	return out, nil
}
