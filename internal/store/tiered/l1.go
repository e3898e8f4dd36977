package tiered

import (
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/runtime/cache"
)

// numStripes is how many invalidation counters tier 1 keeps. More stripes
// mean fewer populates discarded because an unrelated key in the same
// stripe was invalidated at the same moment; 256 counters are 2 KiB.
const numStripes = 256

// item is a tier-1 entry.
type item struct {
	gen  uint64 // tier-1 generation it was stored in; valid only while current
	size int64
	val  any // *store.MemoryEntry, *store.Session or *store.Agent; never modified
}

// tier1 is the in-process tier: the cache plus what keeps a populate from
// storing a value older than an invalidation that raced it (see doc.go).
type tier1 struct {
	c      *cache.Cache[ckey, *item]
	defTTL time.Duration    // the cache's DefaultTTL: the longest an entry lives
	now    func() time.Time // Options.Clock: what an entry's expiresAt is judged against

	// live says tier 1 may be used: always without Redis; with it, only
	// while the invalidation subscription is confirmed.
	live atomic.Bool
	// gen is bumped whenever every entry must be dropped; entries of an
	// older generation read as misses.
	gen       atomic.Uint64
	stripes   [numStripes]atomic.Uint64
	seed      maphash.Seed
	staleHits atomic.Uint64 // Gets the cache counted as hits but gen turned into misses
	flushes   atomic.Uint64
}

func newTier1(cfg cache.Config, now func() time.Time) (*tier1, error) {
	c, err := cache.New(cfg, cache.WithSizer(func(_ ckey, it *item) int64 { return it.size }))
	if err != nil {
		return nil, err
	}
	return &tier1{c: c, defTTL: cfg.DefaultTTL, now: now, seed: maphash.MakeSeed()}, nil
}

// get returns k's current entry.
func (t *tier1) get(k ckey) (*item, bool) {
	if !t.live.Load() {
		return nil, false
	}
	it, ok := t.c.Get(k)
	if !ok {
		return nil, false
	}
	if it.gen != t.gen.Load() {
		t.staleHits.Add(1)
		t.c.Delete(k) // free the space now rather than when it ages out
		return nil, false
	}
	return it, true
}

// token is what a reader notes before it reads a value from a lower tier,
// so that populate can tell whether an invalidation overtook the read.
type token struct {
	usable bool
	gen    uint64
	stripe *atomic.Uint64
	seq    uint64
}

// begin must be called before the read whose result populate stores. The
// generation is read before live because setLive writes them in the other
// order: a reader that sees the old generation either sees live false or
// stores an entry of a generation that is already stale.
func (t *tier1) begin(k ckey) token {
	st := &t.stripes[maphash.Comparable(t.seed, k)%numStripes]
	return token{seq: st.Load(), gen: t.gen.Load(), usable: t.live.Load(), stripe: st}
}

// populate stores a value read after begin, unless it may already be
// stale: an invalidation of its stripe since begin removes it again
// (invalidate bumps the counter before deleting, so whichever of the
// two runs second removes the value).
func populate[T entity](t *tier1, tok token, k ckey, v *T) {
	if !tok.usable {
		return
	}
	_, expires := meta(v)
	ttl, ok := lifetime(expires, t.defTTL, t.now())
	if !ok {
		return
	}
	it := &item{gen: tok.gen, size: sizeOf(k, v), val: v}
	if t.c.Set(k, it, cache.WithTTL(ttl)) != nil {
		return // too large or closed: the caller has the value anyway
	}
	if tok.stripe.Load() != tok.seq {
		t.c.Delete(k)
	}
}

// invalidate drops k. Bump first, delete second: see populate.
func (t *tier1) invalidate(k ckey) {
	t.stripes[maphash.Comparable(t.seed, k)%numStripes].Add(1)
	t.c.Delete(k)
}

// flush drops every entry in O(1) by moving to a new generation.
func (t *tier1) flush() {
	t.gen.Add(1)
	t.flushes.Add(1)
}

// setLive turns the use of tier 1 on or off. Either way the generation
// moves on: going down, because invalidations may be missed from now on;
// coming up, so that reads that began while it was down store nothing.
func (t *tier1) setLive(live bool) {
	t.live.Store(live)
	t.gen.Add(1)
}

// stats is the cache's snapshot with stale-generation hits moved to the
// misses, where callers would expect them.
func (t *tier1) stats() cache.Stats {
	s := t.c.Stats()
	stale := min(t.staleHits.Load(), s.HitCount)
	s.HitCount -= stale
	s.MissCount += stale
	if n := s.HitCount + s.MissCount; n > 0 {
		s.HitRate = float64(s.HitCount) / float64(n)
	}
	return s
}
