package redisshare

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/netfault"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	"github.com/mcp-runtime/mcp-runtime/internal/transport/sessiontest"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// TestRedisSessions_AnyReplica is the shared-session scenario of
// docs/adr/0015-shared-client-sessions.md on two replicas: initialize on
// A, call on B, subscription changes seen by both, events written while
// no stream is open read by a GET on B, a resumption on A with
// Last-Event-ID that replays exactly the missed events once, and a DELETE
// on A that ends the session on B too. It runs on a single Redis and on
// a Redis Cluster, where the changes go on sharded channels
// (shardbus.go).
func TestRedisSessions_AnyReplica(t *testing.T) {
	onEachRedis(t, anyReplica)
}

func anyReplica(t *testing.T, rdb redis.UniversalClient) {
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)

	sid := a.Initialize(t)
	b.ToolsListOK(t, sid) // materialised on B from Redis

	// Point 1: state changed on B holds on A, without a request there.
	if r := b.Post(t, sid, th.RPC("lvl", "logging/setLevel", map[string]any{"level": "error"})); r.Status != http.StatusOK {
		t.Fatalf("setLevel on B: %s", r)
	}
	b.Subscribe(t, sid, "test://x")
	ca := a.copyOf(t, sid)
	sa := ca.s
	testutil.Eventually(t, th.WaitLong, "A to see B's log level and subscription", func() bool {
		return sa.LogLevel() == "error" && subscribed(sa, "test://x")
	})

	// Updates from either replica land once each in the session's log.
	for i := 1; i <= 3; i++ {
		publish(t, "test://x", []*harness{a, b}[i%2])
	}
	logged(t, rdb, prefix, sid, 3)

	// A fresh GET on B gets the three events nobody was given yet.
	g := b.OpenGET(t, sid)
	if ev := g.Next(t); !ev.Priming() || ev.ID != "g-0" {
		t.Fatalf("first frame %+v, want the priming event g-0", ev)
	}
	for i := 1; i <= 2; i++ {
		if ev, m := g.NextMessage(t); ev.ID != fmt.Sprintf("g-%d", i) || th.ResourceUpdatedURI(t, m) != "test://x" {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	g.Close() // the client processed g-1 and g-2 only

	// B held the GET stream, so B is now home (for tools/list_changed).
	testutil.Eventually(t, th.WaitLong, "B to become the session's home", func() bool { return b.copyOf(t, sid).IsHome() && !ca.IsHome() })
	for i := 4; i <= 5; i++ {
		publish(t, "test://x", []*harness{a, b}[i%2])
	}
	logged(t, rdb, prefix, sid, 5)

	// Point 3: resume on the other replica, exactly once each.
	r := a.OpenGET(t, sid, "Last-Event-ID", "g-2")
	for i := 3; i <= 5; i++ {
		if ev := r.Next(t); ev.ID != fmt.Sprintf("g-%d", i) || ev.Data == "" {
			t.Fatalf("resumed event %+v, want g-%d", ev, i)
		}
	}
	// A live update from B reaches the stream on A.
	publish(t, "test://x", b)
	if ev := r.Next(t); ev.ID != "g-6" {
		t.Fatalf("after the replay got %+v, want g-6", ev)
	}
	// One more from B, which B's appender logs after anything it queued
	// before: once it is on the stream, a double would have been logged.
	publish(t, "test://x", b)
	if ev := r.Next(t); ev.ID != "g-7" {
		t.Fatalf("after the replay got %+v, want g-7", ev)
	}
	if n := hgetInt(t, rdb, redisKeys(prefix).session(sid), "gseq"); n != 7 {
		t.Fatalf("%d events logged after 6 updates: an update was logged twice", n)
	}

	// Point 5: DELETE on A ends it on B (whose copy goes at once, by
	// pub/sub) and everywhere.
	if res := a.Send(t, http.MethodDelete, sid, nil); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE on A: %s", res)
	}
	r.WaitEnd(t)
	testutil.Eventually(t, th.WaitLong, "B to drop its copy", func() bool { return b.tr.Sessions().Len() == 0 })
	for name, h := range map[string]*harness{"A": a, "B": b} {
		if res := h.Post(t, sid, th.RPC(1, "tools/list", nil)); res.Status != http.StatusNotFound {
			t.Fatalf("tools/list on %s after DELETE: %s, want 404", name, res)
		}
	}
	if res := b.Send(t, http.MethodGet, sid, nil, "Accept", "text/event-stream"); res.Status != http.StatusNotFound {
		t.Fatalf("GET on B after DELETE: %s, want 404", res)
	}
}

