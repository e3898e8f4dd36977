package auth

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// StoredKey is an API key created through the admin API, as the store
// holds it (package store; cmd/api adapts one to the other).
type StoredKey struct {
	ID, Tenant string
	Scopes     []string
	Admin      bool
	Revoked    bool
}

// KeyLookup finds a stored key by the hex SHA-256 of its secret; found is
// false when no key has it. An error means the store could not say.
type KeyLookup func(ctx context.Context, hash string) (key StoredKey, found bool, err error)

// keyCacheTTL is how long a lookup's answer is reused. It bounds how long
// a revoked key keeps working on a replica that saw it just before (and
// how long a new key stays unknown to one that looked just before it was
// created), and spares the database a query per request.
const keyCacheTTL = 5 * time.Second

// maxCachedKeys bounds each half of the cache (keys found, keys not
// found); a flood of made-up keys empties the misses, never the hits, so
// real keys keep being answered from memory.
const maxCachedKeys = 10_000

type cachedKey struct {
	key   StoredKey
	found bool
	until time.Time
}

// keyCache remembers lookups for keyCacheTTL, found or not, and runs one
// lookup per hash at a time (concurrent requests with the same key wait
// for it).
type keyCache struct {
	lookup KeyLookup
	now    func() time.Time
	flight singleflight.Group
	mu     sync.Mutex
	hits   map[string]cachedKey
	misses map[string]cachedKey
}

func newKeyCache(lookup KeyLookup, now func() time.Time) *keyCache {
	return &keyCache{lookup: lookup, now: now, hits: map[string]cachedKey{}, misses: map[string]cachedKey{}}
}

func (c *keyCache) get(ctx context.Context, hash string) (StoredKey, bool, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.hits[hash]
	if !ok {
		e, ok = c.misses[hash]
	}
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.key, e.found, nil
	}
	v, err, _ := c.flight.Do(hash, func() (any, error) {
		key, found, err := c.lookup(ctx, hash)
		if err != nil {
			return nil, err
		}
		e := cachedKey{key: key, found: found, until: now.Add(keyCacheTTL)}
		c.mu.Lock()
		defer c.mu.Unlock()
		m := c.misses
		if found {
			m = c.hits
			delete(c.misses, hash)
		} else {
			delete(c.hits, hash)
		}
		if len(m) >= maxCachedKeys {
			clear(m)
		}
		m[hash] = e
		return e, nil
	})
	if err != nil {
		return StoredKey{}, false, err
	}
	e = v.(cachedKey)
	return e.key, e.found, nil
}
