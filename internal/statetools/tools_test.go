package statetools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// Every tool is listed with a description, an object inputSchema, the
// envelope as outputSchema and all four annotations.
func TestToolsListed(t *testing.T) {
	e := newEnv(t, nil)
	want := []string{
		"memory_store", "memory_retrieve", "memory_search", "memory_list", "memory_delete", "memory_bulk_delete",
		"session_create", "session_join", "session_leave", "session_complete", "session_fail", "session_status", "session_list",
		"agent_register", "agent_get", "agent_list", "agent_remove",
		"trace_list", "trace_get", "trace_analyze",
	}
	seen := map[string]protocol.Tool{}
	params := `{}`
	for {
		res, err := e.request(context.Background(), t, protocol.MethodToolsList, params)
		if err != nil {
			t.Fatal(err)
		}
		lr := res.(*protocol.ListToolsResult)
		for _, tool := range lr.Tools {
			seen[tool.Name] = tool
		}
		if lr.NextCursor == "" {
			break
		}
		params = fmt.Sprintf(`{"cursor":%q}`, lr.NextCursor)
	}
	for _, name := range want {
		tool, ok := seen[name]
		if !ok {
			t.Errorf("%s not listed", name)
			continue
		}
		a := tool.Annotations
		if tool.Description == "" || len(tool.OutputSchema) == 0 || !strings.Contains(string(tool.InputSchema), `"type":"object"`) {
			t.Errorf("%s: description, inputSchema or outputSchema missing", name)
		}
		if a == nil || a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: annotations incomplete: %+v", name, a)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("listed %d tools, want %d", len(seen), len(want))
	}
}

func TestMemoryTools(t *testing.T) {
	e := newEnv(t, nil)
	var stored struct {
		Namespace string `json:"namespace"`
		Version   int64  `json:"version"`
	}
	e.ok(t, "memory_store", `{"key":"plan","value":{"steps":["banana","kiwi"]},"tags":["b","a"]}`, &stored)
	if stored.Namespace != "default" || stored.Version != 1 {
		t.Fatalf("stored %+v, want namespace default version 1", stored)
	}
	var entry store.MemoryEntry
	first := e.ok(t, "memory_retrieve", `{"key":"plan"}`, &entry)
	if entry.Version != 1 || strings.Join(entry.Tags, ",") != "a,b" || !strings.Contains(string(entry.Value), "kiwi") {
		t.Fatalf("retrieved %+v", entry)
	}
	again := e.ok(t, "memory_retrieve", `{"key":"plan"}`, nil)
	if first.Metadata.Cached || !again.Metadata.Cached {
		t.Errorf("cached: first %v, second %v; want false then true", first.Metadata.Cached, again.Metadata.Cached)
	}
	// A write drops the cached copy: the next read is the new version.
	e.ok(t, "memory_store", `{"key":"plan","value":"mango","ifVersion":1}`, &stored)
	e.ok(t, "memory_retrieve", `{"key":"plan"}`, &entry)
	if entry.Version != 2 || string(entry.Value) != `"mango"` {
		t.Fatalf("after update: %+v", entry)
	}
	conflict := e.fails(t, "CONFLICT", "memory_store", `{"key":"plan","value":1,"ifVersion":1}`)
	if conflict.Error.Retryable {
		t.Error("CONFLICT must not be retryable")
	}
	e.fails(t, "CONFLICT", "memory_store", `{"key":"plan","value":1,"ifVersion":0}`)

	for i := range 5 {
		e.ok(t, "memory_store", fmt.Sprintf(`{"namespace":"fruit","key":"k%d","value":"banana %s"}`, i, strings.Repeat("banana ", i)), nil)
	}
	var hits struct {
		Hits []store.SearchHit `json:"hits"`
	}
	e.ok(t, "memory_search", `{"query":"banana","namespace":"fruit","limit":3}`, &hits)
	if len(hits.Hits) != 3 || hits.Hits[0].Entry.Key != "k4" {
		t.Errorf("search: %+v, want 3 hits led by k4", hits.Hits)
	}
	var page store.Page[store.MemoryEntry]
	e.ok(t, "memory_list", `{"namespace":"fruit","limit":2}`, &page)
	if len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("list page 1: %+v", page)
	}
	e.ok(t, "memory_list", fmt.Sprintf(`{"namespace":"fruit","limit":2,"cursor":%q}`, page.NextCursor), &page)
	if len(page.Items) != 2 || page.Items[0].Key != "k2" {
		t.Fatalf("list page 2: %+v", page)
	}
	e.fails(t, "INVALID_INPUT", "memory_list", `{"cursor":"garbage"}`)

	e.ok(t, "memory_delete", `{"key":"plan"}`, nil)
	e.fails(t, "NOT_FOUND", "memory_retrieve", `{"key":"plan"}`)
	e.fails(t, "NOT_FOUND", "memory_delete", `{"key":"plan"}`)
	var bulk struct {
		Deleted int      `json:"deleted"`
		Keys    []string `json:"keys"`
	}
	e.ok(t, "memory_bulk_delete", `{"namespace":"fruit","keys":["k0","k1","nope"]}`, &bulk)
	if bulk.Deleted != 2 {
		t.Errorf("bulk delete by keys: %+v", bulk)
	}
	e.ok(t, "memory_bulk_delete", `{"namespace":"fruit","prefix":"k"}`, &bulk)
	if bulk.Deleted != 3 {
		t.Errorf("bulk delete by prefix: %+v", bulk)
	}
	e.fails(t, "INVALID_INPUT", "memory_bulk_delete", `{"namespace":"fruit","prefix":"k","keys":["a"]}`)
}

