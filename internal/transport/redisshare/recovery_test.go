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
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// TestRecoveryKeepsOtherReplicasChanges
// (docs/adr/0024-replay-changes-after-outage.md): a replica cut off from
// Redis writes back, once Redis answers, only what its client changed
// there meanwhile. It used to write its whole copy back — also after a
// blip in which it had only served reads — so a subscription and a log
// level the client set through another replica in the meantime (answered
// 200) were deleted from Redis and from every copy: the client silently
// stopped getting those updates.
func TestRecoveryKeepsOtherReplicasChanges(t *testing.T) {
	cases := []struct {
		name string
		// subscribeOnA: the client subscribes on A while A is cut off
		// (a change A must replay); otherwise it only reads there.
		subscribeOnA bool
	}{
		{"change acknowledged on the cut-off replica", true},
		{"only a read on the cut-off replica", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			direct := testRedis(t, testRedisAddr)
			prefix := testPrefix(t, direct)
			proxy := netfault.NewProxy(t, testRedisAddr)
			// A's sweeper runs often, also while its Redis is skipped,
			// under an idle timeout nothing here reaches: A's copy, idle
			// while the client works on B, must not be let go (it was,
			// under load, with a one-second timeout: the test then read
			// a copy Redis could not load).
			idle := func(o *replicaConfig) {
				o.SessionIdleTimeout, o.share.tune.sweep = time.Minute, 20*time.Millisecond
			}
			a := replica(t, testRedis(t, proxy.Addr()), prefix, idle)
			b := replica(t, direct, prefix, idle)
			sid := b.Initialize(t)
			a.ToolsListOK(t, sid)

			proxy.Cut()
			if tc.subscribeOnA {
				a.Subscribe(t, sid, "test://a")
			} else {
				a.ToolsListOK(t, sid)
			}
			b.Subscribe(t, sid, "test://b")
			if r := b.Post(t, sid, th.RPC("lvl", "logging/setLevel", map[string]any{"level": "error"})); r.Status != http.StatusOK {
				t.Fatalf("setLevel on B: %s", r)
			}
			// A's sweeps run while Redis is skipped: one found it could
			// not refresh the copy the client used there.
			ca, sb := a.copyOf(t, sid), b.session(t, sid)
			sa := ca.s
			testutil.Eventually(t, th.WaitLong, "a sweep on A to find redis unreachable", func() bool {
				_, _, due := ca.syncState()
				return due
			})
			proxy.Restore()

			ctx := context.Background()
			key := redisKeys(prefix).session(sid)
			testutil.Eventually(t, th.WaitLong, "A to have written back what it owed redis", func() bool {
				if tc.subscribeOnA {
					if v := hget(t, direct, key, "s:test://a"); v != "1" {
						return false
					}
				}
				return !ca.isDirty()
			})
			a.waitSweeps(t, 2) // a wrong write-back would have happened by now
			h, err := direct.HGetAll(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if h["s:test://b"] != "1" {
				t.Errorf("the subscription acknowledged on B was deleted from redis by A's write-back (hash %v)", h)
			}
			if h["level"] != "error" {
				t.Errorf("the log level set on B reverted to %q in redis", h["level"])
			}
			if in, err := direct.SIsMember(ctx, redisKeys(prefix).subs("default", "test://b"), sid).Result(); err != nil || !in {
				t.Error("the session left the reverse index of the subscription acknowledged on B: no update reaches it")
			}
			for name, s := range map[string]*transport.ClientSession{"A": sa, "B": sb} {
				if !holds(th.WaitLong, func() bool { return subscribed(s, "test://b") && s.LogLevel() == "error" }) {
					t.Errorf("%s's copy lacks what B acknowledged: subscribed %v, level %q", name, subscribed(s, "test://b"), s.LogLevel())
				}
				if tc.subscribeOnA && !holds(th.WaitLong, func() bool { return subscribed(s, "test://a") }) {
					t.Errorf("%s's copy lacks the subscription acknowledged on A during the outage", name)
				}
			}
		})
	}
}

