package cache

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Errors returned by Set, for errors.Is.
var (
	// ErrTooLarge: the entry's size exceeds maxSizeBytes; it is not stored.
	ErrTooLarge = errors.New("entry larger than the cache")
	// ErrInvalidEntry: a negative TTL, an unknown priority or a negative
	// size from the sizer.
	ErrInvalidEntry = errors.New("invalid cache entry")
	// ErrClosed: the cache has been closed.
	ErrClosed = errors.New("cache closed")
)

// Cache is an in-process cache bounded in bytes and entries. It is safe for
// concurrent use; every method is atomic (INV-MCP-CACHE-005). Create one
// with New and release it with Close.
type Cache[K comparable, V any] struct {
	// Set by New, read-only after.
	cfg       Config
	highBytes int64 // HighWaterMark × MaxSizeBytes: crossing it evicts...
	lowBytes  int64 // ...down to LowWaterMark × MaxSizeBytes
	sizer     func(K, V) int64
	clock     func() time.Time
	epoch     time.Time // times are kept as nanoseconds since epoch
	onEvict   func(K, V, EvictReason)
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	mu          sync.Mutex
	items       map[K]*entry[K, V]
	tiers       [numPriorities]policy[K, V] // indexed by Priority-1
	expiry      expiryIndex[K, V]
	curSize     int64  // sum of the entries' sizes
	seq         uint64 // insertions so far
	spare       *entry[K, V]
	closed      bool
	hits        uint64
	misses      uint64
	evictions   uint64
	expirations uint64
	cleaned     bool  // a cleanup has run
	lastCleanup int64 // when, since epoch
}

// entry is one cached key and value, and the node of every structure that
// indexes it: its tier's policy list and, with a TTL, its expiry class.
type entry[K comparable, V any] struct {
	key      K
	value    V
	size     int64
	seq      uint64 // insertion number: orders equal expiry times
	created  int64  // since epoch
	accessed int64  // since epoch: last Set or Get hit (INV-MCP-CACHE-004)
	ttl      int64  // 0: never expires
	expires  int64  // created + ttl, when ttl > 0
	hits     uint64 // Get hits (accessCount)
	priority Priority

	prev, next *entry[K, V] // policy list
	bucket     *lfuBucket[K, V]

	eprev, enext *entry[K, V] // expiry class list
	class        *ttlClass[K, V]
}

// expired applies INV-MCP-CACHE-003's test: now > createdAt + ttl.
func (e *entry[K, V]) expired(now int64) bool { return e.ttl > 0 && now > e.expires }

// evicted is an entry removed under the lock whose OnEvict call is due
// once the lock is released.
type evicted[K comparable, V any] struct {
	key    K
	value  V
	reason EvictReason
}

// New returns a cache for cfg and starts its cleanup goroutine, which runs
// every cfg.CleanupInterval until Close.
func New[K comparable, V any](cfg Config, opts ...Option[K, V]) (*Cache[K, V], error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cache: new: %w", err)
	}
	var o options[K, V]
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		o.clock = time.Now
	}
	if o.sizer == nil {
		o.sizer = DefaultSizer[K, V]()
	}
	c := &Cache[K, V]{
		cfg:       cfg,
		highBytes: int64(cfg.HighWaterMark * float64(cfg.MaxSizeBytes)),
		lowBytes:  int64(cfg.LowWaterMark * float64(cfg.MaxSizeBytes)),
		sizer:     o.sizer,
		clock:     o.clock,
		onEvict:   o.onEvict,
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	c.epoch = c.clock()
	c.reset()
	go c.cleanupLoop()
	return c, nil
}

// reset empties the cache; the caller holds mu or owns c.
func (c *Cache[K, V]) reset() {
	c.items = make(map[K]*entry[K, V])
	for i := range c.tiers {
		c.tiers[i] = newPolicy[K, V](c.cfg.EvictionPolicy)
	}
	c.expiry.reset()
	c.curSize = 0
	c.spare = nil
}

// now is the clock in nanoseconds since epoch. With time.Now it is
// monotonic, because both readings carry the monotonic clock.
func (c *Cache[K, V]) now() int64 { return int64(c.clock().Sub(c.epoch)) }

