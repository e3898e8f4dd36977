package redisshare

// The tests run replicas of the transport in one process, each sharing
// its client sessions through Redis under a key prefix of the test's own,
// and drive them through the harness of package transporttest. They are
// white-box (package redisshare) so that they can wait for the store's
// background work and reach its copies instead of sleeping.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	"github.com/mcp-runtime/mcp-runtime/internal/transport/sessiontest"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

const testRedisAddr = "127.0.0.1:6379"

// testRedis returns a client for addr, or skips the test when the Redis
// the tests expect (testRedisAddr) does not answer.
func testRedis(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	if addr == testRedisAddr {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := rdb.Ping(ctx).Err(); err != nil {
			t.Skipf("redis at %s unreachable (%v): the shared client-session tests need it", addr, err)
		}
	}
	return rdb
}

// testPrefix is a key prefix of this test alone; its keys are removed
// afterwards.
func testPrefix(t *testing.T, rdb redis.UniversalClient) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	p := "mcp-test:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		// One DEL a key: on a cluster the keys are in many slots.
		_, _ = rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
			for _, k := range keysMatching(t, rdb, p+"*") {
				pl.Del(ctx, k)
			}
			return nil
		})
	})
	return p
}

// harness is a replica under test, served, and a client of it.
type harness struct {
	*th.Harness
	tr *transport.Transport
}

// newHarness serves a transport made with o.
func newHarness(t testing.TB, o transport.Options) *harness {
	t.Helper()
	tr, h := sessiontest.Serve(t, o)
	return &harness{Harness: h, tr: tr}
}

// replicaConfig is what a replica is made with: the transport's options
// and those of its sharing.
type replicaConfig struct {
	transport.Options
	share Options
}

// replica is a transport sharing client sessions through rdb under
// prefix, with the background timings shortened.
func replica(t *testing.T, rdb redis.UniversalClient, prefix string, mods ...func(*replicaConfig)) *harness {
	t.Helper()
	c := replicaConfig{Options: sessiontest.Options(), share: Options{
		KeyPrefix: prefix, Timeout: 500 * time.Millisecond,
		// A replica is taken for dead three heartbeats after its last one:
		// 750 ms, longer than a live replica stalls under make test's
		// parallel -race packages (50 ms made a live home look dead).
		tune: redisTuning{poll: 50 * time.Millisecond, minBackoff: 50 * time.Millisecond, maxBackoff: 200 * time.Millisecond, heartbeat: 250 * time.Millisecond},
	}}
	for _, m := range mods {
		m(&c)
	}
	share, err := New(rdb, c.share)
	if err != nil {
		t.Fatal(err)
	}
	c.Share = share
	return newHarness(t, c.Options)
}

// shared returns the replica's session store.
func (h *harness) shared() *redisSessions { return h.tr.Sessions().(*redisSessions) }

func (h *harness) session(t testing.TB, sid string) *transport.ClientSession {
	t.Helper()
	s, err := h.tr.Sessions().Get(context.Background(), sid)
	if err != nil {
		t.Fatalf("session %s: %v", sid, err)
	}
	return s
}

// copyOf returns h's copy of session sid, which h materialises if it
// has none.
func (h *harness) copyOf(t testing.TB, sid string) *redisCopy {
	t.Helper()
	s := h.session(t, sid)
	m := h.shared()
	m.mu.RLock()
	defer m.mu.RUnlock()
	c := m.byID[sid]
	if c == nil || c.s != s {
		t.Fatalf("no copy of session %s", sid)
	}
	return c
}

// subscribed reports whether s is subscribed to uri.
func subscribed(s *transport.ClientSession, uri string) bool {
	_, subs := s.ClientState()
	return slices.Contains(subs, uri)
}

// waitSweeps waits until the store's sweeper has run n whole rounds that
// began after the call: whatever they evict, refresh or write back is
// done. (A round under way when it is called does not count.)
func (h *harness) waitSweeps(t testing.TB, n int) {
	t.Helper()
	sweeps := &h.shared().sweeps
	target := sweeps.Load() + int64(n) + 1
	testutil.Eventually(t, th.WaitLong, fmt.Sprintf("%d sweeps", n), func() bool { return sweeps.Load() >= target })
}

// waitBeats waits until the replica has sent n heartbeats that began
// after the call.
func (h *harness) waitBeats(t testing.TB, n int) {
	t.Helper()
	beats := &h.shared().beats
	target := beats.Load() + int64(n) + 1
	testutil.Eventually(t, th.WaitLong, fmt.Sprintf("%d heartbeats", n), func() bool { return beats.Load() >= target })
}

// publish reports uri's update on origin alone, as a mutation there does:
// with shared sessions, the origin logs it for every subscriber, wherever
// its stream is (docs/adr/0016-resource-updates-logged-by-origin.md).
func publish(t *testing.T, uri string, origin *harness) {
	t.Helper()
	if _, err := origin.tr.ResourceUpdated("", uri); err != nil {
		t.Fatal(err)
	}
}

// logged waits until the session's GET log holds seq events.
func logged(t *testing.T, rdb redis.UniversalClient, prefix, sid string, seq int) {
	t.Helper()
	key := redisKeys(prefix).session(sid)
	testutil.Eventually(t, th.WaitLong, fmt.Sprintf("%d events in the redis log", seq), func() bool {
		n := hgetInt(t, rdb, key, "gseq")
		return n >= seq
	})
}

// clusterRedis returns a client of the test Redis Cluster, made as a
// deployment in redis.mode cluster makes it.
func clusterRedis(t *testing.T) *redis.ClusterClient {
	t.Helper()
	c, err := redisconn.Open(redisconn.Options{Mode: redisconn.Cluster, URL: redistest.ClusterURL(t),
		Timeouts: redisconn.DefaultTimeouts(), Breaker: redisconn.DefaultBreaker()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.Client().(*redis.ClusterClient)
}

// onEachRedis runs test on the single test Redis and on the test Redis
// Cluster.
func onEachRedis(t *testing.T, test func(t *testing.T, rdb redis.UniversalClient)) {
	t.Run("single node", func(t *testing.T) { test(t, testRedis(t, testRedisAddr)) })
	t.Run("cluster", func(t *testing.T) { test(t, clusterRedis(t)) })
}