// Bad input is INVALID_INPUT naming the field, and nothing is stored.
func TestMemoryInvalidInput(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name, args, field string
	}{
		{"empty key", `{"key":"","value":1}`, "key"},
		{"control character", `{"key":"a\u0007b","value":1}`, "key"},
		{"namespace too long", `{"namespace":"` + strings.Repeat("n", 129) + `","key":"k","value":1}`, "namespace"},
		{"nul in value", `{"key":"k","value":"a\u0000b"}`, "value"},
		{"missing value", `{"key":"k"}`, "value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := e.fails(t, "INVALID_INPUT", "memory_store", tc.args)
			if !strings.Contains(env.Error.Message, tc.field) {
				t.Errorf("message %q does not name %s", env.Error.Message, tc.field)
			}
		})
	}
	var page store.Page[store.MemoryEntry]
	e.ok(t, "memory_list", `{}`, &page)
	if len(page.Items) != 0 {
		t.Errorf("a rejected write stored something: %+v", page.Items)
	}
}

func TestSessionAndAgentTools(t *testing.T) {
	e := newEnv(t, nil)
	var s store.Session
	e.ok(t, "session_create", `{"task":"ship it","initiator":"lead","metadata":{"p":1}}`, &s)
	id := s.ID
	e.ok(t, "session_join", fmt.Sprintf(`{"sessionId":%q,"agentId":"a1"}`, id), &s)
	e.ok(t, "session_join", fmt.Sprintf(`{"sessionId":%q,"agentId":"a1"}`, id), &s) // no-op
	e.ok(t, "session_join", fmt.Sprintf(`{"sessionId":%q,"agentId":"a2","role":"delegate"}`, id), &s)
	if len(s.Participants) != 3 || s.Participants[2].Role != "delegate" {
		t.Fatalf("participants %+v", s.Participants)
	}
	e.fails(t, "CONFLICT", "session_join", fmt.Sprintf(`{"sessionId":%q,"agentId":"a3"}`, id)) // limit 3
	e.fails(t, "CONFLICT", "session_leave", fmt.Sprintf(`{"sessionId":%q,"agentId":"lead"}`, id))
	e.ok(t, "session_leave", fmt.Sprintf(`{"sessionId":%q,"agentId":"a2"}`, id), &s)
	e.ok(t, "session_complete", fmt.Sprintf(`{"sessionId":%q,"summary":"done"}`, id), &s)
	if s.Status != store.SessionCompleted || s.Summary != "done" {
		t.Fatalf("completed: %+v", s)
	}
	e.fails(t, "CONFLICT", "session_fail", fmt.Sprintf(`{"sessionId":%q,"error":{"code":"X","message":"m"}}`, id))
	e.ok(t, "session_status", fmt.Sprintf(`{"sessionId":%q}`, id), &s)
	if s.Status != store.SessionCompleted {
		t.Errorf("status after complete: %s (a stale cached copy?)", s.Status)
	}
	e.fails(t, "NOT_FOUND", "session_status", `{"sessionId":"nope"}`)
	var sessions store.Page[store.Session]
	e.ok(t, "session_list", `{"status":"completed"}`, &sessions)
	if len(sessions.Items) != 1 {
		t.Errorf("session_list: %+v", sessions)
	}

	var a store.Agent
	e.ok(t, "agent_register", `{"agentId":"rev","description":"reviews code","capabilities":["code-review"],"tags":["go"]}`, &a)
	e.fails(t, "ALREADY_EXISTS", "agent_register", `{"agentId":"rev","description":"again"}`)
	e.ok(t, "agent_get", `{"agentId":"rev"}`, &a)
	var agents store.Page[store.Agent]
	e.ok(t, "agent_list", `{"capability":"code-review"}`, &agents)
	if len(agents.Items) != 1 || agents.Items[0].ID != "rev" {
		t.Errorf("agent_list: %+v", agents)
	}
	e.ok(t, "agent_remove", `{"agentId":"rev"}`, nil)
	e.fails(t, "NOT_FOUND", "agent_get", `{"agentId":"rev"}`)
}