// Get returns the value stored under key. It never returns an expired
// entry (INV-MCP-CACHE-003): one found expired is removed and counted as a
// miss. A hit records the access for the eviction policy: LRU moves the
// entry to the front, LFU raises its frequency, FIFO does nothing. O(1).
func (c *Cache[K, V]) Get(key K) (V, bool) {
	var zero V
	c.mu.Lock()
	e, ok := c.items[key]
	if !ok {
		c.misses++
		c.mu.Unlock()
		return zero, false
	}
	now := c.now()
	if e.expired(now) {
		k, v := e.key, e.value
		c.expirations++
		c.misses++
		c.removeEntry(e)
		c.mu.Unlock()
		if c.onEvict != nil {
			c.onEvict(k, v, EvictExpired)
		}
		return zero, false
	}
	e.accessed = now
	e.hits++
	c.tiers[e.priority-1].touch(e)
	c.hits++
	v := e.value
	c.mu.Unlock()
	return v, true
}

// Set stores value under key, replacing any entry for it: the new entry
// starts afresh (creation time, TTL, priority, access count). The TTL is
// WithTTL's, else Config.DefaultTTL; the priority WithPriority's, else
// Normal.
//
// If storing the entry would break a bound, Set first evicts: expired
// entries, earliest expiry first, then live ones by tier (Low, Normal,
// High) and, within a tier, by the policy. It evicts until the entry fits
// under MaxSizeBytes and MaxEntries (INV-MCP-CACHE-001, -002) and, if the
// cache would cross HighWaterMark × MaxSizeBytes, until it is at or below
// LowWaterMark × MaxSizeBytes with the new entry in it. An entry larger
// than that low mark therefore leaves the cache to itself.
//
// An entry larger than MaxSizeBytes is refused with ErrTooLarge and
// evicts nothing. On any error the key is absent afterwards: the value it
// had is removed, since the caller meant to replace it. The size is
// computed before the lock is taken; the rest is O(1) per evicted entry.
func (c *Cache[K, V]) Set(key K, value V, opts ...SetOption) error {
	ttl, prio := c.cfg.DefaultTTL, Normal
	for _, o := range opts {
		if o.hasTTL {
			ttl = o.ttl
		}
		if o.priority != 0 {
			prio = o.priority
		}
	}
	size := c.sizer(key, value)
	var err error
	switch {
	case ttl < 0:
		err = fmt.Errorf("cache: set: TTL %v: %w", ttl, ErrInvalidEntry)
	case prio > High:
		err = fmt.Errorf("cache: set: priority %v: %w", prio, ErrInvalidEntry)
	case size < 0:
		err = fmt.Errorf("cache: set: sizer returned %d bytes: %w", size, ErrInvalidEntry)
	case size > c.cfg.MaxSizeBytes:
		err = fmt.Errorf("cache: set: %d bytes, maxSizeBytes is %d: %w", size, c.cfg.MaxSizeBytes, ErrTooLarge)
	}

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("cache: set: %w", ErrClosed)
	}
	if old, ok := c.items[key]; ok {
		c.removeEntry(old)
	}
	if err != nil {
		c.mu.Unlock()
		return err
	}
	now := c.now()
	ev := c.makeRoom(size, now)

	e := c.spare
	if e != nil {
		c.spare = nil
	} else {
		e = new(entry[K, V])
	}
	c.seq++
	*e = entry[K, V]{key: key, value: value, size: size, seq: c.seq, created: now, accessed: now, priority: prio}
	if ttl > 0 {
		e.ttl = int64(ttl)
		e.expires = now + e.ttl
		if now > 0 && e.expires < now { // overflow: as good as never
			e.expires = math.MaxInt64
		}
		c.expiry.add(e)
	}
	c.items[key] = e
	c.tiers[prio-1].add(e)
	c.curSize += size
	c.mu.Unlock()

	c.notify(ev)
	return nil
}

// makeRoom evicts until an entry of size fits; see Set. The caller holds
// mu. It returns the evictions to report, if there is an OnEvict.
func (c *Cache[K, V]) makeRoom(size, now int64) []evicted[K, V] {
	limit := int64(math.MaxInt64)
	if c.curSize+size > c.highBytes {
		limit = c.lowBytes
	}
	full := func() bool {
		return c.curSize+size > limit || len(c.items) >= c.cfg.MaxEntries
	}
	var ev []evicted[K, V]
	for full() {
		e := c.expiry.first()
		if e == nil || !e.expired(now) {
			break
		}
		c.expirations++
		ev = c.evict(e, EvictExpired, ev)
	}
	for full() {
		e := c.victim()
		if e == nil {
			break
		}
		c.evictions++
		ev = c.evict(e, EvictCapacity, ev)
	}
	return ev
}

