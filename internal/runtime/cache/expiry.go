package cache

// expiryIndex finds the entry that expires first in O(1), so that eviction
// can remove expired entries before live ones without scanning the cache.
//
// Entries with a TTL are grouped into one class per distinct TTL. Within a
// class, entries are kept in (expires, seq) order; with a monotonic clock
// (the default) every insert is an append, because a later insert with the
// same TTL expires later. A min-heap over the classes, keyed by each
// class's first entry, yields the globally first expiry. Insert and remove
// are O(1) plus O(log d) heap work when a class's first entry changes, d
// being the number of distinct TTLs in the cache (usually one or two: the
// default TTL and a few per-tool overrides).
type expiryIndex[K comparable, V any] struct {
	classes map[int64]*ttlClass[K, V]
	heap    []*ttlClass[K, V]
}

// ttlClass lists the entries of one TTL through their eprev/enext fields.
type ttlClass[K comparable, V any] struct {
	ttl        int64
	head, tail *entry[K, V]
	idx        int // position in the heap
}

func (x *expiryIndex[K, V]) reset() {
	x.classes = make(map[int64]*ttlClass[K, V])
	x.heap = nil
}

// expiresBefore reports whether a expires before b, ties broken by
// insertion order so that the order is total and deterministic.
func expiresBefore[K comparable, V any](a, b *entry[K, V]) bool {
	if a.expires != b.expires {
		return a.expires < b.expires
	}
	return a.seq < b.seq
}

// add indexes e, which must have a TTL.
func (x *expiryIndex[K, V]) add(e *entry[K, V]) {
	c := x.classes[e.ttl]
	if c == nil {
		c = &ttlClass[K, V]{ttl: e.ttl}
		x.classes[e.ttl] = c
	}
	e.class = c
	// Find e's place from the back: O(1) unless the clock went backwards.
	at := c.tail
	for at != nil && expiresBefore(e, at) {
		at = at.eprev
	}
	if at == nil { // e becomes the class's first entry
		wasEmpty := c.head == nil
		e.eprev, e.enext = nil, c.head
		if wasEmpty {
			c.tail = e
		} else {
			c.head.eprev = e
		}
		c.head = e
		if wasEmpty {
			x.push(c)
		} else {
			x.up(c.idx) // it expires no later than the old first entry
		}
		return
	}
	e.eprev, e.enext = at, at.enext
	if at.enext != nil {
		at.enext.eprev = e
	} else {
		c.tail = e
	}
	at.enext = e
}

// remove unindexes e.
func (x *expiryIndex[K, V]) remove(e *entry[K, V]) {
	c := e.class
	wasHead := c.head == e
	if e.eprev != nil {
		e.eprev.enext = e.enext
	} else {
		c.head = e.enext
	}
	if e.enext != nil {
		e.enext.eprev = e.eprev
	} else {
		c.tail = e.eprev
	}
	e.eprev, e.enext, e.class = nil, nil, nil
	switch {
	case c.head == nil:
		x.removeAt(c.idx)
		delete(x.classes, c.ttl)
	case wasHead:
		// The new head expires no earlier than the old one did.
		x.down(c.idx)
	}
}

// first is the entry that expires first, nil if no entry has a TTL.
func (x *expiryIndex[K, V]) first() *entry[K, V] {
	if len(x.heap) == 0 {
		return nil
	}
	return x.heap[0].head
}

// The heap of classes, ordered by their first entries.

func (x *expiryIndex[K, V]) less(i, j int) bool {
	return expiresBefore(x.heap[i].head, x.heap[j].head)
}

func (x *expiryIndex[K, V]) swap(i, j int) {
	x.heap[i], x.heap[j] = x.heap[j], x.heap[i]
	x.heap[i].idx = i
	x.heap[j].idx = j
}

func (x *expiryIndex[K, V]) push(c *ttlClass[K, V]) {
	c.idx = len(x.heap)
	x.heap = append(x.heap, c)
	x.up(c.idx)
}

func (x *expiryIndex[K, V]) removeAt(i int) {
	last := len(x.heap) - 1
	if i != last {
		x.swap(i, last)
	}
	x.heap[last] = nil
	x.heap = x.heap[:last]
	if i != last {
		x.down(i)
		x.up(i)
	}
}

func (x *expiryIndex[K, V]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !x.less(i, parent) {
			return
		}
		x.swap(i, parent)
		i = parent
	}
}

func (x *expiryIndex[K, V]) down(i int) {
	n := len(x.heap)
	for {
		smallest := i
		if l := 2*i + 1; l < n && x.less(l, smallest) {
			smallest = l
		}
		if r := 2*i + 2; r < n && x.less(r, smallest) {
			smallest = r
		}
		if smallest == i {
			return
		}
		x.swap(i, smallest)
		i = smallest
	}
}
