package statetools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// Every entity is also a resource (server/resources). URIs percent-encode
// their variables, so a "/" inside a namespace or key is %2F.
func memoryURI(ns, key string) string {
	return "memory://" + url.PathEscape(ns) + "/" + url.PathEscape(key)
}
func sessionURI(id string) string { return "session://" + url.PathEscape(id) }
func agentURI(id string) string   { return "agent://" + url.PathEscape(id) }

const jsonMime = "application/json"

func (t *tools) templates() []handlers.ResourceTemplate {
	tmpl := func(uri, name, title, desc string, read func(ctx context.Context, tn string, vars map[string]string) (any, error)) handlers.ResourceTemplate {
		return handlers.ResourceTemplate{
			ResourceTemplate: protocol.ResourceTemplate{URITemplate: uri, Name: name, Title: title, Description: desc, MimeType: jsonMime},
			Read: func(ctx context.Context, _ handlers.Session, u string, vars map[string]string) ([]protocol.ResourceContents, error) {
				v, err := read(ctx, tenant.From(ctx), vars)
				if errors.Is(err, store.ErrNotFound) || isFieldError(err) {
					// A malformed id names nothing: not found, like a missing one.
					return nil, handlers.ErrResourceNotFound
				}
				if err != nil {
					return nil, err
				}
				return jsonContents(u, v)
			},
		}
	}
	return []handlers.ResourceTemplate{
		tmpl("memory://{namespace}/{key}", "memory", "Memory entry", "A stored memory entry: value, tags, version, timestamps.",
			func(ctx context.Context, tn string, v map[string]string) (any, error) {
				e, _, err := t.b.LookupMemory(ctx, tn, v["namespace"], v["key"])
				return e, err
			}),
		tmpl("session://{id}", "session", "Collaboration session", "A multi-agent collaboration session: task, status, participants.",
			func(ctx context.Context, tn string, v map[string]string) (any, error) {
				s, _, err := t.b.LookupSession(ctx, tn, v["id"])
				return s, err
			}),
		tmpl("agent://{id}", "agent", "Registered agent", "An entry of the agent registry.",
			func(ctx context.Context, tn string, v map[string]string) (any, error) {
				a, _, err := t.b.LookupAgent(ctx, tn, v["id"])
				return a, err
			}),
		tmpl("trace://{id}", "trace", "Tool-call trace", "One recorded tool call.",
			func(ctx context.Context, tn string, v map[string]string) (any, error) {
				return t.b.GetTrace(ctx, tn, v["id"])
			}),
	}
}

func isFieldError(err error) bool {
	var fe *store.FieldError
	return errors.As(err, &fe)
}

func jsonContents(uri string, v any) ([]protocol.ResourceContents, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", uri, err)
	}
	return []protocol.ResourceContents{{URI: uri, MimeType: jsonMime, Text: string(b)}}, nil
}

// lister enumerates memory entries, sessions and agents for
// resources/list, most recently updated first. Traces are left out: there
// is one per tool call, so they would bury everything else; they are
// reachable through trace://{id} and the trace tools.
//
// The three kinds are merged by (updatedAt desc, kind, id desc). The
// cursor holds each kind's own keyset position, so a page is three
// indexed queries however deep the listing goes.
type lister struct{ b Backend }

type listCursor struct {
	M *pos `json:"m,omitempty"`
	S *pos `json:"s,omitempty"`
	A *pos `json:"a,omitempty"`
}

type pos struct {
	T  time.Time `json:"t"`
	ID string    `json:"i"`
}

// decodeListCursor reads a cursor ListResources issued: base64url JSON
// holding at least one position, each with a time and an id, and
// nothing else. Anything else — another listing's cursor
// (store.EncodeCursor's has a "k" member), an empty object — is refused
// rather than taken for the first page.
func decodeListCursor(s string) (listCursor, bool) {
	var c listCursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if dec.Decode(&c) != nil || dec.Decode(&struct{}{}) != io.EOF {
		return c, false
	}
	if c.M == nil && c.S == nil && c.A == nil {
		return c, false
	}
	for _, p := range []*pos{c.M, c.S, c.A} {
		if p != nil && (p.T.IsZero() || p.ID == "") {
			return c, false
		}
	}
	return c, true
}

