package statetools

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// Every successful mutation reports the URIs of the entities it changed,
// with the caller's tenant; reads and failed mutations report nothing.
func TestChangedEntities(t *testing.T) {
	var mu sync.Mutex
	var got []string
	e := newEnvOpts(t, nil, Options{ParticipantLimit: 3, Changed: func(ctx context.Context, uri string) {
		mu.Lock()
		got = append(got, tenant.From(ctx)+" "+uri)
		mu.Unlock()
	}})
	take := func() string {
		mu.Lock()
		defer mu.Unlock()
		out := strings.Join(got, "; ")
		got = nil
		return out
	}
	e.callIn(t, "acme", "memory_store", `{"namespace":"team/a","key":"plan","value":1}`)
	e.callIn(t, "acme", "memory_retrieve", `{"namespace":"team/a","key":"plan"}`)
	e.callIn(t, "acme", "memory_store", `{"namespace":"team/a","key":"plan","value":1,"ifVersion":7}`) // CONFLICT
	if s := take(); s != "acme memory://team%2Fa/plan" {
		t.Errorf("after store, read, failed store: %q", s)
	}
	e.ok(t, "memory_store", `{"key":"k1","value":1}`, nil)
	e.ok(t, "memory_store", `{"key":"k2","value":1}`, nil)
	take()
	e.ok(t, "memory_bulk_delete", `{"prefix":"k"}`, nil)
	if s := take(); s != "default memory://default/k1; default memory://default/k2" {
		t.Errorf("after bulk delete: %q", s)
	}
	var s store.Session
	e.ok(t, "session_create", `{"task":"t","initiator":"lead"}`, &s)
	e.ok(t, "session_complete", fmt.Sprintf(`{"sessionId":%q}`, s.ID), nil)
	e.ok(t, "agent_register", `{"agentId":"rev","description":"d"}`, nil)
	e.ok(t, "agent_remove", `{"agentId":"rev"}`, nil)
	want := fmt.Sprintf("default session://%s; default session://%s; default agent://rev; default agent://rev", s.ID, s.ID)
	if got := take(); got != want {
		t.Errorf("sessions and agents: %q, want %q", got, want)
	}
}
