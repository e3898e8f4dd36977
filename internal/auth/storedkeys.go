package auth

import (
	"context"
	"sync"
	"time"
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

// maxCachedKeys bounds the cache; a flood of made-up keys empties it
// rather than growing it.
const maxCachedKeys = 10_000

type cachedKey struct {
	key   StoredKey
	found bool
	until time.Time
}

// keyCache remembers lookups for keyCacheTTL, found or not.
type keyCache struct {
	lookup KeyLookup
	now    func() time.Time
	mu     sync.Mutex
	byHash map[string]cachedKey
}

func (c *keyCache) get(ctx context.Context, hash string) (StoredKey, bool, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.byHash[hash]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.key, e.found, nil
	}
	key, found, err := c.lookup(ctx, hash)
	if err != nil {
		return StoredKey{}, false, err
	}
	c.mu.Lock()
	if len(c.byHash) >= maxCachedKeys {
		c.byHash = map[string]cachedKey{}
	}
	c.byHash[hash] = cachedKey{key: key, found: found, until: now.Add(keyCacheTTL)}
	c.mu.Unlock()
	return key, found, nil
}
