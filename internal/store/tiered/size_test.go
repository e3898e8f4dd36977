package tiered

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

// Redis never holds a value longer than RedisMaxValueBytes: a write of one
// leaves a tombstone where the previous, smaller value was (so that is not
// served either), a read of one does not populate, and every replica still
// reads the value itself, from its tier 1 or the store.
func TestRedisNeverHoldsOversizedValues(t *testing.T) {
	const limit = 2048
	r := redistest.Start(t)
	backend := newBackend()
	small := func(o *Options) { o.RedisMaxValueBytes = limit }
	a := newReplica(t, backend, r.Addr(), small)
	b := newReplica(t, backend, r.Addr(), small)
	live(t, a)
	live(t, b)
	big := `"` + strings.Repeat("x", limit) + `"`

	put(t, a, "acme", "ns", "k", `"small"`, 0)
	if v, _ := rawRedis(t, a, memKey("acme", "ns", "k")); !strings.HasPrefix(v, "V1:") {
		t.Fatalf("a small value was not written to Redis: %q", v)
	}
	put(t, a, "acme", "ns", "k", big, 0)
	if v, _ := rawRedis(t, a, memKey("acme", "ns", "k")); v != tombstone {
		t.Fatalf("after an oversized write, Redis holds %.40q…, want a tombstone", v)
	}
	e, cached := get(t, b, "acme", "ns", "k")
	wantValue(t, e, big)
	if cached {
		t.Fatal("the other replica was served the oversized value from a cache")
	}

	// Written behind the cache's back, then read: the miss does not
	// populate Redis.
	put(t, backend, "acme", "ns", "behind", big, 0)
	e, _ = get(t, b, "acme", "ns", "behind")
	wantValue(t, e, big)
	if v, ok := rawRedis(t, b, memKey("acme", "ns", "behind")); ok {
		t.Fatalf("a read populated Redis with %.40q…", v)
	}

	// Sessions and agents carry their metadata; the same bound holds.
	meta := json.RawMessage(`{"m":` + big + `}`)
	ctx := context.Background()
	if _, err := a.RegisterAgent(ctx, "acme", store.Agent{ID: "agent", Description: "d", Metadata: meta}); err != nil {
		t.Fatal(err)
	}
	s, err := a.CreateSession(ctx, "acme", store.NewSession{Task: "t", Initiator: "i", Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.LookupAgent(ctx, "acme", "agent"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.LookupSession(ctx, "acme", s.ID); err != nil {
		t.Fatal(err)
	}

	// Nothing under the replicas' prefix is longer than the limit.
	rdb := newClient(t, r.Addr())
	var keys []string
	iter := rdb.Scan(ctx, 0, a.t2.prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("no keys in Redis: the test checks nothing")
	}
	for _, k := range keys {
		// STRLEN answers 0 for a missing key, never nil, so an error
		// here is a failure, not an absent key that is short enough.
		n, err := rdb.StrLen(ctx, k).Result()
		if err != nil {
			t.Fatalf("STRLEN %s: %v", k, err)
		}
		if n > limit {
			t.Errorf("Redis key %s holds %d bytes, more than the limit of %d", k, n, limit)
		}
	}
	if n := a.Stats().RedisOversized + b.Stats().RedisOversized; n < 4 {
		t.Errorf("RedisOversized = %d, want at least 4 (memory write, memory read, agent, session)", n)
	}
}
