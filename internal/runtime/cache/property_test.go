package cache

import (
	"bytes"
	"cmp"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestPropertyModel runs random sequences of Set, Get, Delete, Peek, clock
// advances and cleanups under each policy against a reference model: a
// naive cache that sorts all its entries to choose each victim (exactly
// what the PRD's P5 did, and easy to trust). After every operation it
// checks, besides agreement with the model (returned values, evictions in
// order, stats):
//
//   - size bound and entry bound (INV-MCP-CACHE-001, -002);
//   - TTL: no expired value is returned (INV-MCP-CACHE-003), because the
//     model never returns one and the cache must agree with it;
//   - eviction order: LRU evicts the least recently accessed entry of the
//     lowest tier (INV-MCP-CACHE-004), FIFO the oldest, LFU the least
//     frequently used, expired entries before all of them;
//   - size accuracy: currentSizeBytes is the exact sum of the entries'
//     sizes (INV-MCP-CACHE-006), and the cache's internal structures agree
//     with its map (check).
func TestPropertyModel(t *testing.T) {
	for _, pol := range []string{PolicyLRU, PolicyLFU, PolicyFIFO} {
		t.Run(pol, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) { runModel(rt, pol) })
		})
	}
}

type modelEntry struct {
	value   []byte
	size    int64
	seq     uint64 // insertion order
	touched uint64 // last Set or Get hit, in operations
	freq    uint64 // 1 + Get hits
	ttl     int64
	expires int64
	prio    Priority
}

type model struct {
	policy      string
	cfg         Config
	high, low   int64
	now         int64 // since the cache's epoch
	entries     map[int]*modelEntry
	size        int64
	seq, ops    uint64
	hits        uint64
	misses      uint64
	evictions   uint64
	expirations uint64
}

type event struct {
	key    int
	reason EvictReason
}

func (m *model) expired(e *modelEntry) bool { return e.ttl > 0 && m.now > e.expires }

func (m *model) remove(k int) {
	m.size -= m.entries[k].size
	delete(m.entries, k)
}

// victimOrder sorts keys by eviction order: tier, then policy.
func (m *model) victimOrder(a, b int) int {
	ea, eb := m.entries[a], m.entries[b]
	if c := cmp.Compare(ea.prio, eb.prio); c != 0 {
		return c
	}
	switch m.policy {
	case PolicyLRU:
		return cmp.Compare(ea.touched, eb.touched)
	case PolicyLFU:
		return cmp.Or(cmp.Compare(ea.freq, eb.freq), cmp.Compare(ea.touched, eb.touched))
	default:
		return cmp.Compare(ea.seq, eb.seq)
	}
}

// set applies Set and returns the evictions it causes, in order, and the
// expected error (nil or a sentinel).
func (m *model) set(k int, v []byte, size int64, ttl time.Duration, prio Priority) ([]event, error) {
	if _, ok := m.entries[k]; ok {
		m.remove(k)
	}
	switch {
	case ttl < 0 || prio > High || size < 0:
		return nil, ErrInvalidEntry
	case size > m.cfg.MaxSizeBytes:
		return nil, ErrTooLarge
	}
	limit := m.cfg.MaxSizeBytes + 1<<40
	if m.size+size > m.high {
		limit = m.low
	}
	full := func() bool { return m.size+size > limit || len(m.entries) >= m.cfg.MaxEntries }
	var evs []event
	// Expired entries, earliest expiry (then insertion) first.
	var exp []int
	for key, e := range m.entries {
		if m.expired(e) {
			exp = append(exp, key)
		}
	}
	slices.SortFunc(exp, func(a, b int) int {
		ea, eb := m.entries[a], m.entries[b]
		return cmp.Or(cmp.Compare(ea.expires, eb.expires), cmp.Compare(ea.seq, eb.seq))
	})
	for _, key := range exp {
		if !full() {
			break
		}
		m.remove(key)
		m.expirations++
		evs = append(evs, event{key, EvictExpired})
	}
	// Then live entries by tier and policy.
	live := slices.Collect(maps.Keys(m.entries))
	slices.SortFunc(live, m.victimOrder)
	for _, key := range live {
		if !full() {
			break
		}
		m.remove(key)
		m.evictions++
		evs = append(evs, event{key, EvictCapacity})
	}
	m.seq++
	m.ops++
	e := &modelEntry{value: v, size: size, seq: m.seq, touched: m.ops, freq: 1, prio: prio}
	if ttl > 0 {
		e.ttl, e.expires = int64(ttl), m.now+int64(ttl)
	}
	m.entries[k] = e
	m.size += size
	return evs, nil
}