// TestRedisSessions_Lookup: what a replica answers for ids it has not
// seen, by where the session is.
func TestRedisSessions_Lookup(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	live := a.Initialize(t)
	deleted := a.Initialize(t)
	if res := a.Send(t, http.MethodDelete, deleted, nil); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %s", res)
	}
	cases := []struct {
		name, sid string
		want      int
	}{
		{"created on the other replica", live, http.StatusOK},
		{"never created", "bm90LWEtc2Vzc2lvbi1pZA", http.StatusNotFound},
		{"deleted on the other replica", deleted, http.StatusNotFound},
		{"absurdly long", strings.Repeat("x", 200), http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if res := b.Post(t, tc.sid, th.RPC(1, "tools/list", nil)); res.Status != tc.want {
				t.Fatalf("tools/list on B: %s, want %d", res, tc.want)
			}
		})
	}
}

// TestRedisSessions_IdleTimeout: a session used on one replica only stays
// alive on the other, and once nobody uses it, it ends on both
// (docs/adr/0025-shared-copy-lifetime.md).
//
// The session's TTL in Redis is real time, which no fake clock reaches:
// B's sweeper extends it every quarter of the idle timeout, so the test
// holds as long as the sweeper is not kept from running for three
// quarters of it. At 400 ms that was 300 ms, which a loaded CI host took
// (the session expired under B's use); at 2 s it is 1.5 s.
func TestRedisSessions_IdleTimeout(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	const timeout = 2 * time.Second
	idle := func(o *replicaConfig) { o.SessionIdleTimeout = timeout }
	a, b := replica(t, rdb, prefix, idle), replica(t, rdb, prefix, idle)
	sid := a.Initialize(t)
	b.ToolsListOK(t, sid)
	for start := time.Now(); time.Since(start) < timeout*5/4; { // on B alone, longer than the idle timeout
		time.Sleep(timeout / 8)
		b.ToolsListOK(t, sid)
	}
	a.ToolsListOK(t, sid) // kept alive by B's use
	// Nobody uses it now: it expires in Redis (no request may poll it).
	testutil.Eventually(t, th.WaitLong, "the session to expire in redis", func() bool { return !exists(t, rdb, redisKeys(prefix).session(sid)) })
	for name, h := range map[string]*harness{"A": a, "B": b} {
		if res := h.Post(t, sid, th.RPC(1, "tools/list", nil)); res.Status != http.StatusNotFound {
			t.Fatalf("tools/list on %s after the idle timeout: %s, want 404", name, res)
		}
	}
}

// TestRedisSessions_RedisDown (docs/adr/0026-redis-data-loss.md): with
// Redis unreachable, a session the replica knows keeps working, one it
// cannot resolve gets 503 with Retry-After (never 404), a new one is
// created, and when Redis is back the replica resolves it again and the
// change it acknowledged meanwhile is in Redis.
func TestRedisSessions_RedisDown(t *testing.T) {
	direct := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, direct)
	proxy := netfault.NewProxy(t, testRedisAddr)
	a := replica(t, testRedis(t, proxy.Addr()), prefix)
	b := replica(t, direct, prefix)
	known := a.Initialize(t)
	unknown := b.Initialize(t)

	proxy.Cut()
	cases := []struct {
		name       string
		sid        string
		body       []byte
		want       int
		retryAfter bool
	}{
		{"known session", known, th.RPC(1, "tools/list", nil), http.StatusOK, false},
		{"known session subscribes", known, th.RPC(2, "resources/subscribe", map[string]any{"uri": "test://down"}), http.StatusOK, false},
		{"unknown session", unknown, th.RPC(3, "tools/list", nil), http.StatusServiceUnavailable, true},
		{"unknown session again, Redis skipped", unknown, th.RPC(4, "tools/list", nil), http.StatusServiceUnavailable, true},
		// Created here alone, written back later (TestRedisSessions_CreatedInAnOutage).
		{"initialize", "", th.InitBody("2025-11-25", nil), http.StatusOK, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := a.Post(t, tc.sid, tc.body)
			if res.Status != tc.want {
				t.Fatalf("got %s, want %d", res, tc.want)
			}
			if got := res.Header.Get("Retry-After"); (got != "") != tc.retryAfter {
				t.Fatalf("Retry-After %q, want one: %v", got, tc.retryAfter)
			}
		})
	}

	proxy.Restore()
	testutil.Eventually(t, th.WaitLong, "the unknown session to resolve once redis is back", func() bool {
		return a.Post(t, unknown, th.RPC(5, "tools/list", nil)).Status == http.StatusOK
	})
	testutil.Eventually(t, th.WaitLong, "the subscription acknowledged during the outage to reach redis", func() bool {
		v := hget(t, direct, redisKeys(prefix).session(known), "s:test://down")
		return v == "1"
	})
	b.ToolsListOK(t, known)
	if !subscribed(b.session(t, known), "test://down") {
		t.Fatal("B's copy lacks the subscription made on A during the outage")
	}
}

