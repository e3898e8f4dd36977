package cache

import "math"

// A policy orders the entries of one priority tier for eviction. Every
// method is O(1): the cache keeps one policy per tier, so choosing a victim
// is "first non-empty tier, its victim" and never scans or sorts entries
// (the PRD's P5 was a sort of the whole cache on every eviction).
type policy[K comparable, V any] interface {
	// add inserts a new entry.
	add(e *entry[K, V])
	// touch records a Get hit on e.
	touch(e *entry[K, V])
	// remove unlinks e.
	remove(e *entry[K, V])
	// victim is the entry to evict next, nil when the tier is empty.
	victim() *entry[K, V]
	// len is the number of entries in the tier.
	len() int
}

func newPolicy[K comparable, V any](name string) policy[K, V] {
	switch name {
	case PolicyLFU:
		return &lfuPolicy[K, V]{}
	case PolicyFIFO:
		return &recencyPolicy[K, V]{}
	default:
		return &recencyPolicy[K, V]{moveOnTouch: true}
	}
}

// list is an intrusive doubly-linked list of entries through their
// prev/next fields; head is the most recent end.
type list[K comparable, V any] struct {
	head, tail *entry[K, V]
	n          int
}

func (l *list[K, V]) pushFront(e *entry[K, V]) {
	e.prev, e.next = nil, l.head
	if l.head != nil {
		l.head.prev = e
	} else {
		l.tail = e
	}
	l.head = e
	l.n++
}

func (l *list[K, V]) remove(e *entry[K, V]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
	l.n--
}

func (l *list[K, V]) moveToFront(e *entry[K, V]) {
	if l.head == e {
		return
	}
	l.remove(e)
	l.pushFront(e)
}

// recencyPolicy is LRU (moveOnTouch) or FIFO: new entries go to the front,
// the victim is the back. LRU moves an entry to the front on every Get, so
// the back is always the least recently accessed (INV-MCP-CACHE-004).
type recencyPolicy[K comparable, V any] struct {
	l           list[K, V]
	moveOnTouch bool
}

func (p *recencyPolicy[K, V]) add(e *entry[K, V]) { p.l.pushFront(e) }

func (p *recencyPolicy[K, V]) touch(e *entry[K, V]) {
	if p.moveOnTouch {
		p.l.moveToFront(e)
	}
}

func (p *recencyPolicy[K, V]) remove(e *entry[K, V]) { p.l.remove(e) }
func (p *recencyPolicy[K, V]) victim() *entry[K, V]  { return p.l.tail }
func (p *recencyPolicy[K, V]) len() int              { return p.l.n }

// lfuPolicy is O(1) LFU (Shah, Mitra and Matani, 2010): a list of frequency
// buckets in ascending order, each holding its entries most recent first.
// A Get moves the entry to the bucket of the next frequency, creating it
// next to the current one if needed. The victim is the least recently
// touched entry of the lowest-frequency bucket.
type lfuPolicy[K comparable, V any] struct {
	head, tail *lfuBucket[K, V] // lowest and highest frequency
	n          int
	free       *lfuBucket[K, V] // recycled empty buckets, linked through next
	nfree      int
}

type lfuBucket[K comparable, V any] struct {
	freq       uint64
	items      list[K, V]
	prev, next *lfuBucket[K, V]
}

// maxFreeBuckets bounds the recycled buckets kept by an lfuPolicy: enough
// that steady Get traffic does not allocate, little enough not to matter.
const maxFreeBuckets = 64

func (p *lfuPolicy[K, V]) add(e *entry[K, V]) {
	b := p.head
	if b == nil || b.freq != 1 {
		b = p.newBucket(1, nil, p.head)
	}
	e.bucket = b
	b.items.pushFront(e)
	p.n++
}

func (p *lfuPolicy[K, V]) touch(e *entry[K, V]) {
	b := e.bucket
	if b.freq == math.MaxUint64 {
		b.items.moveToFront(e)
		return
	}
	nb := b.next
	if nb == nil || nb.freq != b.freq+1 {
		if b.items.n == 1 {
			// e is alone in its bucket: renumber it in place.
			b.freq++
			return
		}
		nb = p.newBucket(b.freq+1, b, b.next)
	}
	b.items.remove(e)
	nb.items.pushFront(e)
	e.bucket = nb
	if b.items.n == 0 {
		p.dropBucket(b)
	}
}

func (p *lfuPolicy[K, V]) remove(e *entry[K, V]) {
	b := e.bucket
	b.items.remove(e)
	e.bucket = nil
	p.n--
	if b.items.n == 0 {
		p.dropBucket(b)
	}
}

func (p *lfuPolicy[K, V]) victim() *entry[K, V] {
	if p.head == nil {
		return nil
	}
	return p.head.items.tail
}

func (p *lfuPolicy[K, V]) len() int { return p.n }

// newBucket links a bucket of frequency freq between prev and next.
func (p *lfuPolicy[K, V]) newBucket(freq uint64, prev, next *lfuBucket[K, V]) *lfuBucket[K, V] {
	b := p.free
	if b != nil {
		p.free = b.next
		p.nfree--
	} else {
		b = new(lfuBucket[K, V])
	}
	*b = lfuBucket[K, V]{freq: freq, prev: prev, next: next}
	if prev != nil {
		prev.next = b
	} else {
		p.head = b
	}
	if next != nil {
		next.prev = b
	} else {
		p.tail = b
	}
	return b
}

// dropBucket unlinks an empty bucket and keeps it for reuse.
func (p *lfuPolicy[K, V]) dropBucket(b *lfuBucket[K, V]) {
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		p.head = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		p.tail = b.prev
	}
	*b = lfuBucket[K, V]{}
	if p.nfree < maxFreeBuckets {
		b.next = p.free
		p.free = b
		p.nfree++
	}
}
