package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// agentIDs returns the ids of agents, in order.
func agentIDs(agents []store.Agent) []string {
	out := make([]string, len(agents))
	for i, a := range agents {
		out[i] = a.ID
	}
	return out
}

// register adds a minimal agent.
func register(t testing.TB, h *harness, tenant, id string, caps, tags []string) store.Agent {
	t.Helper()
	return must(h.s.RegisterAgent(ctx(t), tenant, store.Agent{ID: id, Description: "agent " + id, Capabilities: caps, Tags: tags}))(t)
}

// walkAgents lists every item q selects.
func walkAgents(t testing.TB, h *harness, tenant string, q store.ListAgents) []store.Agent {
	t.Helper()
	return walkPages(t, q.Limit, func(c string) (store.Page[store.Agent], error) {
		q.Cursor = c
		return h.s.ListAgents(ctx(t), tenant, q)
	}, nil)
}

func testAgents(t *testing.T, h *harness) {
	t.Run("register then get", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		before := h.clock.Now()
		a := must(h.s.RegisterAgent(ctx(t), tn, store.Agent{
			ID: "researcher", Description: "finds sources", DisplayName: "Researcher",
			Capabilities: []string{"search", "read", "search"}, Tags: []string{"team-b", "team-a"},
			Metadata: json.RawMessage(`{"model": "small", "n": 2}`),
		}))(t)
		equal(t, "id", a.ID, "researcher")
		equal(t, "description", a.Description, "finds sources")
		equal(t, "displayName", a.DisplayName, "Researcher")
		equal(t, "capabilities", a.Capabilities, []string{"read", "search"})
		equal(t, "tags", a.Tags, []string{"team-a", "team-b"})
		jsonEqual(t, a.Metadata, json.RawMessage(`{"n": 2, "model": "small"}`))
		if a.CreatedAt.Before(before) || !a.UpdatedAt.Equal(a.CreatedAt) {
			t.Fatalf("createdAt %v updatedAt %v", a.CreatedAt, a.UpdatedAt)
		}
		got := must(h.s.GetAgent(ctx(t), tn, "researcher"))(t)
		jsonEqual(t, got.Metadata, a.Metadata)
		got.Metadata = a.Metadata
		equal(t, "get after register", got, a)

		bare := register(t, h, tn, "bare", nil, nil)
		if bare.Capabilities == nil || bare.Tags == nil || len(bare.Metadata) != 0 {
			t.Fatalf("bare agent: capabilities %#v tags %#v metadata %q", bare.Capabilities, bare.Tags, bare.Metadata)
		}
		bare = must(h.s.GetAgent(ctx(t), tn, "bare"))(t)
		if bare.Capabilities == nil || bare.Tags == nil || len(bare.Metadata) != 0 {
			t.Fatalf("bare agent read back: capabilities %#v tags %#v metadata %q", bare.Capabilities, bare.Tags, bare.Metadata)
		}
	})

	t.Run("registering a taken id fails and changes nothing", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		first := register(t, h, tn, "dup", []string{"one"}, nil)
		_, err := h.s.RegisterAgent(ctx(t), tn, store.Agent{ID: "dup", Description: "other"})
		wantIs(t, err, store.ErrAlreadyExists)
		equal(t, "kept", must(h.s.GetAgent(ctx(t), tn, "dup"))(t), first)
	})

	t.Run("register rejects bad input", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		many := make([]string, store.MaxTags+1)
		for i := range many {
			many[i] = fmt.Sprintf("c%d", i)
		}
		ok := store.Agent{ID: "a", Description: "d"}
		with := func(f func(a *store.Agent)) store.Agent {
			a := ok
			f(&a)
			return a
		}
		cases := []struct {
			name  string
			in    store.Agent
			field string
		}{
			{"no id", with(func(a *store.Agent) { a.ID = "" }), "agentId"},
			{"over-long id", with(func(a *store.Agent) { a.ID = strings.Repeat("a", store.MaxIDLen+1) }), "agentId"},
			{"no description", with(func(a *store.Agent) { a.Description = "" }), "description"},
			{"over-long description", with(func(a *store.Agent) { a.Description = strings.Repeat("d", store.MaxTextLen+1) }), "description"},
			{"over-long display name", with(func(a *store.Agent) { a.DisplayName = strings.Repeat("n", 257) }), "displayName"},
			{"too many capabilities", with(func(a *store.Agent) { a.Capabilities = many }), "capabilities"},
			{"empty capability", with(func(a *store.Agent) { a.Capabilities = []string{""} }), "capabilities[0]"},
			{"bad tag", with(func(a *store.Agent) { a.Tags = []string{"ok", "b\nad"} }), "tags[1]"},
			{"array metadata", with(func(a *store.Agent) { a.Metadata = json.RawMessage(`[]`) }), "metadata"},
		}
		for _, c := range cases {
			_, err := h.s.RegisterAgent(ctx(t), tn, c.in)
			wantField(t, err, c.field)
		}
		_, err := h.s.GetAgent(ctx(t), tn, "a")
		wantIs(t, err, store.ErrNotFound)
		_, err = h.s.GetAgent(ctx(t), tn, "")
		wantField(t, err, "agentId")
	})

	t.Run("list by tag and capability, in id order, in pages", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		register(t, h, tn, "c", []string{"write"}, []string{"blue"})
		register(t, h, tn, "a", []string{"read", "write"}, []string{"red"})
		register(t, h, tn, "B", []string{"read"}, []string{"red", "blue"})
		register(t, h, tn, "b", nil, nil)
		register(t, h, tn, "a-2", []string{"read"}, nil)
		cases := []struct {
			name string
			q    store.ListAgents
			want []string
		}{
			{"all", store.ListAgents{}, []string{"B", "a", "a-2", "b", "c"}},
			{"all in pages of 2", store.ListAgents{Limit: 2}, []string{"B", "a", "a-2", "b", "c"}},
			{"by tag", store.ListAgents{Tag: "red", Limit: 1}, []string{"B", "a"}},
			{"by capability", store.ListAgents{Capability: "read"}, []string{"B", "a", "a-2"}},
			{"by both", store.ListAgents{Capability: "write", Tag: "blue"}, []string{"c"}},
			{"by an unknown tag", store.ListAgents{Tag: "green"}, []string{}},
		}
		for _, c := range cases {
			equal(t, c.name, agentIDs(walkAgents(t, h, tn, c.q)), c.want)
		}
		for _, q := range []store.ListAgents{{Limit: -1}, {Limit: store.MaxListLimit + 1}} {
			_, err := h.s.ListAgents(ctx(t), tn, q)
			wantField(t, err, "limit")
		}
		_, err := h.s.ListAgents(ctx(t), tn, store.ListAgents{Cursor: store.EncodeCursor("sessions", h.clock.Now(), "x", "")})
		wantField(t, err, "cursor")
	})

	t.Run("remove", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		register(t, h, tn, "gone", nil, nil)
		register(t, h, tn, "kept", nil, nil)
		noErr(t, h.s.RemoveAgent(ctx(t), tn, "gone"))
		_, err := h.s.GetAgent(ctx(t), tn, "gone")
		wantIs(t, err, store.ErrNotFound)
		wantIs(t, h.s.RemoveAgent(ctx(t), tn, "gone"), store.ErrNotFound)
		wantIs(t, h.s.RemoveAgent(ctx(t), tn, "never"), store.ErrNotFound)
		equal(t, "left", agentIDs(walkAgents(t, h, tn, store.ListAgents{})), []string{"kept"})
		// The id is free again.
		register(t, h, tn, "gone", nil, nil)
	})

	t.Run("recent agents: most recently registered first", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		for i := range 5 {
			register(t, h, tn, fmt.Sprintf("agent-%d", i), nil, nil)
		}
		all := must(h.s.RecentAgents(ctx(t), tn, nil, 0))(t)
		equal(t, "count", len(all), 5)
		pos := func(a store.Agent) store.Pos { return store.Pos{UpdatedAt: a.UpdatedAt, ID: a.ID} }
		checkRecentOrder(t, all, pos)
		walked := walkRecent(t, h.s.RecentAgents, tn, 2, pos)
		equal(t, "paged walk", agentIDs(walked), agentIDs(all))
	})

	t.Run("returned agents are copies", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		in := store.Agent{ID: "x", Description: "d", Capabilities: []string{"c"}, Tags: []string{"t"}, Metadata: json.RawMessage(`{"a":"b"}`)}
		a := must(h.s.RegisterAgent(ctx(t), tn, in))(t)
		in.Capabilities[0], in.Tags[0], in.Metadata[2] = "m", "m", 'z'
		a.Capabilities[0], a.Tags[0], a.Metadata[2] = "m", "m", 'z'
		got := must(h.s.GetAgent(ctx(t), tn, "x"))(t)
		equal(t, "capabilities", got.Capabilities, []string{"c"})
		equal(t, "tags", got.Tags, []string{"t"})
		jsonEqual(t, got.Metadata, json.RawMessage(`{"a":"b"}`))
	})
}
