package redisshare

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/netfault"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// quiet asserts that c carries no event (keep-alives aside) for d: a
// duplicate would show up here.
func quiet(t *testing.T, c *th.SSEConn, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev := <-c.Frames:
			if !ev.IsComment() {
				t.Fatalf("unexpected event %+v", ev)
			}
		case <-c.Done:
			return
		case <-deadline:
			return
		}
	}
}

// wantUpdates reads the next events of c and checks their ids and URIs,
// in order.
func wantUpdates(t *testing.T, c *th.SSEConn, firstSeq int, uris ...string) {
	t.Helper()
	for i, uri := range uris {
		ev, m := c.NextMessage(t)
		if want := fmt.Sprintf("g-%d", firstSeq+i); ev.ID != want || th.ResourceUpdatedURI(t, m) != uri {
			t.Fatalf("event %d: id %s uri %s, want %s %s", i, ev.ID, th.ResourceUpdatedURI(t, m), want, uri)
		}
	}
}

// TestRedisFanout_HomeKilled is the end-to-end scale-out scenario
// (docs/adr/0016-resource-updates-logged-by-origin.md) in one process:
// the session streams from replica A, A dies (no graceful shutdown: its
// connections are cut and its Redis client closed, so it can write
// nothing more), the mutations happen on B, and the client resumes on C
// with Last-Event-ID: each update missed meanwhile arrives exactly once,
// in order (MCP specification, basic/transports, "Resumability and
// Redelivery"). The origin of an update logs it; nothing depends on the
// replica that held the stream.
func TestRedisFanout_HomeKilled(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	rdbA := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b, c := replica(t, rdbA, prefix), replica(t, rdb, prefix), replica(t, rdb, prefix)

	sid := a.Initialize(t)
	uris := []string{"test://1", "test://2", "test://3", "test://4", "test://5"}
	a.Subscribe(t, sid, uris...)
	g := a.OpenGET(t, sid)
	if ev := g.Next(t); !ev.Priming() {
		t.Fatalf("first frame %+v, want the priming event", ev)
	}
	// Live, across replicas: mutation on B, stream on A.
	publish(t, uris[0], b)
	wantUpdates(t, g, 1, uris[0])

	// A crashes.
	a.TS.CloseClientConnections()
	_ = rdbA.Close()
	g.Close()

	publish(t, uris[1], b)
	publish(t, uris[2], b) // one origin's updates are logged in order
	logged(t, rdb, prefix, sid, 3)
	publish(t, uris[3], c) // another origin, same log
	logged(t, rdb, prefix, sid, 4)

	r := c.OpenGET(t, sid, "Last-Event-ID", "g-1")
	wantUpdates(t, r, 2, uris[1:4]...)
	quiet(t, r, th.WaitShort)
	publish(t, uris[4], b) // live again, now to C
	wantUpdates(t, r, 5, uris[4])
	quiet(t, r, th.WaitShort)
	testutil.Eventually(t, th.WaitLong, "B's stats to count 4 updates queued and logged, none dropped", func() bool {
		st := b.tr.SharingStats()
		return st.Updates == 4 && st.Notified == 4 && st.Dropped == 0
	})
}

