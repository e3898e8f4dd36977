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

const (
	sessionIDProp = `"sessionId":{"type":"string","minLength":1,"maxLength":128,"description":"Id returned by session_create."}`
	agentIDProp   = `"agentId":{"type":"string","minLength":1,"maxLength":128,"description":"Id of the agent."}`
	sessionIDOnly = `{"type":"object","properties":{` + sessionIDProp + `},"required":["sessionId"],"additionalProperties":false}`
)

type sessionArgs struct {
	SessionID string `json:"sessionId"`
	AgentID   string `json:"agentId"`
	Role      string `json:"role"`
}

func (t *tools) sessionTools() []guarded.Tool {
	return []guarded.Tool{
		{
			Name:  "session.create",
			Title: "Start a collaboration session",
			Description: "Starts a multi-agent collaboration session on a task, with the initiator as its first participant, and returns it with its id. " +
				"Other agents join with session_join; the session ends with session_complete or session_fail.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"task":{"type":"string","minLength":1,"maxLength":4096,"description":"What the session is for."},` +
				`"initiator":{"type":"string","minLength":1,"maxLength":128,"description":"Agent id of the initiator."},` +
				`"metadata":{"type":"object","description":"Free-form data to keep with the session."}` +
				`},"required":["task","initiator"],"additionalProperties":false}`),
			Annotations: additive(false),
			Category:    timeout.Mutation,
			Run:         t.sessionCreate,
		},
		{
			Name:  "session.join",
			Title: "Join a session",
			Description: "Adds an agent to an active session as a collaborator (default) or delegate. Joining twice changes nothing. " +
				"CONFLICT if the session has ended or is full.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + sessionIDProp + `,` + agentIDProp + `,` +
				`"role":{"type":"string","enum":["collaborator","delegate"],"default":"collaborator"}` +
				`},"required":["sessionId","agentId"],"additionalProperties":false}`),
			Annotations: additive(true),
			Category:    timeout.Mutation,
			Run:         t.sessionJoin,
		},
		{
			Name:        "session.leave",
			Title:       "Leave a session",
			Description: "Removes an agent from an active session. The initiator cannot leave while the session is active: complete or fail it instead.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + sessionIDProp + `,` + agentIDProp + `},"required":["sessionId","agentId"],"additionalProperties":false}`),
			Annotations: destructive(true),
			Category:    timeout.Mutation,
			Run:         t.sessionLeave,
		},
		{
			Name:        "session.complete",
			Title:       "Complete a session",
			Description: "Ends an active session as completed, with an optional summary of the outcome. CONFLICT if it has already ended.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + sessionIDProp + `,` +
				`"summary":{"type":"string","maxLength":4096,"description":"What was achieved."}` +
				`},"required":["sessionId"],"additionalProperties":false}`),
			Annotations: additive(false),
			Category:    timeout.Mutation,
			Run:         t.sessionComplete,
		},
		{
			Name:        "session.fail",
			Title:       "Fail a session",
			Description: "Ends an active session as failed, recording why. CONFLICT if it has already ended.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + sessionIDProp + `,` +
				`"error":{"type":"object","properties":{"code":{"type":"string","minLength":1,"maxLength":64},"message":{"type":"string","minLength":1,"maxLength":4096}},"required":["code","message"],"additionalProperties":false}` +
				`},"required":["sessionId","error"],"additionalProperties":false}`),
			Annotations: additive(false),
			Category:    timeout.Mutation,
			Run:         t.sessionFail,
		},
		{
			Name:        "session.status",
			Title:       "Session status",
			Description: "Returns a session: its task, status, participants, summary or error, and version.",
			InputSchema: json.RawMessage(sessionIDOnly),
			Annotations: readOnly(),
			Category:    timeout.Query,
			Run:         t.sessionStatus,
		},
		{
			Name:        "session.list",
			Title:       "List sessions",
			Description: "Lists sessions newest first, optionally by status or initiator. Pass the returned nextCursor for the next page.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"status":{"type":"string","enum":["active","completed","failed"]},` +
				`"initiator":{"type":"string","minLength":1,"maxLength":128},` +
				`"cursor":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100,"default":50}` +
				`},"additionalProperties":false}`),
			Annotations: readOnly(),
			Category:    timeout.Query,
			Run:         t.sessionList,
		},
	}
}

func (t *tools) sessionCreate(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		Task      string          `json:"task"`
		Initiator string          `json:"initiator"`
		Metadata  json.RawMessage `json:"metadata"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	s, err := t.b.CreateSession(ctx, tenant.From(ctx), store.NewSession{Task: a.Task, Initiator: a.Initiator, Metadata: a.Metadata})
	if err == nil {
		t.listed(ctx)
	}
	return t.sessionChanged(ctx, s, err)
}

func (t *tools) sessionJoin(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a sessionArgs
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	if a.Role == "" {
		a.Role = store.RoleCollaborator
	}
	s, err := t.b.JoinSession(ctx, tenant.From(ctx), a.SessionID, a.AgentID, a.Role, t.opts.ParticipantLimit)
	return t.sessionChanged(ctx, s, err)
}

func (t *tools) sessionLeave(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a sessionArgs
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	s, err := t.b.LeaveSession(ctx, tenant.From(ctx), a.SessionID, a.AgentID)
	return t.sessionChanged(ctx, s, err)
}

func (t *tools) sessionComplete(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		SessionID string `json:"sessionId"`
		Summary   string `json:"summary"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	s, err := t.b.CompleteSession(ctx, tenant.From(ctx), a.SessionID, a.Summary)
	return t.sessionChanged(ctx, s, err)
}

func (t *tools) sessionFail(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		SessionID string             `json:"sessionId"`
		Error     store.SessionError `json:"error"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	s, err := t.b.FailSession(ctx, tenant.From(ctx), a.SessionID, a.Error)
	return t.sessionChanged(ctx, s, err)
}

func (t *tools) sessionStatus(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a sessionArgs
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	s, cached, err := t.b.LookupSession(ctx, tenant.From(ctx), a.SessionID)
	if err != nil {
		return nil, t.storeError(err)
	}
	return pipeline.Result{Data: s, Cached: cached}, nil
}

func (t *tools) sessionList(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		Status    store.SessionStatus `json:"status"`
		Initiator string              `json:"initiator"`
		Cursor    string              `json:"cursor"`
		Limit     int                 `json:"limit"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	page, err := t.b.ListSessions(ctx, tenant.From(ctx), store.ListSessions{Status: a.Status, Initiator: a.Initiator, Cursor: a.Cursor, Limit: a.Limit})
	if err != nil {
		return nil, t.storeError(err)
	}
	if page.Items == nil {
		page.Items = []store.Session{}
	}
	return page, nil
}

// sessionChanged finishes a session mutation: the session, or the mapped
// error, and the change reported on success.
func (t *tools) sessionChanged(ctx context.Context, s store.Session, err error) (any, error) {
	if err != nil {
		return nil, t.storeError(err)
	}
	t.changed(ctx, sessionURI(s.ID))
	return s, nil
}
