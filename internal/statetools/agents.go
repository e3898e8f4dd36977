package statetools

import (
	"context"
	"encoding/json"

	"github.com/mcp-runtime/mcp-runtime/internal/guarded"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

const agentIDOnly = `{"type":"object","properties":{` + agentIDProp + `},"required":["agentId"],"additionalProperties":false}`

type agentArgs struct {
	AgentID string `json:"agentId"`
}

func (t *tools) agentTools() []guarded.Tool {
	return []guarded.Tool{
		{
			Name:  "agent.register",
			Title: "Register an agent",
			Description: "Adds an agent to the registry so other agents can find it by capability or tag. " +
				"ALREADY_EXISTS if the id is taken: remove it first to re-register.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + agentIDProp + `,` +
				`"description":{"type":"string","minLength":1,"maxLength":4096,"description":"What the agent does."},` +
				`"displayName":{"type":"string","maxLength":256},` +
				`"capabilities":{"type":"array","maxItems":32,"items":{"type":"string","minLength":1,"maxLength":64},"description":"What it can be asked to do, e.g. code-review."},` +
				tagsProp + `,` +
				`"metadata":{"type":"object"}` +
				`},"required":["agentId","description"],"additionalProperties":false}`),
			Annotations: additive(false),
			Category:    timeout.Mutation,
			Run:         t.agentRegister,
		},
		{
			Name:        "agent.get",
			Title:       "Get an agent",
			Description: "Returns a registered agent. NOT_FOUND if there is none.",
			InputSchema: json.RawMessage(agentIDOnly),
			Annotations: readOnly(),
			Category:    timeout.Query,
			Run:         t.agentGet,
		},
		{
			Name:        "agent.list",
			Title:       "List agents",
			Description: "Lists registered agents in id order, optionally only those with a tag or a capability. Pass the returned nextCursor for the next page.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"tag":{"type":"string","minLength":1,"maxLength":64},"capability":{"type":"string","minLength":1,"maxLength":64},` +
				`"cursor":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100,"default":50}` +
				`},"additionalProperties":false}`),
			Annotations: readOnly(),
			Category:    timeout.Query,
			Run:         t.agentList,
		},
		{
			Name:        "agent.remove",
			Title:       "Remove an agent",
			Description: "Removes an agent from the registry. NOT_FOUND if there is none.",
			InputSchema: json.RawMessage(agentIDOnly),
			Annotations: destructive(true),
			Category:    timeout.Mutation,
			Run:         t.agentRemove,
		},
	}
}

func (t *tools) agentRegister(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		AgentID      string          `json:"agentId"`
		Description  string          `json:"description"`
		DisplayName  string          `json:"displayName"`
		Capabilities []string        `json:"capabilities"`
		Tags         []string        `json:"tags"`
		Metadata     json.RawMessage `json:"metadata"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	ag, err := t.b.RegisterAgent(ctx, tenant.From(ctx), store.Agent{
		ID: a.AgentID, Description: a.Description, DisplayName: a.DisplayName,
		Capabilities: a.Capabilities, Tags: a.Tags, Metadata: a.Metadata,
	})
	if err != nil {
		return nil, t.storeError(err)
	}
	t.changed(ctx, agentURI(ag.ID))
	t.listed(ctx)
	return ag, nil
}

func (t *tools) agentGet(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a agentArgs
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	ag, cached, err := t.b.LookupAgent(ctx, tenant.From(ctx), a.AgentID)
	if err != nil {
		return nil, t.storeError(err)
	}
	return pipeline.Result{Data: ag, Cached: cached}, nil
}

func (t *tools) agentList(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		Tag        string `json:"tag"`
		Capability string `json:"capability"`
		Cursor     string `json:"cursor"`
		Limit      int    `json:"limit"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	page, err := t.b.ListAgents(ctx, tenant.From(ctx), store.ListAgents{Tag: a.Tag, Capability: a.Capability, Cursor: a.Cursor, Limit: a.Limit})
	if err != nil {
		return nil, t.storeError(err)
	}
	if page.Items == nil {
		page.Items = []store.Agent{}
	}
	return page, nil
}

func (t *tools) agentRemove(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a agentArgs
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	if err := t.b.RemoveAgent(ctx, tenant.From(ctx), a.AgentID); err != nil {
		return nil, t.storeError(err)
	}
	t.changed(ctx, agentURI(a.AgentID))
	t.listed(ctx)
	return map[string]any{"removed": true, "agentId": a.AgentID}, nil
}