// TestIdleExpiryEndsSessionOnHome
// (docs/adr/0025-shared-copy-lifetime.md): once the idle timeout has
// expired a session in Redis, every replica answers 404, its home
// included. The home keeps its copy (for tools/list_changed) and used to
// go on serving it — 200 on A, 404 on B for the same id — and its sweeper
// then wrote the expired session back to Redis.
func TestIdleExpiryEndsSessionOnHome(t *testing.T) {
	cases := []struct {
		name string
		idle time.Duration
		// expire makes the session expire in Redis while the home's copy
		// sits idle.
		expire func(t *testing.T, rdb *redis.Client, home *harness, key, sid string)
	}{
		{
			// Deterministic: the sweeper (every 15 s) never runs.
			name: "copy idle past the timeout, hash expired",
			idle: time.Minute,
			expire: func(t *testing.T, rdb *redis.Client, home *harness, key, sid string) {
				home.session(t, sid).Touch(time.Unix(0, 0)) // idle here for ever
				mustRedis(t, rdb.Del(context.Background(), key, key+":g"))
			},
		},
		{
			name: "real expiry",
			idle: time.Second,
			expire: func(t *testing.T, rdb *redis.Client, _ *harness, key, _ string) {
				testutil.Eventually(t, 3*time.Second, "the hash to expire", func() bool { return !exists(t, rdb, key) })
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rdb := testRedis(t, testRedisAddr)
			prefix := testPrefix(t, rdb)
			idle := func(o *replicaConfig) { o.SessionIdleTimeout = tc.idle }
			a, b := replica(t, rdb, prefix, idle), replica(t, rdb, prefix, idle)
			sid := a.Initialize(t) // A is home
			key := redisKeys(prefix).session(sid)
			tc.expire(t, rdb, a, key, sid)
			for name, h := range map[string]*harness{"A (home)": a, "B": b} {
				if r := h.Post(t, sid, th.RPC(1, "tools/list", nil)); r.Status != http.StatusNotFound {
					t.Errorf("tools/list on %s after the idle timeout: %s, want 404", name, r)
				}
			}
			if tc.idle < time.Minute { // two sweeps, where there are any
				a.waitSweeps(t, 2)
				b.waitSweeps(t, 2)
			}
			if exists(t, rdb, key) {
				t.Fatal("the expired session was written back to redis")
			}
			if r := b.Post(t, sid, th.RPC(2, "tools/list", nil)); r.Status != http.StatusNotFound {
				t.Fatalf("tools/list on B later: %s, want 404", r)
			}
		})
	}
}

// TestRedisDataLossIsNot404 (docs/adr/0026-redis-data-loss.md): Redis
// restarts without persistence (every key gone) while the replica holding
// a live session's copy is cut off. Another replica used to answer 404
// for the session until the copy was written back, and the client dropped
// a live session; it must answer 503 with Retry-After until then. A
// session no replica holds becomes 404 once the replicas have had the
// time to write theirs back (lossGrace), not 503 for ever.
func TestRedisDataLossIsNot404(t *testing.T) {
	direct := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, direct)
	proxy := netfault.NewProxy(t, testRedisAddr)
	a := replica(t, testRedis(t, proxy.Addr()), prefix)
	b := replica(t, direct, prefix)
	live := a.Initialize(t)
	never, err := transport.NewSessionID() // looks like one of ours; never created
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	proxy.Cut()
	keys := keysMatching(t, direct, redisKeys(prefix).all())
	mustRedis(t, direct.Del(ctx, keys...)) // Redis "restarted" empty
	for _, sid := range []string{live, never} {
		r := b.Post(t, sid, th.RPC(1, "ping", nil))
		if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
			t.Fatalf("session %s on B right after redis lost its data: %s, want 503 with Retry-After", sid, r)
		}
	}
	b.waitBeats(t, 1) // B's heartbeat writes a new epoch meanwhile
	proxy.Restore()
	testutil.Eventually(t, th.WaitLong, "the live session to be served on B", func() bool {
		r := b.Post(t, live, th.RPC(2, "ping", nil))
		if r.Status == http.StatusNotFound {
			t.Fatalf("the live session got 404 on B after redis lost its data")
		}
		return r.Status == http.StatusOK
	})
	testutil.Eventually(t, th.WaitLong, "a session nobody holds to be 404 after the grace", func() bool {
		return b.Post(t, never, th.RPC(3, "ping", nil)).Status == http.StatusNotFound
	})
	a.ToolsListOK(t, live)
}