// TestRedisFanout_Subscribers: an update from any replica reaches every
// subscribed session once — whose stream is on the origin, on another
// live replica, or nowhere — and no session of another tenant or not
// subscribed. The reverse index follows unsubscribe, DELETE and sessions
// that vanished from Redis
// (docs/adr/0016-resource-updates-logged-by-origin.md).
func TestRedisFanout_Subscribers(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	reps := []*harness{replica(t, rdb, prefix), replica(t, rdb, prefix), replica(t, rdb, prefix)}
	const uri = "test://y"
	onA, onB := reps[0].Initialize(t), reps[1].Initialize(t)
	offline, other := reps[2].Initialize(t), reps[2].Initialize(t)
	for _, sid := range []string{onA, onB, offline} {
		reps[2].Subscribe(t, sid, uri) // subscribed through C, streamed elsewhere
	}
	reps[0].Subscribe(t, other, "test://other")
	streams := map[string]*th.SSEConn{onA: reps[0].OpenGET(t, onA), onB: reps[1].OpenGET(t, onB), other: reps[2].OpenGET(t, other)}
	for _, s := range streams {
		if ev := s.Next(t); !ev.Priming() {
			t.Fatalf("first frame %+v, want the priming event", ev)
		}
	}

	for i, origin := range []string{"A", "B", "C"} {
		t.Run("from "+origin, func(t *testing.T) {
			publish(t, uri, reps[i])
			if _, err := reps[i].tr.ResourceUpdated("another-tenant", uri); err != nil {
				t.Fatal(err)
			}
			wantUpdates(t, streams[onA], i+1, uri)
			wantUpdates(t, streams[onB], i+1, uri)
			logged(t, rdb, prefix, offline, i+1)
			quiet(t, streams[onA], th.WaitShort)
			quiet(t, streams[onB], th.WaitShort)
			quiet(t, streams[other], 0)
		})
	}
	if n := hgetInt(t, rdb, redisKeys(prefix).session(offline), "gseq"); n != 3 {
		t.Fatalf("offline session logged %d events after 3 updates", n)
	}

	set := redisKeys(prefix).subs("default", uri)
	members := func() []string {
		ids, err := rdb.SMembers(context.Background(), set).Result()
		if err != nil {
			t.Fatalf("SMEMBERS %s: %v", set, err)
		}
		return ids
	}
	if got := members(); len(got) != 3 {
		t.Fatalf("reverse index %v, want the 3 subscribers", got)
	}
	if r := reps[0].Post(t, onB, th.RPC("u", "resources/unsubscribe", map[string]any{"uri": uri})); r.Status != http.StatusOK {
		t.Fatalf("unsubscribe: %s", r)
	}
	if res := reps[1].Send(t, http.MethodDelete, offline, nil); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %s", res)
	}
	if got := members(); len(got) != 1 || got[0] != onA {
		t.Fatalf("reverse index %v after unsubscribe and DELETE, want [%s]", got, onA)
	}
	// A session Redis lost (expired, say) leaves a member behind, which the
	// next update removes without logging anything for it.
	mustRedis(t, rdb.SAdd(context.Background(), set, "bG9zdC1zZXNzaW9uLWlk"))
	publish(t, uri, reps[1])
	wantUpdates(t, streams[onA], 4, uri)
	quiet(t, streams[onB], th.WaitShort)
	testutil.Eventually(t, th.WaitLong, "the stale member to go", func() bool { return len(members()) == 1 })
	if ttl := pttl(t, rdb, set); ttl <= 0 {
		t.Fatalf("reverse index set without a TTL (%v)", ttl)
	}
}

// TestRedisFanout_ToolsListChanged: every replica sees an upstream change
// by itself and calls ToolsListChanged; each session is told once, by its
// home.
func TestRedisFanout_ToolsListChanged(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := a.Initialize(t)
	b.ToolsListOK(t, sid) // B has a copy too
	g := b.OpenGET(t, sid)
	g.Next(t) // priming
	testutil.Eventually(t, th.WaitLong, "B to become home", func() bool { return b.copyOf(t, sid).IsHome() && !a.copyOf(t, sid).IsHome() })
	for _, h := range []*harness{a, b} {
		if _, err := h.tr.ToolsListChanged(); err != nil {
			t.Fatal(err)
		}
	}
	if ev, m := g.NextMessage(t); ev.ID != "g-1" || m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v %+v, want tools/list_changed as g-1", ev, m)
	}
	quiet(t, g, th.WaitShort)
}

