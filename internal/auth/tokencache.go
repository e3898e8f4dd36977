package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// A verified token is remembered so that the next request carrying it
// (an agent sends the same token on every call) costs a SHA-256 and a map
// lookup instead of a signature verification (tens of microseconds for
// RS256). An entry lives until the token expires, and at most
// tokenCacheTTL; a hit is honoured only while the issuer still publishes
// the key (kid) that signed the token, so a withdrawn key stops its
// tokens at once, as without the cache. Only successes are
// kept: a refused token is checked again every time, so the cache cannot
// be filled with garbage that crowds out real tokens.
const (
	tokenCacheTTL = 5 * time.Minute
	maxCachedJWTs = 10_000
)

type cachedPrincipal struct {
	p     Principal
	kid   string
	until time.Time
}

type tokenCache struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[[sha256.Size]byte]cachedPrincipal
}

func newTokenCache(now func() time.Time) *tokenCache {
	return &tokenCache{now: now, m: map[[sha256.Size]byte]cachedPrincipal{}}
}

// get returns the principal of a token verified before, and the kid that
// signed it.
func (c *tokenCache) get(token string) (Principal, string, bool) {
	k := sha256.Sum256([]byte(token))
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if !ok || !c.now().Before(e.until) {
		return Principal{}, "", false
	}
	return e.p, e.kid, true
}

// put remembers p for token until exp (at most tokenCacheTTL from now).
// A full cache is emptied rather than grown.
func (c *tokenCache) put(token, kid string, p Principal, exp time.Time) {
	until := c.now().Add(tokenCacheTTL)
	if exp.Before(until) {
		until = exp
	}
	k := sha256.Sum256([]byte(token))
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCachedJWTs {
		c.m = map[[sha256.Size]byte]cachedPrincipal{}
	}
	c.m[k] = cachedPrincipal{p: p, kid: kid, until: until}
}