// One slow Redis reply is not an outage: after an operation timed out,
// the next client is served (it used to get 503 for a second while Redis
// was skipped after any failure), and only a run of failures makes the
// replica stop waiting on Redis (docs/adr/0044-one-redis-foundation.md).
func TestRedisSessions_SlowReplyIsNoOutage(t *testing.T) {
	direct := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, direct)
	// Redis answers all along: a probe would close the breaker the run of
	// failures opens before the last initialize, so none comes within
	// the test.
	conn := redisconn.New(direct, redisconn.Options{KeyPrefix: prefix, Timeouts: redisconn.Timeouts{Hot: 500 * time.Millisecond},
		Breaker: redisconn.BreakerOptions{OpenFor: time.Hour}})
	t.Cleanup(func() { _ = conn.Close() })
	a := replica(t, direct, prefix, func(o *replicaConfig) { o.share.Conn = conn })
	m := a.shared()
	m.failed(fmt.Errorf("append: %w", context.DeadlineExceeded))
	if sid := a.Initialize(t); len(sid) != sessionIDLen {
		t.Fatalf("after one failure the session %q was created without Redis; want it created in Redis", sid)
	}
	for range 10 {
		m.failed(fmt.Errorf("append: %w", context.DeadlineExceeded))
	}
	// A run of failures opens the breaker: the next session is created
	// here alone, without waiting on Redis (TestRedisSessions_CreatedInAnOutage).
	if sid := a.Initialize(t); len(sid) != offlineSessionIDLen {
		t.Fatalf("after a run of failures the session %q was created in Redis; want it created here without waiting", sid)
	}
}

// failPipelineOnce makes the next transaction (MULTI … EXEC) the client
// sends fail as a timed-out reply would.
type failPipelineOnce struct{ armed atomic.Bool }

func (*failPipelineOnce) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*failPipelineOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *failPipelineOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() == "multi" && h.armed.CompareAndSwap(true, false) {
			return fmt.Errorf("store: %w", context.DeadlineExceeded)
		}
		return next(ctx, cmds)
	}
}

// A session whose store in Redis failed once, with Redis otherwise
// answering, is created here and written back at once, not at the
// sweeper's next round a minute later. Only initialize is sent: a later
// change of the session would find its hash missing and kick the
// sweeper by that path (missing).
func TestRedisSessions_CreatedAfterOneFailureIsWrittenBackAtOnce(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	var hook failPipelineOnce
	rdb.AddHook(&hook)
	a := replica(t, rdb, prefix, func(o *replicaConfig) { o.SessionIdleTimeout = time.Hour }) // rounds a minute apart
	hook.armed.Store(true)
	r := a.Post(t, "", th.InitBody(protocol.LatestVersion, nil))
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Status != http.StatusOK {
		t.Fatalf("initialize: %s", r)
	}
	if _, ok := offlineSince(sid); !ok || hook.armed.Load() {
		t.Fatalf("session %q (hook fired: %v): want one created without Redis after the failed store", sid, !hook.armed.Load())
	}
	if !a.shared().conn.Available() {
		t.Fatal("one failure opened the breaker")
	}
	testutil.Eventually(t, testutil.Wait, "the session to be written back", func() bool {
		return exists(t, rdb, redisKeys(prefix).session(sid))
	})
}

