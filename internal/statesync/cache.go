package statesync

import (
	"strings"
	"sync"
)

// MaxCachedResolutions bounds the resolution cache (seed, "Memory (cache):
// Bounded at 2048 entries. Full eviction on overflow"), and the description
// cache likewise. Full eviction keeps the caches trivial: tool names are
// few and stable, so a full cache means an unusual burst of names, and
// dropping everything costs one recomputation per name afterwards, never a
// wrong answer.
const MaxCachedResolutions = 2048

// maxCachedNameLen is the longest name the caches keep. Longer names are
// still answered correctly but never cached, so the caches hold at most
// 2048 names of bounded size however long the names a client sends. MCP
// tool names are at most 128 characters.
const maxCachedNameLen = MaxPatternLen

// boundedCache maps tool names to V, for at most MaxCachedResolutions
// names. Reads go through a sync.Map, which reads without writing shared
// memory, so concurrent hits neither allocate nor contend (an RWMutex's
// read lock writes a shared counter, which costs several times more under
// parallel load). Writers, on misses only, are serialised by mu, which
// keeps n exact and so the bound strict.
type boundedCache[V any] struct {
	m         sync.Map // string → V
	mu        sync.Mutex
	n         int
	evictions uint64
}

func (c *boundedCache[V]) get(name string) (V, bool) {
	v, ok := c.m.Load(name)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// put caches v for name, first evicting everything if the cache is full.
func (c *boundedCache[V]) put(name string, v V) {
	if len(name) > maxCachedNameLen {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m.Load(name); !ok {
		if c.n >= MaxCachedResolutions {
			c.m.Clear()
			c.n = 0
			c.evictions++
		}
		c.n++
	}
	// The name may view a request buffer (the protocol decoder does not
	// copy strings), and the cache outlives the request.
	c.m.Store(strings.Clone(name), v)
}

func (c *boundedCache[V]) stats() (entries int, evictions uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.evictions
}