func runModel(t *rapid.T, policy string) {
	cfg := testConfig()
	cfg.EvictionPolicy = policy
	cfg.MaxEntries = rapid.IntRange(1, 8).Draw(t, "maxEntries")
	cfg.HighWaterMark = rapid.Float64Range(0.5, 1).Draw(t, "highWaterMark")
	cfg.LowWaterMark = rapid.Float64Range(0.1, min(0.9, cfg.HighWaterMark-0.01)).Draw(t, "lowWaterMark")
	cfg.DefaultTTL = time.Duration(rapid.SampledFrom([]int{0, 10, 50}).Draw(t, "defaultTTLms")) * time.Millisecond

	var opts []Option[int, []byte]
	clk := newFakeClock()
	opts = append(opts, WithClock[int, []byte](clk.Now))
	var sizer func(int, []byte) int64
	defaultSizer := rapid.Bool().Draw(t, "defaultSizer")
	if defaultSizer {
		sizer = DefaultSizer[int, []byte]()
		overhead := entryOverhead[int, []byte]()
		cfg.MaxSizeBytes = overhead*rapid.Int64Range(1, 6).Draw(t, "maxOverheads") + rapid.Int64Range(0, 300).Draw(t, "maxExtra")
	} else {
		sizer = lenSizer[int]
		opts = append(opts, WithSizer(sizer))
		cfg.MaxSizeBytes = rapid.Int64Range(1, 300).Draw(t, "maxSizeBytes")
	}
	var got []event
	opts = append(opts, WithOnEvict(func(k int, _ []byte, r EvictReason) { got = append(got, event{k, r}) }))

	c, err := New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	m := &model{
		policy: policy, cfg: cfg, high: c.highBytes, low: c.lowBytes,
		entries: map[int]*modelEntry{},
	}
	key := rapid.IntRange(0, 11)
	// Mostly small values, so that several share the cache and the order
	// of eviction matters; sometimes large ones, up to too large.
	small := int(max(1, cfg.MaxSizeBytes/10))
	if defaultSizer { // each entry also carries the fixed overhead
		small = int(max(1, (cfg.MaxSizeBytes-entryOverhead[int, []byte]())/6))
	}
	valueLen := rapid.OneOf(rapid.IntRange(0, small), rapid.IntRange(0, small), rapid.IntRange(0, int(cfg.MaxSizeBytes)+20))

	expectEvents := func(op string, want []event) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: evictions %v, want %v", op, got, want)
		}
		got = got[:0]
	}

	actions := map[string]func(*rapid.T){
		"Set": func(t *rapid.T) {
			k := key.Draw(t, "key")
			v := make([]byte, valueLen.Draw(t, "len"))
			v = append(v, byte(k)) // distinguishable values
			var so []SetOption
			ttl := cfg.DefaultTTL
			if rapid.Bool().Draw(t, "withTTL") {
				ttl = time.Duration(rapid.IntRange(-1, 60).Draw(t, "ttlMs")) * time.Millisecond
				so = append(so, WithTTL(ttl))
			}
			prio := Normal
			if p := rapid.IntRange(-3, 3).Draw(t, "priority"); p > 0 {
				prio = Priority(p)
				so = append(so, WithPriority(prio))
			}
			wantEv, wantErr := m.set(k, v, sizer(k, v), ttl, prio)
			err := c.Set(k, v, so...)
			if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
				t.Fatalf("Set(%d, %d bytes, ttl %v, %v): error %v, want %v", k, len(v), ttl, prio, err, wantErr)
			}
			expectEvents("Set", wantEv)
		},
		"Get": func(t *rapid.T) {
			k := key.Draw(t, "key")
			v, ok := c.Get(k)
			var want []event
			e, present := m.entries[k]
			switch {
			case present && m.expired(e):
				m.remove(k)
				m.expirations++
				m.misses++
				want = []event{{k, EvictExpired}}
				present = false
			case present:
				m.hits++
				m.ops++
				e.touched = m.ops
				e.freq++
			default:
				m.misses++
			}
			if ok != present || (ok && !bytes.Equal(v, e.value)) {
				t.Fatalf("Get(%d) = %d bytes, %v; model has %v", k, len(v), ok, present)
			}
			expectEvents("Get", want)
		},
		"Delete": func(t *rapid.T) {
			k := key.Draw(t, "key")
			var want []event
			e, present := m.entries[k]
			if present {
				m.remove(k)
				if m.expired(e) {
					m.expirations++
					want = []event{{k, EvictExpired}}
					present = false
				}
			}
			if ok := c.Delete(k); ok != present {
				t.Fatalf("Delete(%d) = %v, want %v", k, ok, present)
			}
			expectEvents("Delete", want)
		},
		"Advance": func(t *rapid.T) {
			d := time.Duration(rapid.IntRange(0, 30).Draw(t, "ms")) * time.Millisecond
			clk.Advance(d)
			m.now += int64(d)
		},
		"Cleanup": func(t *rapid.T) {
			var want []event
			for k, e := range m.entries {
				if m.expired(e) {
					m.remove(k)
					m.expirations++
					want = append(want, event{k, EvictExpired})
				}
			}
			c.cleanup()
			// The sweep walks the map, in no particular order.
			byKey := func(a, b event) int { return cmp.Compare(a.key, b.key) }
			slices.SortFunc(want, byKey)
			slices.SortFunc(got, byKey)
			expectEvents("Cleanup", want)
		},
	}
	check := func(t *rapid.T) {
		if err := c.check(); err != nil {
			t.Fatal(err)
		}
		s := c.Stats()
		if s.EntryCount != len(m.entries) || s.CurrentSizeBytes != m.size ||
			s.HitCount != m.hits || s.MissCount != m.misses ||
			s.EvictionCount != m.evictions || s.ExpiredCount != m.expirations {
			t.Fatalf("stats %+v; model: %d entries, %d bytes, %d/%d hits/misses, %d evictions, %d expirations",
				s, len(m.entries), m.size, m.hits, m.misses, m.evictions, m.expirations)
		}
		for k, e := range m.entries {
			it, ok := c.Peek(k)
			if m.expired(e) {
				if ok {
					t.Fatalf("Peek(%d) returned an expired entry", k)
				}
				continue
			}
			if !ok || !bytes.Equal(it.Value, e.value) || it.SizeBytes != e.size ||
				it.AccessCount != e.freq-1 || it.Priority != e.prio || int64(it.TTL) != e.ttl {
				t.Fatalf("Peek(%d) = %+v, %v; model %+v", k, it, ok, e)
			}
		}
	}
	names := slices.Sorted(maps.Keys(actions))
	op := rapid.SampledFrom(names)
	// An explicit loop rather than t.Repeat, whose 30 steps on average
	// rarely fill a cache and then reorder it.
	steps := rapid.IntRange(1, 300).Draw(t, "steps")
	for range steps {
		actions[op.Draw(t, "op")](t)
		check(t)
	}
}
