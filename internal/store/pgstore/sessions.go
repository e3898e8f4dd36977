package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// selectSession reads sessions with their participants in join order, in
// one statement so a session and its participants come from one snapshot
// (the version read matches the participants read).
const selectSession = `
SELECT s.id, s.task, s.initiator, s.status, s.metadata, s.summary, s.error_code, s.error_message,
       s.version, s.created_at, s.updated_at, s.ended_at, p.agents, p.roles, p.joined
FROM sessions s
CROSS JOIN LATERAL (
    SELECT coalesce(array_agg(agent_id ORDER BY seq), '{}') AS agents,
           coalesce(array_agg(role ORDER BY seq), '{}') AS roles,
           coalesce(array_agg(joined_at ORDER BY seq), '{}') AS joined
    FROM session_participants p
    WHERE p.tenant = s.tenant AND p.session_id = s.id
) p`

func scanSession(row pgx.Row) (store.Session, error) {
	var (
		sess               store.Session
		metadata           []byte
		errCode, errMsg    *string
		agents, roles      []string
		joined             []time.Time
		status             string
		created, updated   time.Time
		ended              *time.Time
		summary, initiator string
	)
	err := row.Scan(&sess.ID, &sess.Task, &initiator, &status, &metadata, &summary, &errCode, &errMsg,
		&sess.Version, &created, &updated, &ended, &agents, &roles, &joined)
	if err != nil {
		return store.Session{}, err
	}
	sess.Initiator, sess.Status, sess.Summary = initiator, store.SessionStatus(status), summary
	sess.Metadata = compactJSON(metadata)
	if errCode != nil {
		sess.Error = &store.SessionError{Code: *errCode, Message: deref(errMsg)}
	}
	sess.CreatedAt, sess.UpdatedAt, sess.EndedAt = utc(created), utc(updated), utcPtr(ended)
	sess.Participants = make([]store.Participant, len(agents))
	for i := range agents {
		sess.Participants[i] = store.Participant{AgentID: agents[i], Role: roles[i], JoinedAt: utc(joined[i])}
	}
	return sess, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func checkSessionID(tenant, id string) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	return store.CheckName("sessionId", id, store.MaxIDLen)
}

// CreateSession starts a session with its initiator as first participant.
func (s *Store) CreateSession(ctx context.Context, tenant string, in store.NewSession) (store.Session, error) {
	if err := checkTenant(tenant); err != nil {
		return store.Session{}, err
	}
	if err := store.CheckText("task", in.Task, store.MaxTextLen, true); err != nil {
		return store.Session{}, err
	}
	if err := store.CheckName("initiator", in.Initiator, store.MaxIDLen); err != nil {
		return store.Session{}, err
	}
	metadata, err := store.CheckObject("metadata", in.Metadata, s.opts.JSONLimits())
	if err != nil {
		return store.Session{}, err
	}
	now := s.opts.Now()
	sess := store.Session{
		ID: store.NewID(), Task: in.Task, Initiator: in.Initiator, Status: store.SessionActive,
		Participants: []store.Participant{{AgentID: in.Initiator, Role: store.RoleInitiator, JoinedAt: now}},
		Version:      1, CreatedAt: now, UpdatedAt: now,
	}
	// One statement, so the session never exists without its initiator.
	// The foreign key is checked at the end of the statement, after both
	// inserts.
	var stored []byte
	err = s.pool.QueryRow(ctx, `
		WITH s AS (
			INSERT INTO sessions (tenant, id, task, initiator, status, metadata, version, created_at, updated_at)
			VALUES ($1, $2, $3, $4, 'active', $5, 1, $6, $6)
			RETURNING metadata
		), p AS (
			INSERT INTO session_participants (tenant, session_id, agent_id, role, joined_at)
			VALUES ($1, $2, $4, 'initiator', $6)
		)
		SELECT metadata FROM s`,
		tenant, sess.ID, in.Task, in.Initiator, jsonValue(metadata), now).Scan(&stored)
	if err != nil {
		return store.Session{}, fmt.Errorf("create session: %w", classify(err))
	}
	sess.Metadata = compactJSON(stored)
	return sess, nil
}

