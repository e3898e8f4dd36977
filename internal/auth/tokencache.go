package auth

import (
	"strings"
	"sync"
	"time"
)

// A verified token is remembered so that the next request carrying it
// (an agent sends the same token on every call) costs a map lookup
// instead of a signature verification (tens of microseconds for RS256). An entry lives until the token expires, and at most
// tokenCacheTTL; a hit is honoured only while the issuer still publishes
// the key (kid) that signed the token, checked at most once per
// kidRecheck per token, so a withdrawn key stops its tokens within a
// second, as without the cache. Only successes are
// kept: a refused token is checked again every time, so the cache cannot
// be filled with garbage that crowds out real tokens.
const (
	tokenCacheTTL = 5 * time.Minute
	maxCachedJWTs = 10_000
	kidRecheck    = time.Second
)

type cachedPrincipal struct {
	p       Principal
	kid     string
	until   time.Time
	checked time.Time // when kid was last seen published
}

// tokenCache is keyed by the token itself: hashing it (SHA-256 of some
// 600 bytes) would cost more than the map lookup it guards, and the
// tokens are in this process's memory anyway while requests carry them.
type tokenCache struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]cachedPrincipal
}

func newTokenCache(now func() time.Time) *tokenCache {
	return &tokenCache{now: now, m: map[string]cachedPrincipal{}}
}

// get returns the principal of a token verified before, if it has not
// expired and its kid is still published (published is asked at most
// once per kidRecheck).
func (c *tokenCache) get(token string, published func(kid string) bool) (Principal, bool) {
	k := token
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if !ok || !now.Before(e.until) {
		return Principal{}, false
	}
	if now.Sub(e.checked) >= kidRecheck {
		if !published(e.kid) {
			return Principal{}, false
		}
		c.mu.Lock()
		if cur, ok := c.m[k]; ok {
			cur.checked = now
			c.m[k] = cur
		}
		c.mu.Unlock()
	}
	return e.p, true
}

// put remembers p for token until exp (at most tokenCacheTTL from now).
// A full cache is emptied rather than grown.
func (c *tokenCache) put(token, kid string, p Principal, exp time.Time) {
	until := c.now().Add(tokenCacheTTL)
	if exp.Before(until) {
		until = exp
	}
	k := strings.Clone(token) // not a slice of a larger buffer kept alive
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCachedJWTs {
		c.m = map[string]cachedPrincipal{}
	}
	c.m[k] = cachedPrincipal{p: p, kid: kid, until: until, checked: c.now()}
}