// unavailable makes every store call fail as a database outage does.
type unavailable struct{ Backend }

func (unavailable) LookupMemory(context.Context, string, string, string) (store.MemoryEntry, bool, error) {
	return store.MemoryEntry{}, false, fmt.Errorf("get: dial tcp 10.0.0.7:5432: %w", store.ErrUnavailable)
}

func (unavailable) PutMemory(context.Context, string, store.PutMemory) (store.MemoryEntry, error) {
	return store.MemoryEntry{}, fmt.Errorf("put: dial tcp 10.0.0.7:5432: %w", store.ErrUnavailable)
}

// An unreachable database is SERVICE_UNAVAILABLE, retryable with a hint,
// and the message does not leak where the database is.
func TestServiceUnavailable(t *testing.T) {
	e := newEnv(t, func(b Backend) Backend { return unavailable{b} })
	for _, call := range [][2]string{{"memory_retrieve", `{"key":"k"}`}, {"memory_store", `{"key":"k","value":1}`}} {
		env := e.fails(t, "SERVICE_UNAVAILABLE", call[0], call[1])
		if !env.Error.Retryable || env.Error.RetryAfterMs <= 0 {
			t.Errorf("%s: retryable %v retryAfterMs %d", call[0], env.Error.Retryable, env.Error.RetryAfterMs)
		}
		if strings.Contains(env.Error.Message, "10.0.0.7") {
			t.Errorf("%s: message leaks the host: %q", call[0], env.Error.Message)
		}
	}
}

// Tenant A never sees tenant B's state, through tools or resources.
func TestTenantIsolation(t *testing.T) {
	e := newEnv(t, nil)
	if env := e.callIn(t, "a", "memory_store", `{"key":"secret","value":"kiwi of a"}`); !env.Success {
		t.Fatal(mustJSON(env))
	}
	if env := e.callIn(t, "a", "agent_register", `{"agentId":"x","description":"a's agent"}`); !env.Success {
		t.Fatal(mustJSON(env))
	}
	for _, c := range []struct{ tool, args string }{
		{"memory_retrieve", `{"key":"secret"}`},
		{"memory_delete", `{"key":"secret"}`},
		{"agent_get", `{"agentId":"x"}`},
	} {
		if env := e.callIn(t, "b", c.tool, c.args); env.Success || env.Error.Code != "NOT_FOUND" {
			t.Errorf("tenant b %s: %s, want NOT_FOUND", c.tool, mustJSON(env))
		}
	}
	for _, c := range []struct{ tool, args string }{
		{"memory_search", `{"query":"kiwi"}`},
		{"memory_list", `{}`},
		{"agent_list", `{}`},
	} {
		env := e.callIn(t, "b", c.tool, c.args)
		if !env.Success || strings.Contains(string(env.Data), "secret") || strings.Contains(string(env.Data), `"x"`) {
			t.Errorf("tenant b %s sees a's data: %s", c.tool, env.Data)
		}
	}
	// Resources too.
	res, err := e.request(tenantCtx("b"), t, protocol.MethodResourcesRead, `{"uri":"memory://default/secret"}`)
	if err == nil {
		t.Errorf("tenant b read a's resource: %+v", res)
	}
	list, err := e.request(tenantCtx("b"), t, protocol.MethodResourcesList, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(list); strings.Contains(string(b), "secret") {
		t.Errorf("tenant b lists a's resources: %s", b)
	}
	// And a still has everything.
	if env := e.callIn(t, "a", "memory_retrieve", `{"key":"secret"}`); !env.Success {
		t.Errorf("tenant a lost its entry: %s", mustJSON(env))
	}
}