// victim is the next entry to evict by policy: from the lowest non-empty
// tier.
func (c *Cache[K, V]) victim() *entry[K, V] {
	for _, t := range c.tiers {
		if t.len() > 0 {
			return t.victim()
		}
	}
	return nil
}

// evict removes e, noting it in ev for OnEvict.
func (c *Cache[K, V]) evict(e *entry[K, V], why EvictReason, ev []evicted[K, V]) []evicted[K, V] {
	if c.onEvict != nil {
		ev = append(ev, evicted[K, V]{e.key, e.value, why})
	}
	c.removeEntry(e)
	return ev
}

// removeEntry unlinks e from every index and keeps the node for the next
// Set. The caller holds mu.
func (c *Cache[K, V]) removeEntry(e *entry[K, V]) {
	delete(c.items, e.key)
	c.tiers[e.priority-1].remove(e)
	if e.ttl > 0 {
		c.expiry.remove(e)
	}
	c.curSize -= e.size
	*e = entry[K, V]{} // drop the key and value for the collector
	c.spare = e
}

// notify reports evictions; the caller must not hold mu.
func (c *Cache[K, V]) notify(ev []evicted[K, V]) {
	for _, x := range ev {
		c.onEvict(x.key, x.value, x.reason)
	}
}

// Delete removes key's entry and reports whether a live one was there. An
// expired entry is removed too, as an expiry, and reported as absent.
func (c *Cache[K, V]) Delete(key K) bool {
	c.mu.Lock()
	e, ok := c.items[key]
	if !ok {
		c.mu.Unlock()
		return false
	}
	if e.expired(c.now()) {
		k, v := e.key, e.value
		c.expirations++
		c.removeEntry(e)
		c.mu.Unlock()
		if c.onEvict != nil {
			c.onEvict(k, v, EvictExpired)
		}
		return false
	}
	c.removeEntry(e)
	c.mu.Unlock()
	return true
}

// Item describes a cached entry (MCPCacheEntrySchema).
type Item[V any] struct {
	Value          V
	SizeBytes      int64
	CreatedAt      time.Time
	LastAccessedAt time.Time
	AccessCount    uint64
	TTL            time.Duration // 0: never expires
	Priority       Priority
}

// Peek returns key's entry without counting a hit or miss or touching the
// eviction order. Like Get, it never returns an expired entry.
func (c *Cache[K, V]) Peek(key K) (Item[V], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok || e.expired(c.now()) {
		return Item[V]{}, false
	}
	return Item[V]{
		Value:          e.value,
		SizeBytes:      e.size,
		CreatedAt:      c.epoch.Add(time.Duration(e.created)),
		LastAccessedAt: c.epoch.Add(time.Duration(e.accessed)),
		AccessCount:    e.hits,
		TTL:            time.Duration(e.ttl),
		Priority:       e.priority,
	}, true
}

// Len is the number of entries stored, including expired ones that no
// Get, eviction or cleanup has removed yet.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

// Close stops the cleanup goroutine, waits for it (INV-MCP-XC-003) and
// drops every entry without calling OnEvict. Afterwards Get and Peek miss,
// Delete reports false and Set returns ErrClosed. Close is idempotent; it
// must not be called from an OnEvict running on the cleanup goroutine.
func (c *Cache[K, V]) Close() {
	c.closeOnce.Do(func() {
		close(c.stop)
		<-c.done
		c.mu.Lock()
		c.closed = true
		c.reset()
		c.mu.Unlock()
	})
}

func (c *Cache[K, V]) cleanupLoop() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.CleanupInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.cleanup()
		}
	}
}

// cleanup removes every expired entry and recomputes the size from the
// entries that remain (INV-MCP-CACHE-006), in one critical section. It
// holds the lock for a pass over the map: about a millisecond per
// 100,000 entries.
func (c *Cache[K, V]) cleanup() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	now := c.now()
	var ev []evicted[K, V]
	var sum int64
	for _, e := range c.items {
		if e.expired(now) {
			c.expirations++
			ev = c.evict(e, EvictExpired, ev)
			continue
		}
		sum += e.size
	}
	c.curSize = sum
	c.cleaned, c.lastCleanup = true, now
	c.mu.Unlock()
	c.notify(ev)
}
