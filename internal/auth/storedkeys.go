package auth

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mcp-runtime/mcp-runtime/internal/ratelimit"
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
// for it). The lookups of hashes no lookup has found — unknown keys,
// which is what a flood of made-up keys is made of — are admitted first
// by the caller and then by a token bucket shared by every caller
// (auth.apiKeyLookupsPerSecond), so such a flood reaches the store at a
// bounded rate however many clients and addresses it comes from. A key
// found before is looked up again when its answer expires without
// either: those lookups are bounded by the keys that exist, and a flood
// must not make real keys fail.
type keyCache struct {
	lookup  KeyLookup
	now     func() time.Time
	unknown *ratelimit.Bucket
	flight  singleflight.Group
	mu      sync.Mutex
	hits    map[string]cachedKey
	misses  map[string]cachedKey
	// lookups counts the calls of lookup; deferred, the lookups of
	// unknown keys the bucket turned away.
	lookups, deferred atomic.Int64
}

func newKeyCache(lookup KeyLookup, perSecond int, now func() time.Time) *keyCache {
	return &keyCache{lookup: lookup, now: now, unknown: ratelimit.NewBucket(ratelimit.Rate{PerSecond: float64(perSecond), Burst: perSecond}, now),
		hits: map[string]cachedKey{}, misses: map[string]cachedKey{}}
}

// lookupsBusy is a lookup of an unknown key refused by the bucket: the
// key may be valid, so the answer is 503, to retry after retryAfter.
type lookupsBusy struct{ retryAfter time.Duration }

func (e *lookupsBusy) Error() string {
	return fmt.Sprintf("too many API keys to look up; retry in %v", e.retryAfter)
}

// get returns the stored key of hash, from the cache while its answer is
// fresh, else from a lookup. Before a lookup of an unknown hash, admit
// is asked (the caller's own budget; a non-nil answer is returned as the
// error), then the bucket (*lookupsBusy when it has no token).
func (c *keyCache) get(ctx context.Context, hash string, admit func() error) (StoredKey, bool, error) {
	now := c.now()
	c.mu.Lock()
	e, known := c.hits[hash]
	ok := known
	if !ok {
		e, ok = c.misses[hash]
	}
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.key, e.found, nil
	}
	if !known {
		if err := admit(); err != nil {
			return StoredKey{}, false, err
		}
	}
	v, err, _ := c.flight.Do(hash, func() (any, error) {
		if !known {
			if wait := c.unknown.Take(); wait > 0 {
				c.deferred.Add(1)
				return nil, &lookupsBusy{retryAfter: wait}
			}
		}
		c.lookups.Add(1)
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
