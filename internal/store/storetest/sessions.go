package storetest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// newSession creates an active session initiated by "lead".
func newSession(t testing.TB, h *harness, tenant string) store.Session {
	t.Helper()
	return must(h.s.CreateSession(ctx(t), tenant, store.NewSession{Task: "write the report", Initiator: "lead"}))(t)
}

// participantIDs returns the agent ids of s's participants, in order.
func participantIDs(s store.Session) []string {
	out := make([]string, len(s.Participants))
	for i, p := range s.Participants {
		out[i] = p.AgentID
	}
	return out
}

func testSessions(t *testing.T, h *harness) {
	t.Run("create makes the initiator the first participant", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		before := h.clock.Now()
		s := must(h.s.CreateSession(ctx(t), tn, store.NewSession{
			Task: "plan the trip", Initiator: "lead", Metadata: json.RawMessage(`{"b": 1, "a": [true]}`),
		}))(t)
		if s.ID == "" {
			t.Fatal("a created session has no id")
		}
		equal(t, "task", s.Task, "plan the trip")
		equal(t, "initiator", s.Initiator, "lead")
		equal(t, "status", s.Status, store.SessionActive)
		equal(t, "version", s.Version, int64(1))
		jsonEqual(t, s.Metadata, json.RawMessage(`{"a": [true], "b": 1}`))
		if len(s.Participants) != 1 {
			t.Fatalf("got %d participants, want the initiator alone", len(s.Participants))
		}
		p := s.Participants[0]
		if p.AgentID != "lead" || p.Role != store.RoleInitiator || p.JoinedAt.IsZero() {
			t.Fatalf("first participant %+v, want lead as initiator with a join time", p)
		}
		if s.CreatedAt.Before(before) || !s.UpdatedAt.Equal(s.CreatedAt) || s.EndedAt != nil {
			t.Fatalf("timestamps created %v updated %v ended %v", s.CreatedAt, s.UpdatedAt, s.EndedAt)
		}
		if s.Summary != "" || s.Error != nil {
			t.Fatalf("a new session has summary %q and error %+v", s.Summary, s.Error)
		}
		got := must(h.s.GetSession(ctx(t), tn, s.ID))(t)
		jsonEqual(t, got.Metadata, s.Metadata)
		got.Metadata = s.Metadata
		equal(t, "get after create", got, s)
	})

	t.Run("metadata is optional", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		for _, m := range []string{"", "null", "  "} {
			s := must(h.s.CreateSession(ctx(t), tn, store.NewSession{Task: "t", Initiator: "lead", Metadata: json.RawMessage(m)}))(t)
			if len(s.Metadata) != 0 {
				t.Fatalf("metadata %q came back as %q, want none", m, s.Metadata)
			}
			s = must(h.s.GetSession(ctx(t), tn, s.ID))(t)
			if len(s.Metadata) != 0 {
				t.Fatalf("metadata %q read back as %q, want none", m, s.Metadata)
			}
		}
	})

	t.Run("create rejects bad input", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		cases := []struct {
			name  string
			in    store.NewSession
			field string
		}{
			{"no task", store.NewSession{Initiator: "lead"}, "task"},
			{"over-long task", store.NewSession{Task: strings.Repeat("x", store.MaxTextLen+1), Initiator: "lead"}, "task"},
			{"no initiator", store.NewSession{Task: "t"}, "initiator"},
			{"initiator with a control character", store.NewSession{Task: "t", Initiator: "a\tb"}, "initiator"},
			{"array metadata", store.NewSession{Task: "t", Initiator: "lead", Metadata: json.RawMessage(`[1]`)}, "metadata"},
			{"string metadata", store.NewSession{Task: "t", Initiator: "lead", Metadata: json.RawMessage(`"x"`)}, "metadata"},
			{"invalid metadata", store.NewSession{Task: "t", Initiator: "lead", Metadata: json.RawMessage(`{"a"`)}, "metadata"},
		}
		for _, c := range cases {
			_, err := h.s.CreateSession(ctx(t), tn, c.in)
			wantField(t, err, c.field)
		}
		page := must(h.s.ListSessions(ctx(t), tn, store.ListSessions{}))(t)
		equal(t, "sessions after rejected creates", len(page.Items), 0)
	})

	t.Run("get of a missing session is not found", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		newSession(t, h, tn)
		for _, id := range []string{store.NewID(), "no-such-session"} {
			_, err := h.s.GetSession(ctx(t), tn, id)
			wantIs(t, err, store.ErrNotFound)
		}
		_, err := h.s.GetSession(ctx(t), tn, "")
		wantField(t, err, "sessionId")
	})

	t.Run("join adds participants in order and bumps the version", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		s := newSession(t, h, tn)
		s1 := must(h.s.JoinSession(ctx(t), tn, s.ID, "helper", store.RoleCollaborator, 10))(t)
		s2 := must(h.s.JoinSession(ctx(t), tn, s.ID, "worker", store.RoleDelegate, 10))(t)
		equal(t, "versions", []int64{s1.Version, s2.Version}, []int64{2, 3})
		equal(t, "participants", participantIDs(s2), []string{"lead", "helper", "worker"})
		equal(t, "roles", []string{s2.Participants[1].Role, s2.Participants[2].Role}, []string{store.RoleCollaborator, store.RoleDelegate})
		if s2.UpdatedAt.Before(s.UpdatedAt) {
			t.Fatalf("updatedAt went back from %v to %v", s.UpdatedAt, s2.UpdatedAt)
		}
		got := must(h.s.GetSession(ctx(t), tn, s.ID))(t)
		equal(t, "get after join", got, s2)
	})

	t.Run("joining twice does not duplicate the participant", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		s := newSession(t, h, tn)
		must(h.s.JoinSession(ctx(t), tn, s.ID, "helper", store.RoleCollaborator, 10))(t)
		again := must(h.s.JoinSession(ctx(t), tn, s.ID, "helper", store.RoleDelegate, 10))(t)
		equal(t, "participants", participantIDs(again), []string{"lead", "helper"})
		equal(t, "role kept", again.Participants[1].Role, store.RoleCollaborator)
		lead := must(h.s.JoinSession(ctx(t), tn, s.ID, "lead", store.RoleCollaborator, 10))(t)
		equal(t, "initiator rejoining", participantIDs(lead), []string{"lead", "helper"})
		equal(t, "initiator role kept", lead.Participants[0].Role, store.RoleInitiator)
		// Already in: not refused as full.
		full := must(h.s.JoinSession(ctx(t), tn, s.ID, "helper", store.RoleCollaborator, 2))(t)
		equal(t, "rejoin of a full session", participantIDs(full), []string{"lead", "helper"})
	})

	t.Run("join of a full session conflicts", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		s := newSession(t, h, tn)
		must(h.s.JoinSession(ctx(t), tn, s.ID, "a1", store.RoleCollaborator, 3))(t)
		must(h.s.JoinSession(ctx(t), tn, s.ID, "a2", store.RoleCollaborator, 3))(t)
		_, err := h.s.JoinSession(ctx(t), tn, s.ID, "a3", store.RoleCollaborator, 3)
		wantIs(t, err, store.ErrConflict)
		got := must(h.s.GetSession(ctx(t), tn, s.ID))(t)
		equal(t, "participants", participantIDs(got), []string{"lead", "a1", "a2"})
		equal(t, "version", got.Version, int64(3))
	})

	t.Run("join rejects bad input", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		s := newSession(t, h, tn)
		cases := []struct {
			name, id, agent, role, field string
		}{
			{"unknown role", s.ID, "a", "observer", "role"},
			{"empty role", s.ID, "a", "", "role"},
			{"initiator role", s.ID, "a", store.RoleInitiator, "role"},
			{"empty agent", s.ID, "", store.RoleCollaborator, "agentId"},
			{"over-long agent", s.ID, strings.Repeat("a", store.MaxIDLen+1), store.RoleCollaborator, "agentId"},
			{"empty session id", "", "a", store.RoleCollaborator, "sessionId"},
		}
		for _, c := range cases {
			_, err := h.s.JoinSession(ctx(t), tn, c.id, c.agent, c.role, 10)
			wantField(t, err, c.field)
		}
		_, err := h.s.JoinSession(ctx(t), tn, store.NewID(), "a", store.RoleCollaborator, 10)
		wantIs(t, err, store.ErrNotFound)
		equal(t, "version", must(h.s.GetSession(ctx(t), tn, s.ID))(t).Version, int64(1))
	})

	t.Run("leave", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		s := newSession(t, h, tn)
		must(h.s.JoinSession(ctx(t), tn, s.ID, "a1", store.RoleCollaborator, 10))(t)
		must(h.s.JoinSession(ctx(t), tn, s.ID, "a2", store.RoleDelegate, 10))(t)
		left := must(h.s.LeaveSession(ctx(t), tn, s.ID, "a1"))(t)
		equal(t, "participants", participantIDs(left), []string{"lead", "a2"})
		equal(t, "version", left.Version, int64(4))

		_, err := h.s.LeaveSession(ctx(t), tn, s.ID, "a1")
		wantIs(t, err, store.ErrNotFound)
		_, err = h.s.LeaveSession(ctx(t), tn, s.ID, "lead")
		wantIs(t, err, store.ErrConflict)
		_, err = h.s.LeaveSession(ctx(t), tn, store.NewID(), "a2")
		wantIs(t, err, store.ErrNotFound)
		// A participant that left may come back, at the end.
		back := must(h.s.JoinSession(ctx(t), tn, s.ID, "a1", store.RoleDelegate, 10))(t)
		equal(t, "participants after rejoin", participantIDs(back), []string{"lead", "a2", "a1"})

		must(h.s.CompleteSession(ctx(t), tn, s.ID, "done"))(t)
		for _, agent := range []string{"a2", "lead", "stranger"} {
			_, err = h.s.LeaveSession(ctx(t), tn, s.ID, agent)
			wantIs(t, err, store.ErrConflict)
		}
		got := must(h.s.GetSession(ctx(t), tn, s.ID))(t)
		equal(t, "participants after refused leaves", participantIDs(got), []string{"lead", "a2", "a1"})
	})

	t.Run("complete and fail end the session once", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		done := newSession(t, h, tn)
		completed := must(h.s.CompleteSession(ctx(t), tn, done.ID, "all written"))(t)
		equal(t, "status", completed.Status, store.SessionCompleted)
		equal(t, "summary", completed.Summary, "all written")
		equal(t, "version", completed.Version, int64(2))
		if completed.EndedAt == nil || completed.EndedAt.Before(completed.CreatedAt) || completed.Error != nil {
			t.Fatalf("endedAt %v, error %+v", completed.EndedAt, completed.Error)
		}
		equal(t, "get after complete", must(h.s.GetSession(ctx(t), tn, done.ID))(t), completed)

		failed := newSession(t, h, tn)
		cause := store.SessionError{Code: "budget_exceeded", Message: "ran out of tokens"}
		f := must(h.s.FailSession(ctx(t), tn, failed.ID, cause))(t)
		equal(t, "status", f.Status, store.SessionFailed)
		equal(t, "error", f.Error, &cause)
		equal(t, "version", f.Version, int64(2))
		if f.EndedAt == nil || f.Summary != "" {
			t.Fatalf("endedAt %v, summary %q", f.EndedAt, f.Summary)
		}
		equal(t, "get after fail", must(h.s.GetSession(ctx(t), tn, failed.ID))(t), f)

		for _, id := range []string{done.ID, failed.ID} {
			_, err := h.s.CompleteSession(ctx(t), tn, id, "again")
			wantIs(t, err, store.ErrConflict)
			_, err = h.s.FailSession(ctx(t), tn, id, cause)
			wantIs(t, err, store.ErrConflict)
			_, err = h.s.JoinSession(ctx(t), tn, id, "late", store.RoleCollaborator, 10)
			wantIs(t, err, store.ErrConflict)
		}
		equal(t, "completed unchanged", must(h.s.GetSession(ctx(t), tn, done.ID))(t), completed)
		equal(t, "failed unchanged", must(h.s.GetSession(ctx(t), tn, failed.ID))(t), f)

		_, err := h.s.CompleteSession(ctx(t), tn, store.NewID(), "")
		wantIs(t, err, store.ErrNotFound)
		_, err = h.s.FailSession(ctx(t), tn, store.NewID(), cause)
		wantIs(t, err, store.ErrNotFound)
		// An empty summary is allowed.
		s := must(h.s.CompleteSession(ctx(t), tn, newSession(t, h, tn).ID, ""))(t)
		equal(t, "empty summary", s.Summary, "")
	})

	t.Run("complete and fail reject bad input", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		s := newSession(t, h, tn)
		_, err := h.s.CompleteSession(ctx(t), tn, s.ID, strings.Repeat("x", store.MaxTextLen+1))
		wantField(t, err, "summary")
		_, err = h.s.FailSession(ctx(t), tn, s.ID, store.SessionError{Message: "m"})
		wantField(t, err, "error.code")
		_, err = h.s.FailSession(ctx(t), tn, s.ID, store.SessionError{Code: "c"})
		wantField(t, err, "error.message")
		_, err = h.s.CompleteSession(ctx(t), tn, "", "s")
		wantField(t, err, "sessionId")
		equal(t, "still active", must(h.s.GetSession(ctx(t), tn, s.ID))(t).Status, store.SessionActive)
	})

	t.Run("returned sessions are copies", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		in := store.NewSession{Task: "t", Initiator: "lead", Metadata: json.RawMessage(`{"a":"b"}`)}
		s := must(h.s.CreateSession(ctx(t), tn, in))(t)
		in.Metadata[2] = 'z'
		s.Metadata[2] = 'z'
		s.Participants[0].AgentID = "mutated"
		got := must(h.s.GetSession(ctx(t), tn, s.ID))(t)
		jsonEqual(t, got.Metadata, json.RawMessage(`{"a":"b"}`))
		equal(t, "participants", participantIDs(got), []string{"lead"})
	})
}