// A client that initializes while its replica cannot reach Redis is
// served (it used to get 503 for the whole outage): the session is
// created on that replica alone, the other replicas answer it 503 — never
// 404, which would make the client drop it — and once Redis answers
// again it is written back and served everywhere, with what the client
// changed meanwhile (docs/adr/0047-sessions-created-in-an-outage.md).
func TestRedisSessions_CreatedInAnOutage(t *testing.T) {
	direct := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, direct)
	proxy := netfault.NewProxy(t, testRedisAddr)
	a := replica(t, testRedis(t, proxy.Addr()), prefix)
	b := replica(t, direct, prefix)
	proxy.Cut()
	for a.shared().conn.Available() { // A's operations fail until its breaker opens
		a.shared().failed(fmt.Errorf("append: %w", context.DeadlineExceeded))
	}

	sid := a.Initialize(t)
	if _, ok := offlineSince(sid); !ok {
		t.Fatalf("session %q: want an id that says it was created without Redis", sid)
	}
	a.ToolsListOK(t, sid)
	a.Subscribe(t, sid, "test://outage")
	if r := b.Post(t, sid, th.RPC(1, "tools/list", nil)); r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("B, before the session is written back: %s; want 503 with Retry-After", r)
	}
	if exists(t, direct, redisKeys(prefix).session(sid)) {
		t.Fatal("the session is in Redis during the outage")
	}

	proxy.Restore()
	testutil.Eventually(t, testutil.Wait, "A to write the session back", func() bool {
		return exists(t, direct, redisKeys(prefix).session(sid))
	})
	b.ToolsListOK(t, sid)
	if !subscribed(b.session(t, sid), "test://outage") {
		t.Fatal("B's copy lacks the subscription made on A during the outage")
	}

	// An id of that form Redis never held, older than the idle timeout,
	// is an ended session: 404, as for any other.
	old, err := newOfflineSessionID(time.Now().Add(-2 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Post(t, old, th.RPC(1, "tools/list", nil)); r.Status != http.StatusNotFound {
		t.Fatalf("an old offline id: %s; want 404", r)
	}
	// A forged one dated in the future is not a session being written
	// back for ever: 404 too.
	forged, err := newOfflineSessionID(time.Now().Add(50 * 365 * 24 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Post(t, forged, th.RPC(1, "tools/list", nil)); r.Status != http.StatusNotFound {
		t.Fatalf("an offline id dated in the future: %s; want 404", r)
	}
}

// TestRedisSessions_BusyCopyStays
// (docs/adr/0025-shared-copy-lifetime.md): the client started a long tool
// call (or one that asks it for sampling) on B and went on working on A,
// or went quiet, for longer than the idle timeout. What the client would
// notice before the fix: B let go of its "idle" copy and so cancelled the
// running handler — the call never answered, its stream ended without a
// response, the sampling answer reached nobody — and, the client quiet,
// the session itself expired under the running call. A copy with a
// request in flight, or a server-to-client request pending, now stays,
// and its replica keeps the session's keys alive while the work runs. (A
// is the session's home, whose copy stays anyway; B's is an ordinary
// copy.)
func TestRedisSessions_BusyCopyStays(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	// The sweeper refreshes the keys of a busy copy every 20 ms, against
	// a TTL of 800 ms: a sweep late by most of the TTL, not a quarter
	// of it as with the default period, is what it takes to let the
	// session expire under load.
	idle := func(o *replicaConfig) {
		o.SessionIdleTimeout, o.share.tune.sweep = 800*time.Millisecond, 20*time.Millisecond
	}
	a, b := replica(t, rdb, prefix, idle), replica(t, rdb, prefix, idle)
	sid, _ := a.InitializeWith(t, protocol.LatestVersion, map[string]any{"sampling": map[string]any{}})
	b.ToolsListOK(t, sid)
	const busy = 1600 * time.Millisecond // two idle timeouts
	useOnA := func(t *testing.T) {
		for range 12 {
			time.Sleep(busy / 12)
			a.ToolsListOK(t, sid)
		}
	}
	stillHeld := func(t *testing.T) {
		t.Helper()
		if b.tr.Sessions().Len() != 1 {
			t.Fatal("B let go of the copy whose handler runs")
		}
	}

	for _, tc := range []struct {
		name string
		wait func(t *testing.T, blk *th.BlockState)
	}{
		{"client busy on the other replica", func(t *testing.T, blk *th.BlockState) {
			useOnA(t)
			select {
			case <-blk.Cancelled:
				t.Fatal("the handler on B was cancelled while the client used the session on A")
			default:
			}
		}},
		{"client quiet", func(t *testing.T, blk *th.BlockState) {
			th.NotWithin(t, blk.Cancelled, busy, "the handler's cancellation")
			if !exists(t, rdb, redisKeys(prefix).session(sid)) {
				t.Fatal("the session expired in redis under a running handler")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := strings.ReplaceAll(tc.name, " ", "-")
			name := postStreamOnA(t, b, sid, "block_long", key)
			blk := b.Fx.Block(key)
			tc.wait(t, blk)
			stillHeld(t)
			blk.Release()
			th.WaitChan(t, blk.Finished, "the handler to finish")
			wantRestOfBlock(t, a.OpenGET(t, sid, "Last-Event-ID", name+"-1"), name, key)
		})
	}

	t.Run("waiting for a sampling answer", func(t *testing.T) {
		ps := b.PostSSE(t, sid, th.ToolCall(41, "sample_long", map[string]any{"prompt": "hi"}, nil))
		ev, m := ps.NextMessage(t)
		if m.Method != protocol.MethodSamplingCreateMessage {
			t.Fatalf("want a sampling request, got %+v", m)
		}
		name, _ := th.SplitEventID(t, ev.ID)
		st := b.session(t, sid).Stream(name)
		ps.Close()
		th.WaitDetached(t, st)
		useOnA(t)
		stillHeld(t)
		answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"late reply"},"model":"m"}}`, m.ID)
		if r := a.Post(t, sid, []byte(answer)); r.Status != http.StatusAccepted {
			t.Fatalf("POST of the answer on A: %s", r)
		}
		r := a.OpenGET(t, sid, "Last-Event-ID", ev.ID)
		ev, _ = r.NextMessage(t)
		if text, isErr := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), "41")); isErr || !strings.Contains(text, "late reply") {
			t.Fatalf("tool result %q isError=%v, want the client's late answer", text, isErr)
		}
		r.WaitEnd(t)
	})
}

// A principal's and a tenant's share of client sessions hold across
// replicas: sessions made on A and B count together, other tenants are
// unaffected, and a DELETE frees a place everywhere.
func TestRedisSessions_PerPrincipalAndTenantCapsAcrossReplicas(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	caps := func(o *replicaConfig) { o.MaxSessionsPerPrincipal, o.MaxSessionsPerTenant = 2, 3 }
	a, b := replica(t, rdb, prefix, caps), replica(t, rdb, prefix, caps)
	sessiontest.CapSteps(t, a.tr.Sessions(), b.tr.Sessions())
}

// A sweep that refreshes a copy just as another replica deletes its
// session must not put the session's place back in its principal's and
// tenant's shares: the refresh used to add the member back, so the
// principal, at its cap, could not open a session again until the idle
// timeout, although it had ended one (TestRedisSessions_PerPrincipal…
// failed so under load, when a heartbeat's failure kicked a sweep).
func TestRedisSessions_RefreshDoesNotRetakeDeletedPlace(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	caps := func(o *replicaConfig) { o.MaxSessionsPerPrincipal = 1 }
	a, b := replica(t, rdb, prefix, caps), replica(t, rdb, prefix, caps)
	ctx := context.Background()
	in := transport.SessionInit{Version: protocol.LatestVersion, Principal: "apikey:a", Tenant: "t1", EventLogSize: 8}
	s, err := b.tr.Sessions().Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	c := b.copyOf(t, s.ID())
	if _, err := a.tr.Sessions().Get(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	if err := a.tr.Sessions().Delete(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	b.shared().housekeep([]*redisCopy{c}, nil, nil, nil) // B's refresh, queued before it heard of the end
	if _, err := a.tr.Sessions().Create(ctx, in); err != nil {
		t.Fatalf("a session of the principal whose only one was deleted: %v", err)
	}
}

// A session written back after Redis lost its data counts in its
// principal's share again: the refresh no longer adds a missing place,
// so the write-back puts it back.
func TestRedisSessions_WriteBackRetakesPlace(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a := replica(t, rdb, prefix, func(o *replicaConfig) { o.MaxSessionsPerPrincipal, o.share.tune.sweep = 1, 20*time.Millisecond })
	sid := a.Initialize(t)
	if err := rdb.Del(context.Background(), keysMatching(t, rdb, redisKeys(prefix).all())...).Err(); err != nil {
		t.Fatal(err) // Redis lost everything, epoch included
	}
	a.ToolsListOK(t, sid) // the client goes on using its session here
	testutil.Eventually(t, th.WaitLong, "the session to be written back", func() bool { return exists(t, rdb, redisKeys(prefix).session(sid)) })
	a.waitSweeps(t, 1)
	if r := a.Post(t, "", th.InitBody(protocol.LatestVersion, nil)); r.Status != http.StatusTooManyRequests {
		t.Fatalf("a second session of a principal whose cap is 1: %s", r)
	}
}
