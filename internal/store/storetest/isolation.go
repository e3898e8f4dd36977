package storetest

import (
	"encoding/json"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// testIsolation gives two tenants the same namespaces, keys and ids and
// checks that nothing one does shows in, or changes, the other.
func testIsolation(t *testing.T, h *harness) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		a, b := h.tenant(), h.tenant()
		ea := put(t, h, a, "ns", "k", `"guava from a"`, "shared")
		put(t, h, a, "ns", "k", `"guava from a"`, "shared") // version 2 in a
		put(t, h, a, "ns", "prefix-1", `"guava"`)
		put(t, h, a, "ns", "bulk", `"guava"`)

		_, err := h.s.GetMemory(ctx(t), b, "ns", "k")
		wantIs(t, err, store.ErrNotFound)
		equal(t, "b's list", len(walk(t, h, b, store.ListMemory{}, nil)), 0)
		equal(t, "b's list of a namespace", len(walk(t, h, b, store.ListMemory{Namespace: "ns", Tags: []string{"shared"}}, nil)), 0)
		equal(t, "b's search", len(must(h.s.SearchMemory(ctx(t), b, store.SearchMemory{Query: "guava"}))(t)), 0)
		equal(t, "b's recent", len(must(h.s.RecentMemory(ctx(t), b, nil, 0))(t)), 0)
		wantIs(t, h.s.DeleteMemory(ctx(t), b, "ns", "k"), store.ErrNotFound)
		equal(t, "b's bulk delete by keys", len(must(h.s.BulkDeleteMemory(ctx(t), b, "ns", []string{"k", "bulk"}, ""))(t)), 0)
		equal(t, "b's bulk delete by prefix", len(must(h.s.BulkDeleteMemory(ctx(t), b, "ns", nil, "prefix"))(t)), 0)

		// b's conditional create succeeds although a has the key, and b's
		// writes start their own version count.
		eb := must(h.s.PutMemory(ctx(t), b, store.PutMemory{
			Namespace: "ns", Key: "k", Value: json.RawMessage(`"from b"`), IfVersion: ptr(int64(0)),
		}))(t)
		equal(t, "b's version", eb.Version, int64(1))
		_, err = h.s.PutMemory(ctx(t), b, store.PutMemory{Namespace: "ns", Key: "k", Value: json.RawMessage(`1`), IfVersion: ptr(int64(2))})
		wantIs(t, err, store.ErrConflict)
		noErr(t, h.s.DeleteMemory(ctx(t), b, "ns", "k"))

		got := must(h.s.GetMemory(ctx(t), a, "ns", "k"))(t)
		equal(t, "a's version", got.Version, int64(2))
		jsonEqual(t, got.Value, ea.Value)
		equal(t, "a's list", keys(walk(t, h, a, store.ListMemory{}, nil)), []string{"bulk", "k", "prefix-1"})
		equal(t, "a's search", len(must(h.s.SearchMemory(ctx(t), a, store.SearchMemory{Query: "guava"}))(t)), 3)
	})

	t.Run("sessions", func(t *testing.T) {
		t.Parallel()
		a, b := h.tenant(), h.tenant()
		sa := newSession(t, h, a)
		newSession(t, h, b)

		_, err := h.s.GetSession(ctx(t), b, sa.ID)
		wantIs(t, err, store.ErrNotFound)
		_, err = h.s.JoinSession(ctx(t), b, sa.ID, "intruder", store.RoleCollaborator, 10)
		wantIs(t, err, store.ErrNotFound)
		_, err = h.s.LeaveSession(ctx(t), b, sa.ID, "lead")
		wantIs(t, err, store.ErrNotFound)
		_, err = h.s.CompleteSession(ctx(t), b, sa.ID, "hijacked")
		wantIs(t, err, store.ErrNotFound)
		_, err = h.s.FailSession(ctx(t), b, sa.ID, store.SessionError{Code: "c", Message: "m"})
		wantIs(t, err, store.ErrNotFound)
		for _, s := range walkSessions(t, h, b, store.ListSessions{Initiator: "lead"}) {
			if s.ID == sa.ID {
				t.Fatal("b's session list shows a's session")
			}
		}
		equal(t, "b's recent", len(must(h.s.RecentSessions(ctx(t), b, nil, 0))(t)), 1)
		equal(t, "a unchanged", must(h.s.GetSession(ctx(t), a, sa.ID))(t), sa)
	})

	t.Run("agents", func(t *testing.T) {
		t.Parallel()
		a, b := h.tenant(), h.tenant()
		aa := register(t, h, a, "twin", []string{"read"}, []string{"x"})
		// The same id in another tenant is not taken.
		register(t, h, b, "twin", []string{"write"}, nil)
		register(t, h, a, "only-a", nil, nil)
		_, err := h.s.GetAgent(ctx(t), b, "only-a")
		wantIs(t, err, store.ErrNotFound)
		wantIs(t, h.s.RemoveAgent(ctx(t), b, "only-a"), store.ErrNotFound)
		equal(t, "b's agents", agentIDs(walkAgents(t, h, b, store.ListAgents{})), []string{"twin"})
		equal(t, "b's agents by a's tag", len(walkAgents(t, h, b, store.ListAgents{Tag: "x"})), 0)
		equal(t, "b's recent", len(must(h.s.RecentAgents(ctx(t), b, nil, 0))(t)), 1)
		noErr(t, h.s.RemoveAgent(ctx(t), b, "twin"))
		equal(t, "a's twin", must(h.s.GetAgent(ctx(t), a, "twin"))(t), aa)
	})

	t.Run("traces", func(t *testing.T) {
		t.Parallel()
		a, b := h.tenant(), h.tenant()
		ta := trace(a, "tool", 1)
		tb := ta
		tb.Tenant, tb.Tool, tb.Status = b, "other", store.TraceError
		// The same id in two tenants: both are kept.
		noErr(t, h.s.InsertTraces(ctx(t), []store.Trace{ta, tb}))
		sameTrace(t, "a's trace", must(h.s.GetTrace(ctx(t), a, ta.ID))(t), ta)
		sameTrace(t, "b's trace", must(h.s.GetTrace(ctx(t), b, ta.ID))(t), tb)
		equal(t, "a's list", traceIDs(walkTraces(t, h, a, store.ListTraces{})), []string{ta.ID})
		equal(t, "a's list by b's tool", len(walkTraces(t, h, a, store.ListTraces{Tool: "other"})), 0)
		stats := must(h.s.AnalyzeTraces(ctx(t), a, store.AnalyzeTraces{}))(t)
		if len(stats) != 1 || stats[0].Tool != "tool" || stats[0].Calls != 1 || stats[0].Errors != 0 {
			t.Fatalf("a's analysis %+v, want one ok call of tool", stats)
		}
	})
}
