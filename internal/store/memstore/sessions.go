package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// copySession returns a copy of s that shares nothing with the store.
func copySession(s *store.Session) store.Session {
	out := *s
	out.Metadata = slices.Clone(s.Metadata)
	out.Participants = slices.Clone(s.Participants)
	if s.Error != nil {
		e := *s.Error
		out.Error = &e
	}
	if s.EndedAt != nil {
		t := *s.EndedAt
		out.EndedAt = &t
	}
	return out
}

func checkSessionID(id string) error { return store.CheckName("sessionId", id, store.MaxIDLen) }

func checkAgentID(id string) error { return store.CheckName("agentId", id, store.MaxIDLen) }

// CreateSession starts an active session with the initiator as its
// first participant.
func (s *Store) CreateSession(ctx context.Context, tenant string, in store.NewSession) (store.Session, error) {
	if err := begin(ctx, tenant); err != nil {
		return store.Session{}, err
	}
	if err := store.CheckText("task", in.Task, store.MaxTextLen, true); err != nil {
		return store.Session{}, err
	}
	if err := store.CheckName("initiator", in.Initiator, store.MaxIDLen); err != nil {
		return store.Session{}, err
	}
	meta, err := store.CheckObject("metadata", in.Metadata, s.opts.JSONLimits())
	if err != nil {
		return store.Session{}, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	sess := &store.Session{
		ID: store.NewID(), Task: in.Task, Initiator: in.Initiator, Status: store.SessionActive,
		Metadata:     meta,
		Participants: []store.Participant{{AgentID: in.Initiator, Role: store.RoleInitiator, JoinedAt: now}},
		Version:      1, CreatedAt: now, UpdatedAt: now,
	}
	s.write(tenant).sessions[sess.ID] = sess
	return copySession(sess), nil
}

// GetSession returns one session.
func (s *Store) GetSession(ctx context.Context, tenant, id string) (store.Session, error) {
	if err := begin(ctx, tenant); err != nil {
		return store.Session{}, err
	}
	if err := checkSessionID(id); err != nil {
		return store.Session{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sess, err := s.session(tenant, id)
	if err != nil {
		return store.Session{}, err
	}
	return copySession(sess), nil
}

// session finds a session; the caller holds s.mu.
func (s *Store) session(tenant, id string) (*store.Session, error) {
	if td := s.read(tenant); td != nil {
		if sess := td.sessions[id]; sess != nil {
			return sess, nil
		}
	}
	return nil, store.NotFoundf("session %s", id)
}

// activeSession finds a session that has not ended; the caller holds
// s.mu.
func (s *Store) activeSession(tenant, id string) (*store.Session, error) {
	sess, err := s.session(tenant, id)
	if err != nil {
		return nil, err
	}
	if sess.Status != store.SessionActive {
		return nil, store.Conflictf("session %s is %s", id, sess.Status)
	}
	return sess, nil
}

// changed records a successful change: every one bumps the version.
func changed(sess *store.Session, now time.Time) {
	sess.Version++
	sess.UpdatedAt = now
}

// JoinSession adds agentID to an active session that has room.
func (s *Store) JoinSession(ctx context.Context, tenant, id, agentID, role string, maxParticipants int) (store.Session, error) {
	if err := begin(ctx, tenant); err != nil {
		return store.Session{}, err
	}
	if err := checkSessionID(id); err != nil {
		return store.Session{}, err
	}
	if err := checkAgentID(agentID); err != nil {
		return store.Session{}, err
	}
	if role != store.RoleCollaborator && role != store.RoleDelegate {
		return store.Session{}, store.Invalid("role", "must be %q or %q, got %q", store.RoleCollaborator, store.RoleDelegate, role)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.activeSession(tenant, id)
	if err != nil {
		return store.Session{}, err
	}
	if slices.ContainsFunc(sess.Participants, func(p store.Participant) bool { return p.AgentID == agentID }) {
		return copySession(sess), nil
	}
	// maxParticipants ≤ 0 means no limit; the caller passes its
	// configured bound.
	if maxParticipants > 0 && len(sess.Participants) >= maxParticipants {
		return store.Session{}, store.Conflictf("session %s is full (%d participants)", id, len(sess.Participants))
	}
	now := s.opts.Now()
	sess.Participants = append(sess.Participants, store.Participant{AgentID: agentID, Role: role, JoinedAt: now})
	changed(sess, now)
	return copySession(sess), nil
}

// LeaveSession removes a participant other than the initiator from an
// active session.
func (s *Store) LeaveSession(ctx context.Context, tenant, id, agentID string) (store.Session, error) {
	if err := begin(ctx, tenant); err != nil {
		return store.Session{}, err
	}
	if err := checkSessionID(id); err != nil {
		return store.Session{}, err
	}
	if err := checkAgentID(agentID); err != nil {
		return store.Session{}, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.activeSession(tenant, id)
	if err != nil {
		return store.Session{}, err
	}
	if agentID == sess.Initiator {
		return store.Session{}, store.Conflictf("%s initiated session %s and cannot leave it while it is active", agentID, id)
	}
	i := slices.IndexFunc(sess.Participants, func(p store.Participant) bool { return p.AgentID == agentID })
	if i < 0 {
		return store.Session{}, store.NotFoundf("%s is not a participant of session %s", agentID, id)
	}
	sess.Participants = slices.Delete(sess.Participants, i, i+1)
	changed(sess, s.opts.Now())
	return copySession(sess), nil
}

// CompleteSession ends an active session successfully.
func (s *Store) CompleteSession(ctx context.Context, tenant, id, summary string) (store.Session, error) {
	if err := begin(ctx, tenant); err != nil {
		return store.Session{}, err
	}
	if err := checkSessionID(id); err != nil {
		return store.Session{}, err
	}
	if err := store.CheckText("summary", summary, store.MaxTextLen, false); err != nil {
		return store.Session{}, err
	}
	return s.end(tenant, id, func(sess *store.Session) {
		sess.Status = store.SessionCompleted
		sess.Summary = summary
	})
}

// FailSession ends an active session with cause.
func (s *Store) FailSession(ctx context.Context, tenant, id string, cause store.SessionError) (store.Session, error) {
	if err := begin(ctx, tenant); err != nil {
		return store.Session{}, err
	}
	if err := checkSessionID(id); err != nil {
		return store.Session{}, err
	}
	if err := store.CheckName("error.code", cause.Code, 64); err != nil {
		return store.Session{}, err
	}
	if err := store.CheckText("error.message", cause.Message, store.MaxTextLen, true); err != nil {
		return store.Session{}, err
	}
	return s.end(tenant, id, func(sess *store.Session) {
		sess.Status = store.SessionFailed
		sess.Error = &cause
	})
}

// end moves an active session to the terminal state set applies.
func (s *Store) end(tenant, id string, set func(*store.Session)) (store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.activeSession(tenant, id)
	if err != nil {
		return store.Session{}, err
	}
	now := s.opts.Now()
	set(sess)
	sess.EndedAt = &now
	changed(sess, now)
	return copySession(sess), nil
}

// ListSessions lists sessions newest first, by (createdAt, id).
func (s *Store) ListSessions(ctx context.Context, tenant string, q store.ListSessions) (store.Page[store.Session], error) {
	var none store.Page[store.Session]
	if err := begin(ctx, tenant); err != nil {
		return none, err
	}
	switch q.Status {
	case "", store.SessionActive, store.SessionCompleted, store.SessionFailed:
	default:
		return none, store.Invalid("status", "must be %q, %q or %q, got %q", store.SessionActive, store.SessionCompleted, store.SessionFailed, q.Status)
	}
	if err := checkOptionalName("initiator", q.Initiator, store.MaxIDLen); err != nil {
		return none, err
	}
	limit, err := store.CheckLimit(q.Limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return none, err
	}
	var afterAt time.Time
	var afterID string
	if q.Cursor != "" {
		if afterAt, afterID, _, err = store.DecodeCursor("sessions", q.Cursor); err != nil {
			return none, err
		}
	}

	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []store.Session
	if td := s.read(tenant); td != nil {
		for _, sess := range td.sessions {
			if (q.Status == "" || sess.Status == q.Status) &&
				(q.Initiator == "" || sess.Initiator == q.Initiator) &&
				(q.Cursor == "" || byTimeDesc(afterAt, sess.CreatedAt, afterID, sess.ID) < 0) {
				out = append(out, *sess) // shallow: copied below once the page is cut
			}
		}
	}
	slices.SortFunc(out, func(a, b store.Session) int { return byTimeDesc(a.CreatedAt, b.CreatedAt, a.ID, b.ID) })
	if len(out) > limit+1 {
		out = out[:limit+1]
	}
	for i := range out {
		out[i] = copySession(&out[i])
	}
	return paginate(out, limit, func(sess store.Session) string {
		return store.EncodeCursor("sessions", sess.CreatedAt, sess.ID, "")
	}), nil
}

// RecentSessions lists sessions most recently updated first.
func (s *Store) RecentSessions(ctx context.Context, tenant string, after *store.Pos, limit int) ([]store.Session, error) {
	if err := begin(ctx, tenant); err != nil {
		return nil, err
	}
	limit, err := store.CheckLimit(limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var all []*store.Session
	if td := s.read(tenant); td != nil {
		for _, sess := range td.sessions {
			all = append(all, sess)
		}
	}
	page := recent(all, func(sess *store.Session) store.Pos {
		return store.Pos{UpdatedAt: sess.UpdatedAt, ID: sess.ID}
	}, after, limit)
	out := make([]store.Session, len(page))
	for i, sess := range page {
		out[i] = copySession(sess)
	}
	return out, nil
}
