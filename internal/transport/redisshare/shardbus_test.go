package redisshare

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// shardSubscribers is how many clients the node owning ch's slot has
// subscribed to it (PUBSUB SHARDNUMSUB).
func shardSubscribers(t *testing.T, cc *redis.ClusterClient, ch string) int64 {
	t.Helper()
	ctx := context.Background()
	node, err := cc.MasterForKey(ctx, ch)
	if err != nil {
		t.Fatalf("route %s: %v", ch, err)
	}
	n, err := node.PubSubShardNumSub(ctx, ch).Result()
	if err != nil {
		t.Fatalf("PUBSUB SHARDNUMSUB %s: %v", ch, err)
	}
	return n[ch]
}

// On a cluster a session's changes go on a shard channel of its own, to
// which exactly the replicas holding a copy subscribe, and from which
// they unsubscribe when the copy goes; the channel of a single Redis,
// which every replica would hear, is not used.
func TestShardedChannels(t *testing.T) {
	cc := clusterRedis(t)
	prefix := testPrefix(t, cc)
	a, b := replica(t, cc, prefix), replica(t, cc, prefix)

	sid := a.Initialize(t)
	ch := a.shared().changeChannel(sid)
	if want := redisKeys(prefix).session(sid) + ":ch"; ch != want || redisconn.Slot(ch) != redisconn.Slot(want) {
		t.Fatalf("channel %q, want %q in the session's slot", ch, want)
	}
	if n := shardSubscribers(t, cc, ch); n != 1 {
		t.Fatalf("%d subscribers after initialize on A, want 1 (A)", n)
	}
	b.ToolsListOK(t, sid)
	if n := shardSubscribers(t, cc, ch); n != 2 {
		t.Fatalf("%d subscribers once B holds a copy, want 2", n)
	}
	err := cc.ForEachShard(context.Background(), func(ctx context.Context, node *redis.Client) error {
		n, err := node.PubSubNumSub(ctx, prefix+"sessions").Result()
		if err == nil && n[prefix+"sessions"] != 0 {
			t.Errorf("node %s: %d subscribers to the single-node channel", node.Options().Addr, n[prefix+"sessions"])
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// A change on B reaches A through the channel.
	if r := b.Post(t, sid, th.RPC("lvl", "logging/setLevel", map[string]any{"level": "error"})); r.Status != http.StatusOK {
		t.Fatalf("setLevel on B: %s", r)
	}
	sa := a.copyOf(t, sid).s
	testutil.Eventually(t, th.WaitLong, "A to see B's log level", func() bool { return sa.LogLevel() == "error" })

	if res := a.Send(t, http.MethodDelete, sid, nil); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE on A: %s", res)
	}
	testutil.Eventually(t, th.WaitLong, "both replicas to unsubscribe", func() bool { return shardSubscribers(t, cc, ch) == 0 })
	if n := b.tr.Sessions().Len(); n != 0 {
		t.Fatalf("B holds %d copies after the DELETE", n)
	}
}

// A master is lost and its replica takes over: the replicas subscribe to
// the channels it carried on the new master, and re-read the sessions
// whose channel was lost, so a change made meanwhile is not missed.
func TestShardedChannelsFailOver(t *testing.T) {
	cluster, cc := privateCluster(t)
	prefix := testPrefix(t, cc)
	a, b := replica(t, cc, prefix), replica(t, cc, prefix)
	sid := a.Initialize(t)
	b.ToolsListOK(t, sid)
	sa := a.copyOf(t, sid).s
	lost := func(h *harness) bool {
		bus := h.shared().shard
		bus.mu.Lock()
		defer bus.mu.Unlock()
		s := bus.subs[sid]
		return s != nil && !s.confirmed
	}

	// Written behind the replicas' backs, unpublished, and copied to the
	// replica that takes over: only a re-read tells A.
	ctx := context.Background()
	key := redisKeys(prefix).session(sid)
	if err := cc.HSet(ctx, key, "level", "critical").Err(); err != nil {
		t.Fatal(err)
	}
	master, err := cc.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := master.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the write to reach the replica: %d, %v", n, err)
	}
	if sa.LogLevel() == "critical" {
		t.Fatal("A saw a change nobody published")
	}
	cluster.FailOver(key)
	testutil.Eventually(t, th.WaitLong, "A to re-read the session", func() bool { return !lost(a) && sa.LogLevel() == "critical" })

	// And the channel on the new master carries B's changes to A.
	testutil.Eventually(t, th.WaitLong, "B to subscribe again", func() bool { return !lost(b) })
	if r := b.Post(t, sid, th.RPC("lvl", "logging/setLevel", map[string]any{"level": "error"})); r.Status != http.StatusOK {
		t.Fatalf("setLevel on B: %s", r)
	}
	testutil.Eventually(t, th.WaitLong, "A to see B's log level", func() bool { return sa.LogLevel() == "error" })
	if n := shardSubscribers(t, cc, a.shared().changeChannel(sid)); n != 2 {
		t.Fatalf("%d subscribers on the new master, want 2", n)
	}
}

// A subscription the client makes while the master of its session's slot
// is lost, before a replica took over, is acknowledged (the change holds
// on the replica) and reaches Redis once the slot is served again,
// within a backoff, not at the sweeper's next round (an hour away here).
func TestSubscribeWhileMasterLost(t *testing.T) {
	cluster, cc := privateCluster(t)
	prefix := testPrefix(t, cc)
	rare := func(c *replicaConfig) { c.share.tune.sweep = time.Hour }
	a, b := replica(t, cc, prefix, rare), replica(t, cc, prefix, rare)
	sid := a.Initialize(t)
	b.ToolsListOK(t, sid)
	key := redisKeys(prefix).session(sid)
	cluster.FailOver(key, func() { b.Subscribe(t, sid, "test://own") })
	testutil.Eventually(t, th.WaitLong, "the subscription to reach Redis", func() bool {
		v, err := cc.HGet(context.Background(), key, "s:test://own").Result()
		return err == nil && v != ""
	})
}

// privateCluster starts a Redis Cluster of the test's own, for losing a
// node, and a client of it made as a deployment makes it.
func privateCluster(t *testing.T) (*redistest.Cluster, *redis.ClusterClient) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Redis Cluster of its own")
	}
	cluster := redistest.StartCluster(t)
	c, err := redisconn.Open(redisconn.Options{Mode: redisconn.Cluster, URL: cluster.URL(),
		Timeouts: redisconn.DefaultTimeouts(), Breaker: redisconn.DefaultBreaker()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return cluster, c.Client().(*redis.ClusterClient)
}
