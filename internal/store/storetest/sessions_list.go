package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// sessionIDs returns the ids of sessions, in order.
func sessionIDs(sessions []store.Session) []string {
	out := make([]string, len(sessions))
	for i, s := range sessions {
		out[i] = s.ID
	}
	return out
}

// newestFirst returns the ids of sessions in (CreatedAt, ID) descending
// order, the order ListSessions promises.
func newestFirst(sessions []store.Session) []string {
	s := slices.Clone(sessions)
	slices.SortFunc(s, func(a, b store.Session) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return sessionIDs(s)
}

// walkSessions lists every item q selects.
func walkSessions(t testing.TB, h *harness, tenant string, q store.ListSessions) []store.Session {
	t.Helper()
	return walkPages(t, q.Limit, func(c string) (store.Page[store.Session], error) {
		q.Cursor = c
		return h.s.ListSessions(ctx(t), tenant, q)
	}, nil)
}

func testSessionsList(t *testing.T, h *harness) {
	t.Run("filters, newest first, in pages", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		var all, byAda, active, completed []store.Session
		for i := range 7 {
			initiator := "ada"
			if i%3 == 0 {
				initiator = "bob"
			}
			s := must(h.s.CreateSession(ctx(t), tn, store.NewSession{Task: fmt.Sprintf("task %d", i), Initiator: initiator}))(t)
			if i%2 == 0 {
				s = must(h.s.CompleteSession(ctx(t), tn, s.ID, "done"))(t)
				completed = append(completed, s)
			} else {
				active = append(active, s)
			}
			if initiator == "ada" {
				byAda = append(byAda, s)
			}
			all = append(all, s)
		}
		cases := []struct {
			name string
			q    store.ListSessions
			want []store.Session
		}{
			{"all", store.ListSessions{}, all},
			{"all in pages of 3", store.ListSessions{Limit: 3}, all},
			{"all in pages of 1", store.ListSessions{Limit: 1}, all},
			{"by initiator", store.ListSessions{Initiator: "ada", Limit: 2}, byAda},
			{"active", store.ListSessions{Status: store.SessionActive, Limit: 2}, active},
			{"completed", store.ListSessions{Status: store.SessionCompleted}, completed},
			{"failed", store.ListSessions{Status: store.SessionFailed}, nil},
			{"unknown initiator", store.ListSessions{Initiator: "eve"}, nil},
		}
		for _, c := range cases {
			got := walkSessions(t, h, tn, c.q)
			equal(t, c.name, sessionIDs(got), newestFirst(c.want))
		}
		// Items carry the full session.
		first := must(h.s.ListSessions(ctx(t), tn, store.ListSessions{Status: store.SessionCompleted, Limit: 1}))(t)
		equal(t, "listed session", first.Items[0].Participants, completed[len(completed)-1].Participants)
		equal(t, "listed session", first.Items[0].Summary, "done")
	})

	t.Run("list rejects bad input", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		newSession(t, h, tn)
		cases := []struct {
			name  string
			q     store.ListSessions
			field string
		}{
			{"unknown status", store.ListSessions{Status: "paused"}, "status"},
			{"limit over the maximum", store.ListSessions{Limit: store.MaxListLimit + 1}, "limit"},
			{"garbage cursor", store.ListSessions{Cursor: "%%%"}, "cursor"},
			{"memory cursor", store.ListSessions{Cursor: store.EncodeCursor("memory", h.clock.Now(), "a", "b")}, "cursor"},
		}
		for _, c := range cases {
			_, err := h.s.ListSessions(ctx(t), tn, c.q)
			wantField(t, err, c.field)
		}
	})

	t.Run("recent sessions: most recently updated first", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		var ids []string
		for range 5 {
			ids = append(ids, newSession(t, h, tn).ID)
		}
		touched := must(h.s.JoinSession(ctx(t), tn, ids[0], "helper", store.RoleCollaborator, 10))(t)
		all := must(h.s.RecentSessions(ctx(t), tn, nil, 0))(t)
		equal(t, "count", len(all), 5)
		equal(t, "first", all[0].ID, touched.ID)
		equal(t, "first version", all[0].Version, int64(2))
		pos := func(s store.Session) store.Pos { return store.Pos{UpdatedAt: s.UpdatedAt, ID: s.ID} }
		checkRecentOrder(t, all, pos)
		walked := walkRecent(t, h.s.RecentSessions, tn, 2, pos)
		equal(t, "paged walk", sessionIDs(walked), sessionIDs(all))
		_, err := h.s.RecentSessions(ctx(t), tn, nil, -1)
		wantField(t, err, "limit")
	})
}