// GetSession returns a session with its participants.
func (s *Store) GetSession(ctx context.Context, tenant, id string) (store.Session, error) {
	if err := checkSessionID(tenant, id); err != nil {
		return store.Session{}, err
	}
	sess, err := s.getSession(ctx, s.pool, tenant, id)
	return sess, fail("get session", err)
}

func (s *Store) getSession(ctx context.Context, q querier, tenant, id string) (store.Session, error) {
	sess, err := scanSession(q.QueryRow(ctx, selectSession+` WHERE s.tenant = $1 AND s.id = $2`, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, store.NotFoundf("session %s", id)
	}
	return sess, err
}

// sessionChange is what a session mutation does to a session it has
// read: new terminal state fields, and a participant to add or remove.
type sessionChange struct {
	status  store.SessionStatus
	summary string
	cause   *store.SessionError
	ended   bool
	join    *store.Participant
	leave   string
}

// changeSession reads the session, lets decide compute the change (nil
// for "nothing to do"), and applies it only if the session is still at
// the version read, so the loser of a race decides again on the winner's
// state and no update is lost.
//
// The first attempt is optimistic: two statements, no transaction, no
// lock held while deciding. If it loses, the session is contended, and
// retrying optimistically would let a crowd of writers starve each other
// (each round has one winner); so the second attempt locks the session
// row, which queues the writers and is certain to apply.
func (s *Store) changeSession(ctx context.Context, tenant, id string,
	decide func(store.Session) (*sessionChange, error)) (store.Session, error) {
	cur, err := s.getSession(ctx, s.pool, tenant, id)
	if err != nil {
		return store.Session{}, err
	}
	next, applied, err := s.decideAndApply(ctx, s.pool, tenant, cur, decide)
	if err != nil || applied {
		return next, err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var locked int
		err := tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE tenant = $1 AND id = $2 FOR UPDATE`, tenant, id).Scan(&locked)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.NotFoundf("session %s", id)
		}
		if err != nil {
			return err
		}
		// A new statement, so a new snapshot that includes whatever the
		// transaction we waited for committed.
		cur, err := s.getSession(ctx, tx, tenant, id)
		if err != nil {
			return err
		}
		next, applied, err = s.decideAndApply(ctx, tx, tenant, cur, decide)
		if err == nil && !applied {
			err = errors.New("the session changed while locked")
		}
		return err
	})
	if err != nil {
		return store.Session{}, err
	}
	return next, nil
}

// decideAndApply runs decide on cur and writes the change it asks for.
// It reports false if the session was no longer at cur's version.
func (s *Store) decideAndApply(ctx context.Context, q querier, tenant string, cur store.Session,
	decide func(store.Session) (*sessionChange, error)) (store.Session, bool, error) {
	ch, err := decide(cur)
	if err != nil {
		return store.Session{}, false, err
	}
	if ch == nil {
		return cur, true, nil
	}
	// Never before the version it replaces, even if another replica's
	// clock is ahead of ours: a later version must not look older.
	now := s.opts.Now()
	if now.Before(cur.UpdatedAt) {
		now = cur.UpdatedAt
	}
	applied, err := s.applySessionChange(ctx, q, tenant, cur, ch, now)
	if err != nil || !applied {
		return store.Session{}, false, err
	}
	return withChange(cur, ch, now), true, nil
}

// applySessionChange writes ch in one statement: the version-guarded
// update of the session and the participant insert or delete, which only
// happens if the update did. It reports whether the guard held.
func (s *Store) applySessionChange(ctx context.Context, q querier, tenant string, cur store.Session, ch *sessionChange, now time.Time) (bool, error) {
	var endedAt *time.Time
	if ch.ended {
		endedAt = &now
	}
	var code, msg *string
	if ch.cause != nil {
		code, msg = &ch.cause.Code, &ch.cause.Message
	}
	args := []any{tenant, cur.ID, cur.Version, now, string(ch.status), ch.summary, code, msg, endedAt}
	participant := `SELECT`
	switch {
	case ch.join != nil:
		participant = `INSERT INTO session_participants (tenant, session_id, agent_id, role, joined_at)
			SELECT $1, $2, $10, $11, $4 FROM u`
		args = append(args, ch.join.AgentID, ch.join.Role)
	case ch.leave != "":
		participant = `DELETE FROM session_participants
			WHERE tenant = $1 AND session_id = $2 AND agent_id = $10 AND EXISTS (SELECT FROM u)`
		args = append(args, ch.leave)
	}
	var n int
	err := q.QueryRow(ctx, `
		WITH u AS (
			UPDATE sessions SET version = version + 1, updated_at = $4, status = $5, summary = $6,
				error_code = $7, error_message = $8, ended_at = $9
			WHERE tenant = $1 AND id = $2 AND version = $3
			RETURNING id
		), p AS (`+participant+`)
		SELECT count(*) FROM u`, args...).Scan(&n)
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// withChange returns cur as applySessionChange left it, without reading
// it back.
func withChange(cur store.Session, ch *sessionChange, now time.Time) store.Session {
	next := cur
	next.Version++
	next.UpdatedAt = now
	next.Status, next.Summary, next.Error = ch.status, ch.summary, ch.cause
	if ch.ended {
		next.EndedAt = &now
	}
	next.Participants = slices.Clone(cur.Participants)
	switch {
	case ch.join != nil:
		p := *ch.join
		p.JoinedAt = now
		next.Participants = append(next.Participants, p)
	case ch.leave != "":
		next.Participants = slices.DeleteFunc(next.Participants, func(p store.Participant) bool {
			return p.AgentID == ch.leave
		})
	}
	return next
}

// unchanged is the change that keeps a session's state and only adds or
// removes a participant.
func unchanged(cur store.Session) *sessionChange {
	ch := &sessionChange{status: cur.Status, summary: cur.Summary, cause: cur.Error}
	return ch
}

func checkActive(cur store.Session) error {
	if cur.Status != store.SessionActive {
		return store.Conflictf("session %s is %s", cur.ID, cur.Status)
	}
	return nil
}

func isParticipant(cur store.Session, agentID string) bool {
	return slices.ContainsFunc(cur.Participants, func(p store.Participant) bool { return p.AgentID == agentID })
}

// JoinSession adds a participant to an active session.
func (s *Store) JoinSession(ctx context.Context, tenant, id, agentID, role string, maxParticipants int) (store.Session, error) {
	if err := checkSessionID(tenant, id); err != nil {
		return store.Session{}, err
	}
	if err := store.CheckName("agentId", agentID, store.MaxIDLen); err != nil {
		return store.Session{}, err
	}
	if role != store.RoleCollaborator && role != store.RoleDelegate {
		return store.Session{}, store.Invalid("role", "must be %q or %q, got %q", store.RoleCollaborator, store.RoleDelegate, role)
	}
	sess, err := s.changeSession(ctx, tenant, id, func(cur store.Session) (*sessionChange, error) {
		if err := checkActive(cur); err != nil {
			return nil, err
		}
		if isParticipant(cur, agentID) {
			return nil, nil
		}
		if maxParticipants > 0 && len(cur.Participants) >= maxParticipants {
			return nil, store.Conflictf("session %s is full (%d participants)", id, len(cur.Participants))
		}
		ch := unchanged(cur)
		ch.join = &store.Participant{AgentID: agentID, Role: role}
		return ch, nil
	})
	return sess, fail("join session", err)
}

// LeaveSession removes a participant from an active session.
func (s *Store) LeaveSession(ctx context.Context, tenant, id, agentID string) (store.Session, error) {
	if err := checkSessionID(tenant, id); err != nil {
		return store.Session{}, err
	}
	if err := store.CheckName("agentId", agentID, store.MaxIDLen); err != nil {
		return store.Session{}, err
	}
	sess, err := s.changeSession(ctx, tenant, id, func(cur store.Session) (*sessionChange, error) {
		if err := checkActive(cur); err != nil {
			return nil, err
		}
		if !isParticipant(cur, agentID) {
			return nil, store.NotFoundf("participant %s of session %s", agentID, id)
		}
		if agentID == cur.Initiator {
			return nil, store.Conflictf("the initiator cannot leave active session %s", id)
		}
		ch := unchanged(cur)
		ch.leave = agentID
		return ch, nil
	})
	return sess, fail("leave session", err)
}

// CompleteSession ends an active session with a summary.
func (s *Store) CompleteSession(ctx context.Context, tenant, id, summary string) (store.Session, error) {
	if err := checkSessionID(tenant, id); err != nil {
		return store.Session{}, err
	}
	if err := store.CheckText("summary", summary, store.MaxTextLen, false); err != nil {
		return store.Session{}, err
	}
	sess, err := s.changeSession(ctx, tenant, id, func(cur store.Session) (*sessionChange, error) {
		if err := checkActive(cur); err != nil {
			return nil, err
		}
		return &sessionChange{status: store.SessionCompleted, summary: summary, ended: true}, nil
	})
	return sess, fail("complete session", err)
}

// FailSession ends an active session with an error.
func (s *Store) FailSession(ctx context.Context, tenant, id string, cause store.SessionError) (store.Session, error) {
	if err := checkSessionID(tenant, id); err != nil {
		return store.Session{}, err
	}
	if err := store.CheckName("error.code", cause.Code, 64); err != nil {
		return store.Session{}, err
	}
	if err := store.CheckText("error.message", cause.Message, store.MaxTextLen, true); err != nil {
		return store.Session{}, err
	}
	sess, err := s.changeSession(ctx, tenant, id, func(cur store.Session) (*sessionChange, error) {
		if err := checkActive(cur); err != nil {
			return nil, err
		}
		return &sessionChange{status: store.SessionFailed, cause: &cause, ended: true}, nil
	})
	return sess, fail("fail session", err)
}

// ListSessions lists sessions newest first: (created_at, id) descending.
func (s *Store) ListSessions(ctx context.Context, tenant string, q store.ListSessions) (store.Page[store.Session], error) {
	var page store.Page[store.Session]
	if err := checkTenant(tenant); err != nil {
		return page, err
	}
	switch q.Status {
	case "", store.SessionActive, store.SessionCompleted, store.SessionFailed:
	default:
		return page, store.Invalid("status", "must be active, completed or failed, got %q", q.Status)
	}
	if q.Initiator != "" {
		if err := store.CheckName("initiator", q.Initiator, store.MaxIDLen); err != nil {
			return page, err
		}
	}
	limit, err := store.CheckLimit(q.Limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return page, err
	}
	b := builder{}
	b.where("s.tenant = %s", tenant)
	if q.Status != "" {
		b.where("s.status = %s", string(q.Status))
	}
	if q.Initiator != "" {
		b.where("s.initiator = %s", q.Initiator)
	}
	if q.Cursor != "" {
		t, id, _, err := store.DecodeCursor("sessions", q.Cursor)
		if err != nil {
			return page, err
		}
		b.where("(s.created_at, s.id) < (%s, %s)", t, id)
	}
	sql := selectSession + b.clause() +
		` ORDER BY s.created_at DESC, s.id COLLATE "C" DESC LIMIT ` + b.arg(limit+1)
	items, err := collect(ctx, s.pool, sql, b.args, scanSession)
	if err != nil {
		return page, fmt.Errorf("list sessions: %w", classify(err))
	}
	if len(items) > limit {
		items = items[:limit]
		last := items[limit-1]
		page.NextCursor = store.EncodeCursor("sessions", last.CreatedAt, last.ID, "")
	}
	page.Items = items
	return page, nil
}

// RecentSessions lists sessions most recently updated first.
func (s *Store) RecentSessions(ctx context.Context, tenant string, after *store.Pos, limit int) ([]store.Session, error) {
	if err := checkTenant(tenant); err != nil {
		return nil, err
	}
	limit, err := store.CheckLimit(limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return nil, err
	}
	b := builder{}
	b.where("s.tenant = %s", tenant)
	if after != nil {
		b.where("(s.updated_at, s.id) < (%s, %s)", after.UpdatedAt, after.ID)
	}
	sql := selectSession + b.clause() +
		` ORDER BY s.updated_at DESC, s.id COLLATE "C" DESC LIMIT ` + b.arg(limit)
	items, err := collect(ctx, s.pool, sql, b.args, scanSession)
	if err != nil {
		return nil, fmt.Errorf("recent sessions: %w", classify(err))
	}
	return items, nil
}
