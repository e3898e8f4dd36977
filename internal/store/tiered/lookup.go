package tiered

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// LookupMemory is GetMemory that also reports whether a cache answered
// (tier 1 or tier 2). It never returns an expired entry.
//
// Unlike GetMemory it does not copy: the entry is shared with the cache
// and with other callers, so treat it, and every slice and pointer in it,
// as read-only — serialize it, never modify it. Use GetMemory where a
// caller needs a value of its own.
func (s *Store) LookupMemory(ctx context.Context, tenant, namespace, key string) (store.MemoryEntry, bool, error) {
	if ctx.Err() != nil { // the wrapped store says how a done context fails
		e, err := s.next.GetMemory(ctx, tenant, namespace, key)
		return e, false, err
	}
	k := memKey(tenant, namespace, key)
	if it, ok := s.l1.get(k); ok {
		e := it.val.(*store.MemoryEntry)
		if e.ExpiresAt == nil || s.l1.now().Before(*e.ExpiresAt) {
			return *e, true, nil
		}
		s.l1.c.Delete(k)
	}
	return lookup(ctx, s, k, func(ctx context.Context) (store.MemoryEntry, error) {
		return s.next.GetMemory(ctx, tenant, namespace, key)
	})
}

// LookupSession is GetSession that also reports whether a cache answered.
// The session is shared and read-only, as for LookupMemory.
func (s *Store) LookupSession(ctx context.Context, tenant, id string) (store.Session, bool, error) {
	if ctx.Err() != nil {
		v, err := s.next.GetSession(ctx, tenant, id)
		return v, false, err
	}
	k := sessionKey(tenant, id)
	if it, ok := s.l1.get(k); ok {
		return *it.val.(*store.Session), true, nil
	}
	return lookup(ctx, s, k, func(ctx context.Context) (store.Session, error) {
		return s.next.GetSession(ctx, tenant, id)
	})
}

// LookupAgent is GetAgent that also reports whether a cache answered. The
// agent is shared and read-only, as for LookupMemory.
func (s *Store) LookupAgent(ctx context.Context, tenant, id string) (store.Agent, bool, error) {
	if ctx.Err() != nil {
		v, err := s.next.GetAgent(ctx, tenant, id)
		return v, false, err
	}
	k := agentKey(tenant, id)
	if it, ok := s.l1.get(k); ok {
		return *it.val.(*store.Agent), true, nil
	}
	return lookup(ctx, s, k, func(ctx context.Context) (store.Agent, error) {
		return s.next.GetAgent(ctx, tenant, id)
	})
}

// GetMemory implements store.Store through LookupMemory, returning a deep
// copy the caller may modify, as the store contract requires.
func (s *Store) GetMemory(ctx context.Context, tenant, namespace, key string) (store.MemoryEntry, error) {
	e, _, err := s.LookupMemory(ctx, tenant, namespace, key)
	return cloneMemory(e), err
}

// GetSession implements store.Store through LookupSession, returning a
// deep copy.
func (s *Store) GetSession(ctx context.Context, tenant, id string) (store.Session, error) {
	v, _, err := s.LookupSession(ctx, tenant, id)
	return cloneSession(v), err
}

// GetAgent implements store.Store through LookupAgent, returning a deep
// copy.
func (s *Store) GetAgent(ctx context.Context, tenant, id string) (store.Agent, error) {
	v, _, err := s.LookupAgent(ctx, tenant, id)
	return cloneAgent(v), err
}

// lookup is the path below a tier-1 miss: Redis, then the wrapped store,
// populating the tiers on the way back. Errors of the wrapped store are
// returned unchanged: their messages may reach clients, and this layer
// adds nothing a client could act on.
func lookup[T entity](ctx context.Context, s *Store, k ckey, fetch func(context.Context) (T, error)) (T, bool, error) {
	tok := s.l1.begin(k) // before any read, see tier1.populate
	var rkey string
	var fill bool // Redis had nothing under the key: populate it
	if t := s.t2; t != nil && t.usable() {
		rkey = t.key(k)
		raw, err := t.get(ctx, rkey)
		switch {
		case err == nil:
			if v, ok := decodeValue[T](raw); ok {
				if _, exp := meta(&v); !expired(exp, t.now()) {
					t.hits.Add(1)
					populate(s.l1, tok, k, &v)
					return v, true, nil
				}
			}
			t.misses.Add(1) // a tombstone, or dead: the store decides
		case errors.Is(err, redis.Nil):
			t.misses.Add(1)
			fill = true
		case ctx.Err() != nil:
			// The caller gave up: no fault of Redis's. The store call
			// below fails the way the store fails a done context.
		default:
			// A failed read leaves nothing stale behind: the store
			// answers this call, and the connection counts the failure
			// towards Redis's health (one slow reply does not stop the
			// next call from reading Redis).
			t.errs.Add(1)
		}
	}
	start := time.Now() // monotonic, for the populate guard
	v, err := fetch(ctx)
	if err != nil {
		return v, false, err
	}
	if s.afterFetch != nil {
		s.afterFetch(k)
	}
	if fill {
		populateRedis(ctx, s.t2, rkey, &v, start)
	}
	populate(s.l1, tok, k, &v)
	return v, false, nil
}
