package tiered

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// TestStalePopulateRace interleaves, deterministically, a read miss with a
// write: replica A reads v1 from the store; before A populates the tiers,
// replica B writes v2 (or deletes). A's populate must not leave v1 in
// Redis or in A's tier 1.
func TestStalePopulateRace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, b *Store)
		want  string // "" for deleted
	}{
		{"put", func(t *testing.T, b *Store) { put(t, b, "acme", "ns", "k", `"v2"`, 0) }, `"v2"`},
		{"delete", func(t *testing.T, b *Store) {
			if err := b.DeleteMemory(context.Background(), "acme", "ns", "k"); err != nil {
				t.Fatal(err)
			}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := redistest.Start(t)
			backend := newBackend()
			a := newReplica(t, backend, r.Addr())
			b := newReplica(t, backend, r.Addr())
			c := newReplica(t, backend, r.Addr())
			live(t, a)
			live(t, b)
			live(t, c)
			put(t, backend, "acme", "ns", "k", `"v1"`, 0) // cached nowhere
			k := memKey("acme", "ns", "k")

			raced := false
			a.afterFetch = func(got ckey) {
				if got != k || raced {
					return
				}
				raced = true
				tc.write(t, b)
				// Let A hear of it, so the check below does not depend on
				// pub/sub timing: the point is that A's own populate,
				// which comes next, does not undo it.
				testutil.Eventually(t, testutil.Wait, "A to receive B's invalidation", func() bool { return a.Stats().InvalidationsReceived > 0 })
			}
			e, cached := get(t, a, "acme", "ns", "k")
			if !raced {
				t.Fatal("the hook did not run")
			}
			// A's read began before B's write: v1 is a correct answer.
			if cached || string(e.Value) != `"v1"` {
				t.Fatalf("A's racing read: %s, cached %v; want v1 from the store", e.Value, cached)
			}

			raw, _ := rawRedis(t, a, k)
			if strings.Contains(raw, `"v1"`) {
				t.Fatalf("the stale populate won: tier 2 holds %s", raw)
			}
			if it, ok := a.l1.get(k); ok {
				t.Fatalf("the stale populate won in tier 1: %+v", it.val)
			}
			for _, s := range []*Store{a, c} {
				got, _, err := s.LookupMemory(context.Background(), "acme", "ns", "k")
				switch {
				case tc.want == "" && !errors.Is(err, store.ErrNotFound):
					t.Fatalf("after the race: %s, %v; want ErrNotFound", got.Value, err)
				case tc.want != "" && string(got.Value) != tc.want:
					t.Fatalf("after the race: %s, %v; want %s", got.Value, err, tc.want)
				}
			}
		})
	}
}

// TestTier1PopulateRaceWithoutRedis: the same race inside one process
// without Redis, closed by the stripe counters alone.
func TestTier1PopulateRaceWithoutRedis(t *testing.T) {
	backend := newBackend()
	s := newReplica(t, backend, "")
	put(t, backend, "acme", "ns", "k", `"v1"`, 0)
	once := false
	s.afterFetch = func(ckey) {
		if !once {
			once = true
			put(t, s, "acme", "ns", "k", `"v2"`, 0)
		}
	}
	if e, _ := get(t, s, "acme", "ns", "k"); string(e.Value) != `"v1"` {
		t.Fatalf("racing read: %s", e.Value)
	}
	e, cached := get(t, s, "acme", "ns", "k")
	if cached || string(e.Value) != `"v2"` {
		t.Fatalf("after the race: %s, cached %v; want v2 from the store", e.Value, cached)
	}
}

// TestSlowReadDoesNotPopulate: a read that took longer than the populate
// guard could be older than a tombstone that has already expired, so it
// leaves tier 2 alone.
func TestSlowReadDoesNotPopulate(t *testing.T) {
	r := redistest.Start(t)
	backend := newBackend()
	a := newReplica(t, backend, r.Addr(), func(o *Options) { o.tune.tombstoneTTL = 100 * time.Millisecond })
	live(t, a)
	put(t, backend, "acme", "ns", "k", `1`, 0)
	// The sleep is the subject: it makes the store read slow. It stays a
	// real sleep because the guard measures the monotonic wall clock and
	// the test talks to a real Redis, whose network I/O a synctest
	// bubble cannot hold still.
	a.afterFetch = func(ckey) { time.Sleep(80 * time.Millisecond) } // past the 50ms guard
	get(t, a, "acme", "ns", "k")
	if raw, ok := rawRedis(t, a, memKey("acme", "ns", "k")); ok {
		t.Fatalf("a slow read populated tier 2 with %q", raw)
	}
	a.afterFetch = nil
	a.l1.invalidate(memKey("acme", "ns", "k"))
	get(t, a, "acme", "ns", "k")
	if _, ok := rawRedis(t, a, memKey("acme", "ns", "k")); !ok {
		t.Fatal("a quick read did not populate tier 2")
	}
}

// TestWriteOrdering drives the write script directly with writes arriving
// in the wrong order, as two replicas' scripts can.
func TestWriteOrdering(t *testing.T) {
	r := redistest.Start(t)
	s := newReplica(t, newBackend(), r.Addr())
	ctx := context.Background()
	k := memKey("acme", "ns", "k")
	entry := func(v int64, value string) *store.MemoryEntry {
		return &store.MemoryEntry{Namespace: "ns", Key: "k", Value: []byte(value), Tags: []string{}, Version: v}
	}
	write := func(e *store.MemoryEntry) string {
		writeRedis(ctx, s.t2, k, e, time.Now(), true)
		raw, _ := rawRedis(t, s, k)
		return raw
	}

	if raw := write(entry(2, `"v2"`)); !strings.HasPrefix(raw, "V2:") {
		t.Fatalf("a write to an absent key: %q", raw)
	}
	if raw := write(entry(3, `"v3"`)); !strings.HasPrefix(raw, "V3:") {
		t.Fatalf("a newer version: %q", raw)
	}
	if raw := write(entry(3, `"v3"`)); !strings.HasPrefix(raw, "V3:") {
		t.Fatalf("the same write again (a no-op join) must leave the value: %q", raw)
	}
	if raw := write(entry(2, `"v2"`)); raw != tombstone {
		t.Fatalf("an older version arriving late: %q, want a tombstone", raw)
	}
	if raw := write(entry(9, `"v9"`)); raw != tombstone {
		t.Fatalf("a value over a tombstone: %q, want the tombstone kept", raw)
	}
	// A delete and a re-create (version 1 again) racing from two replicas.
	if err := s.t2.rdb.Del(ctx, s.t2.key(k)).Err(); err != nil {
		t.Fatalf("DEL %s: %v", s.t2.key(k), err)
	}
	write(entry(5, `"old"`))
	if raw := write(entry(1, `"recreated"`)); raw != tombstone {
		t.Fatalf("a lower version after a re-create: %q, want a tombstone", raw)
	}
	// A populate never overwrites.
	populateRedis(ctx, s.t2, s.t2.key(k), entry(7, `"p"`), time.Now())
	if raw, _ := rawRedis(t, s, k); raw != tombstone {
		t.Fatalf("a populate overwrote a tombstone: %q", raw)
	}
}
