package tiered

import (
	"context"
	"errors"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// Writes go to the wrapped store first; once it has answered, the change
// reaches the tiers in the order doc.go depends on: Redis (value or
// tombstone, and the message to the other replicas, in one script), then
// this process's tier 1.

// unchanged reports an error after which the wrapped store has certainly
// changed nothing: validation, a version or state conflict, a missing
// entity. Any other error (a timeout, a lost connection) leaves the
// outcome unknown, and the key is invalidated as if the write succeeded.
func unchanged(err error) bool {
	var fe *store.FieldError
	return errors.As(err, &fe) || errors.Is(err, store.ErrConflict) ||
		errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrAlreadyExists)
}

// stored applies a write whose result is v (or, on err, whose outcome is
// unknown) to both tiers. publish is false for entities that are new by
// construction, which no replica can hold.
func stored[T entity](ctx context.Context, s *Store, k ckey, v T, err error, start time.Time, publish bool) {
	if err != nil && unchanged(err) {
		return
	}
	if s.t2 != nil {
		if err != nil {
			writeRedis[T](ctx, s.t2, k, nil, start, true)
		} else {
			writeRedis(ctx, s.t2, k, &v, start, publish)
		}
	}
	if publish || err != nil {
		s.l1.invalidate(k)
	}
}

// dropped applies deletes (or writes of unknown outcome) to both tiers.
func (s *Store) dropped(ctx context.Context, keys ...ckey) {
	if len(keys) == 0 {
		return
	}
	if s.t2 != nil {
		s.t2.tombstones(ctx, keys)
	}
	for _, k := range keys {
		s.l1.invalidate(k)
	}
}

// PutMemory writes through to the wrapped store, then to both tiers.
func (s *Store) PutMemory(ctx context.Context, tenant string, in store.PutMemory) (store.MemoryEntry, error) {
	start := time.Now()
	e, err := s.next.PutMemory(ctx, tenant, in)
	stored(ctx, s, memKey(tenant, in.Namespace, in.Key), e, err, start, true)
	return e, err
}

// DeleteMemory deletes in the wrapped store, then drops the key from both
// tiers.
func (s *Store) DeleteMemory(ctx context.Context, tenant, namespace, key string) error {
	err := s.next.DeleteMemory(ctx, tenant, namespace, key)
	if err == nil || !unchanged(err) {
		s.dropped(ctx, memKey(tenant, namespace, key))
	}
	return err
}

// BulkDeleteMemory deletes in the wrapped store, then drops every key it
// reports removed. When the outcome is unknown and keys were listed, it
// drops those; a prefix delete of unknown outcome cannot name its keys,
// and the entries it may have removed stay cached until their TTL or the
// next write of each.
func (s *Store) BulkDeleteMemory(ctx context.Context, tenant, namespace string, keys []string, prefix string) ([]string, error) {
	removed, err := s.next.BulkDeleteMemory(ctx, tenant, namespace, keys, prefix)
	drop := removed
	if err != nil {
		if unchanged(err) {
			return removed, err
		}
		drop = keys
	}
	ks := make([]ckey, len(drop))
	for i, key := range drop {
		ks[i] = memKey(tenant, namespace, key)
	}
	s.dropped(ctx, ks...)
	return removed, err
}

// CreateSession writes the new session to tier 2 so that the first read
// of it, on any replica, is a hit. Nobody can hold its id yet, so nothing
// is published.
func (s *Store) CreateSession(ctx context.Context, tenant string, in store.NewSession) (store.Session, error) {
	start := time.Now()
	v, err := s.next.CreateSession(ctx, tenant, in)
	if err == nil {
		stored(ctx, s, sessionKey(tenant, v.ID), v, nil, start, false)
	}
	return v, err
}

// JoinSession writes through to the wrapped store, then to both tiers.
func (s *Store) JoinSession(ctx context.Context, tenant, id, agentID, role string, maxParticipants int) (store.Session, error) {
	start := time.Now()
	v, err := s.next.JoinSession(ctx, tenant, id, agentID, role, maxParticipants)
	stored(ctx, s, sessionKey(tenant, id), v, err, start, true)
	return v, err
}

// LeaveSession writes through to the wrapped store, then to both tiers.
func (s *Store) LeaveSession(ctx context.Context, tenant, id, agentID string) (store.Session, error) {
	start := time.Now()
	v, err := s.next.LeaveSession(ctx, tenant, id, agentID)
	stored(ctx, s, sessionKey(tenant, id), v, err, start, true)
	return v, err
}

// CompleteSession writes through to the wrapped store, then to both tiers.
func (s *Store) CompleteSession(ctx context.Context, tenant, id, summary string) (store.Session, error) {
	start := time.Now()
	v, err := s.next.CompleteSession(ctx, tenant, id, summary)
	stored(ctx, s, sessionKey(tenant, id), v, err, start, true)
	return v, err
}

// FailSession writes through to the wrapped store, then to both tiers.
func (s *Store) FailSession(ctx context.Context, tenant, id string, cause store.SessionError) (store.Session, error) {
	start := time.Now()
	v, err := s.next.FailSession(ctx, tenant, id, cause)
	stored(ctx, s, sessionKey(tenant, id), v, err, start, true)
	return v, err
}

// RegisterAgent writes through to the wrapped store, then to both tiers
// (the id may have belonged to a removed agent).
func (s *Store) RegisterAgent(ctx context.Context, tenant string, a store.Agent) (store.Agent, error) {
	start := time.Now()
	v, err := s.next.RegisterAgent(ctx, tenant, a)
	stored(ctx, s, agentKey(tenant, a.ID), v, err, start, true)
	return v, err
}

// RemoveAgent deletes in the wrapped store, then drops the agent from both
// tiers.
func (s *Store) RemoveAgent(ctx context.Context, tenant, id string) error {
	err := s.next.RemoveAgent(ctx, tenant, id)
	if err == nil || !unchanged(err) {
		s.dropped(ctx, agentKey(tenant, id))
	}
	return err
}