// TestRedisFanout_ToolsListChangedHomeDead: the session's home replica
// dies; the next tools/list_changed, which the surviving replicas B and C
// both see, is logged once, by whichever takes over as home when it finds
// the home's liveness key expired, and so is the one after
// (docs/adr/0016-resource-updates-logged-by-origin.md).
func TestRedisFanout_ToolsListChangedHomeDead(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	rdbA := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b, c := replica(t, rdbA, prefix), replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := a.Initialize(t)
	b.ToolsListOK(t, sid) // B and C have copies, as replicas the client used
	c.ToolsListOK(t, sid)
	hash := redisKeys(prefix).session(sid)
	homeA := a.shared().self
	if home := hget(t, rdb, hash, "home"); home != homeA {
		t.Fatalf("home %q, want A (%s)", home, homeA)
	}

	// A crashes: no goodbye, its liveness key runs out.
	a.TS.CloseClientConnections()
	_ = rdbA.Close()
	testutil.Eventually(t, th.WaitLong, "A's liveness key to expire", func() bool {
		return !exists(t, rdb, a.shared().replicaKey(homeA))
	})
	listChanged := func() {
		t.Helper()
		for _, h := range []*harness{b, c} {
			if _, err := h.tr.ToolsListChanged(); err != nil {
				t.Fatal(err)
			}
		}
	}
	listChanged()
	logged(t, rdb, prefix, sid, 1)
	r := c.OpenGET(t, sid, "Last-Event-ID", "g-0")
	if ev, m := r.NextMessage(t); ev.ID != "g-1" || m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v %+v, want tools/list_changed as g-1", ev, m)
	}
	quiet(t, r, th.WaitShort)
	if home := hget(t, rdb, hash, "home"); home == homeA {
		t.Fatal("the dead replica is still home")
	}
	listChanged() // once again, by the new home
	if ev, m := r.NextMessage(t); ev.ID != "g-2" || m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v %+v, want tools/list_changed as g-2", ev, m)
	}
	quiet(t, r, th.WaitShort)
	if n := hgetInt(t, rdb, hash, "gseq"); n != 2 {
		t.Fatalf("%d events logged after two tools/list_changed", n)
	}
}

// TestRedisFanout_QueueFull: with Redis unreachable the queue fills; a
// full queue drops and counts, and never blocks the caller (a mutation's
// path).
func TestRedisFanout_QueueFull(t *testing.T) {
	direct := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, direct)
	proxy := netfault.NewProxy(t, testRedisAddr)
	h := replica(t, testRedis(t, proxy.Addr()), prefix)
	proxy.Cut()
	n := 2 * cap(h.shared().logq)
	start := time.Now()
	for range n {
		if _, err := h.tr.ResourceUpdated("", "test://flood"); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("queuing %d updates took %v", n, d)
	}
	st := h.tr.SharingStats()
	if st.Updates+st.Dropped != int64(n) || st.Dropped < int64(n/2-128) {
		t.Fatalf("stats %+v after %d updates with redis down: want about half dropped, all counted", st, n)
	}
}

// TestRedisFanout_ScriptsFlushed: the appender runs its scripts by their
// SHA1 (EVALSHA). When Redis no longer holds them (a restart or a
// failover empties its script cache; SCRIPT FLUSH here), the batch that
// meets NOSCRIPT loads them and is written again: every update reaches
// the subscriber once, in order, and none is dropped.
func TestRedisFanout_ScriptsFlushed(t *testing.T) {
	onEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		prefix := testPrefix(t, rdb)
		a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
		sid := a.Initialize(t)
		uris := []string{"test://1", "test://2", "test://3"}
		a.Subscribe(t, sid, uris...)
		g := a.OpenGET(t, sid)
		if ev := g.Next(t); !ev.Priming() {
			t.Fatalf("first frame %+v, want the priming event", ev)
		}
		flush := func() {
			t.Helper()
			var err error
			if c, ok := rdb.(*redis.ClusterClient); ok {
				err = c.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
					return n.ScriptFlush(ctx).Err()
				})
			} else {
				err = rdb.ScriptFlush(context.Background()).Err()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		flush() // the first batch meets an empty cache too
		publish(t, uris[0], b)
		wantUpdates(t, g, 1, uris[0])
		flush()
		publish(t, uris[1], b)
		publish(t, uris[2], b)
		wantUpdates(t, g, 2, uris[1:]...)
		quiet(t, g, th.WaitShort)
		if st := b.tr.SharingStats(); st.Dropped != 0 {
			t.Errorf("sharing stats %+v: updates dropped", st)
		}
	})
}