// TestAppendHealsSeqBehindLog
// (docs/adr/0024-replay-changes-after-outage.md): a session hash whose
// gseq fell below its log's last entry (written back from a copy whose
// position lagged) made every append fail: the XADD was refused after the
// script had already bumped gseq and recorded the retry token, so
// resource updates acknowledged to their origin were lost. The append
// takes the seq after the log's top and delivers.
func TestAppendHealsSeqBehindLog(t *testing.T) {
	for _, gseq := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("gseq %d below 3 logged", gseq), func(t *testing.T) {
			rdb := testRedis(t, testRedisAddr)
			prefix := testPrefix(t, rdb)
			a := replica(t, rdb, prefix)
			sid := a.Initialize(t)
			a.Subscribe(t, sid, "test://seq")
			for range 3 {
				publish(t, "test://seq", a)
			}
			logged(t, rdb, prefix, sid, 3)
			key := redisKeys(prefix).session(sid)
			mustRedis(t, rdb.HSet(context.Background(), key, "gseq", gseq))
			publish(t, "test://seq", a)
			logged(t, rdb, prefix, sid, 4)
			g := a.OpenGET(t, sid, "Last-Event-ID", "g-3")
			if ev, m := g.NextMessage(t); ev.ID != "g-4" || th.ResourceUpdatedURI(t, m) != "test://seq" {
				t.Fatalf("the update after gseq fell behind: got %+v, want g-4", ev)
			}
			if n := hgetInt(t, rdb, key, "gseq"); n != 4 {
				t.Fatalf("gseq %d after the append, want 4", n)
			}
		})
	}
}

// holds polls cond until it holds (true) or d passes (false).
func holds(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// TestLostCopyIdleIsNotWrittenBack
// (docs/adr/0025-shared-copy-lifetime.md): a copy whose hash Redis lost
// is written back only while its client uses it. One whose client left
// meanwhile (idle here past the timeout, say through a long outage) is
// ended by the idle timeout like any other, instead of being brought back
// to Redis for another idle period.
func TestLostCopyIdleIsNotWrittenBack(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a := replica(t, rdb, prefix, func(o *replicaConfig) { o.SessionIdleTimeout = time.Second }) // a sweep every 250 ms
	sid := a.Initialize(t)
	c := a.copyOf(t, sid)
	s := c.s
	key := redisKeys(prefix).session(sid)
	s.Touch(time.Unix(0, 0)) // the client left long ago
	mustRedis(t, rdb.Del(context.Background(), key, redisKeys(prefix).stream(sid, "g")))
	c.setLost()        // as missing() leaves a copy its client used
	a.waitSweeps(t, 2) // a write-back would set a 1 s TTL: it would be there
	if exists(t, rdb, key) {
		t.Fatal("a session idle past the timeout was written back to redis")
	}
	if !s.Ended() {
		t.Fatal("the copy of a session idle past the timeout lives on")
	}
	if r := a.Post(t, sid, th.RPC(1, "tools/list", nil)); r.Status != http.StatusNotFound {
		t.Fatalf("tools/list after the idle timeout: %s, want 404", r)
	}
}

// isDirty reports whether this copy holds anything Redis lacks: changes
// to replay, or the whole session to write back.
func (c *redisCopy) isDirty() bool {
	lost, unsaved, _ := c.syncState()
	return lost || unsaved
}