func (p *pos) store() *store.Pos {
	if p == nil {
		return nil
	}
	return &store.Pos{UpdatedAt: p.T, ID: p.ID}
}

type listed struct {
	kind int // 0 memory, 1 session, 2 agent: the tie-break order
	at   time.Time
	id   string
	res  protocol.Resource
}

func (l *lister) ListResources(ctx context.Context, _ handlers.Session, cursor string, limit int) ([]protocol.Resource, string, error) {
	var c listCursor
	if cursor != "" {
		var ok bool
		if c, ok = decodeListCursor(cursor); !ok {
			return nil, "", &handlers.BadCursorError{Cursor: cursor}
		}
	}
	tn := tenant.From(ctx)
	limit = min(limit, store.MaxListLimit)
	var all []listed
	mem, err := l.b.RecentMemory(ctx, tn, c.M.store(), limit)
	if err != nil {
		return nil, "", fmt.Errorf("list memory resources: %w", err)
	}
	for _, e := range mem {
		all = append(all, listed{0, e.UpdatedAt, store.MemoryID(e.Namespace, e.Key), protocol.Resource{
			URI: memoryURI(e.Namespace, e.Key), Name: e.Namespace + "/" + e.Key, Title: "Memory " + e.Namespace + "/" + e.Key,
			MimeType: jsonMime, Annotations: &protocol.Annotations{LastModified: e.UpdatedAt.Format(time.RFC3339Nano)}}})
	}
	sessions, err := l.b.RecentSessions(ctx, tn, c.S.store(), limit)
	if err != nil {
		return nil, "", fmt.Errorf("list session resources: %w", err)
	}
	for _, s := range sessions {
		all = append(all, listed{1, s.UpdatedAt, s.ID, protocol.Resource{
			URI: sessionURI(s.ID), Name: "session " + s.ID, Title: "Session (" + string(s.Status) + "): " + clip(s.Task, 80),
			MimeType: jsonMime, Annotations: &protocol.Annotations{LastModified: s.UpdatedAt.Format(time.RFC3339Nano)}}})
	}
	agents, err := l.b.RecentAgents(ctx, tn, c.A.store(), limit)
	if err != nil {
		return nil, "", fmt.Errorf("list agent resources: %w", err)
	}
	for _, a := range agents {
		all = append(all, listed{2, a.UpdatedAt, a.ID, protocol.Resource{
			URI: agentURI(a.ID), Name: "agent " + a.ID, Title: "Agent " + a.ID, Description: clip(a.Description, 200),
			MimeType: jsonMime, Annotations: &protocol.Annotations{LastModified: a.UpdatedAt.Format(time.RFC3339Nano)}}})
	}
	slices.SortFunc(all, func(a, b listed) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		if a.kind != b.kind {
			return a.kind - b.kind
		}
		return strings.Compare(b.id, a.id)
	})
	more := len(mem) == limit || len(sessions) == limit || len(agents) == limit || len(all) > limit
	if len(all) > limit {
		all = all[:limit]
	}
	out := make([]protocol.Resource, len(all))
	for i, it := range all {
		out[i] = it.res
		p := &pos{T: it.at, ID: it.id}
		switch it.kind {
		case 0:
			c.M = p
		case 1:
			c.S = p
		case 2:
			c.A = p
		}
	}
	if !more {
		return out, "", nil
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, "", fmt.Errorf("encode cursor: %w", err)
	}
	return out, base64.RawURLEncoding.EncodeToString(raw), nil
}

// clip shortens s to at most n runes for a title.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
