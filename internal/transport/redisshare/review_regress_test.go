package redisshare

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/netfault"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	"github.com/mcp-runtime/mcp-runtime/internal/transport/sessiontest"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// TestUnsubscribeOnStaleCopyReachesRedis: a subscription change made on
// one replica must not be decided against a copy that has not yet applied
// the previous change from the channel
// (docs/adr/0015-shared-client-sessions.md). The client unsubscribes on B
// right after subscribing on A: B's copy may not know the subscription
// yet, and the unsubscribe must reach Redis (hash and reverse index) all
// the same.
func TestUnsubscribeOnStaleCopyReachesRedis(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	ctx := context.Background()

	// Deterministic: the subscription is in Redis, but its announcement
	// has not reached B (written behind the channel's back).
	sid := a.Initialize(t)
	b.ToolsListOK(t, sid)
	const uri = "test://r1/stale"
	index := redisKeys(prefix).subs("default", uri)
	mustRedis(t, rdb.HSet(ctx, redisKeys(prefix).session(sid), "s:"+uri, "1"))
	mustRedis(t, rdb.SAdd(ctx, index, sid))
	if r := b.Post(t, sid, th.RPC("u", "resources/unsubscribe", map[string]any{"uri": uri})); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	if v := hget(t, rdb, redisKeys(prefix).session(sid), "s:"+uri); v != "" {
		t.Fatal("an unsubscribe on a copy that had not heard of the subscription left it in the session's hash")
	}
	if in := isMember(t, rdb, index, sid); in {
		t.Fatal("an unsubscribe on a copy that had not heard of the subscription left the session in the reverse index")
	}

	// The race itself, round-robin.
	lost := 0
	const rounds = 20
	for i := range rounds {
		sid := a.Initialize(t)
		b.ToolsListOK(t, sid) // B has a copy, kept coherent by the channel
		uri := fmt.Sprintf("test://r1/%d", i)
		if r := a.Post(t, sid, th.RPC("s", "resources/subscribe", map[string]any{"uri": uri})); r.Status != http.StatusOK {
			t.Fatal(r)
		}
		if r := b.Post(t, sid, th.RPC("u", "resources/unsubscribe", map[string]any{"uri": uri})); r.Status != http.StatusOK {
			t.Fatal(r)
		}
		// Both changes have come back on the channel to both copies:
		// nothing about them is still on its way to Redis.
		sa, sb := a.session(t, sid), b.session(t, sid)
		testutil.Eventually(t, th.WaitLong, "both copies to apply the unsubscribe", func() bool { return !subscribed(sa, uri) && !subscribed(sb, uri) })
		v := hget(t, rdb, redisKeys(prefix).session(sid), "s:"+uri)
		inIndex := isMember(t, rdb, redisKeys(prefix).subs("default", uri), sid)
		if v == "1" || inIndex {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d/%d unsubscribes (acknowledged with 200) were never written to redis: the session keeps getting updates", lost, rounds)
	}
}

// TestGETDuringRedisBlipDoesNotReplay
// (docs/adr/0049-get-opens-through-an-outage.md): a GET on a replica that
// cannot read the stream's position from Redis at that moment opens all
// the same, since a client refused may never retry and would miss every
// notification after it. It must not read with its copy's stale position
// (nothing, for a copy that never held the stream), which would replay
// every event the client already had: it reads nothing until Redis
// answers, then starts after the client's Last-Event-ID, or for a fresh
// GET where the last connection stopped, and the next event reaches it.
func TestGETDuringRedisBlipDoesNotReplay(t *testing.T) {
	for _, tc := range []struct {
		name string
		hdrs []string
	}{
		{"resumed after g-3", []string{"Last-Event-ID", "g-3"}},
		{"fresh", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			direct := testRedis(t, testRedisAddr)
			prefix := testPrefix(t, direct)
			proxy := netfault.NewProxy(t, testRedisAddr)
			a := replica(t, direct, prefix)
			b := replica(t, testRedis(t, proxy.Addr()), prefix)

			sid := a.Initialize(t)
			b.ToolsListOK(t, sid) // B knows the session
			a.Subscribe(t, sid, "test://r2")
			for range 3 {
				publish(t, "test://r2", a)
			}
			logged(t, direct, prefix, sid, 3)
			g := a.OpenGET(t, sid)
			g.Next(t) // priming
			for i := 1; i <= 3; i++ {
				if ev, _ := g.NextMessage(t); ev.ID != fmt.Sprintf("g-%d", i) {
					t.Fatalf("got %+v", ev)
				}
			}
			hash := redisKeys(prefix).session(sid)
			testutil.Eventually(t, th.WaitLong, "A to record g-3 as flushed", func() bool { return hgetInt(t, direct, hash, "gflushed") == 3 })
			g.Close() // the client has g-1..g-3

			proxy.Cut()
			// The GET lands on B during the blip: it opens, and B reads
			// nothing while it cannot tell where the stream stands.
			r := tryGET(t, b, sid, append([]string{"Accept", "text/event-stream"}, tc.hdrs...)...)
			if r == nil {
				t.Fatal("GET of a session B knows during a redis blip: 503, want the stream")
			}
			// Nothing, not even a priming event: its id would be B's
			// stale position, and a reconnect with it would replay.
			for wait := time.After(th.WaitShort); ; {
				var ev th.SSEEvent
				select {
				case ev = <-r.Frames:
				case <-wait:
				}
				if ev == (th.SSEEvent{}) {
					break
				}
				if !ev.IsComment() || ev.HasID {
					t.Fatalf("while B cannot tell where the stream stands, got %+v", ev)
				}
			}
			proxy.Restore()
			publish(t, "test://r2", a) // g-4, the first the client lacks
			for {
				ev, m := r.NextMessage(t)
				if m.Method == "" {
					continue
				}
				if ev.ID != "g-4" {
					t.Fatalf("after g-3, got %+v %+v: want g-4, nothing the client had", ev, m)
				}
				break
			}
			quiet(t, r, th.WaitShort)
		})
	}
}

// TestConcurrentGETsLeaveOneStream: a client sends two GETs of its
// session at once, to two replicas. Each claims the session's home; the
// later claim wins, and the other replica's stream must close even when
// the winning claim reached it before its connection attached (there was
// nothing to close then), when a stale claim arrives as its own claim
// begins, or while its connection reads the shared log: an event goes
// out on one stream only. Before, it went out on both in 110 of 150
// rounds.
func TestConcurrentGETsLeaveOneStream(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b, c := replica(t, rdb, prefix), replica(t, rdb, prefix), replica(t, rdb, prefix)
	for i := range 40 {
		sid := c.Initialize(t) // home C: both A and B claim
		a.ToolsListOK(t, sid)
		b.ToolsListOK(t, sid)
		uri := fmt.Sprintf("test://both/%d", i)
		a.Subscribe(t, sid, uri)
		var ga, gb *th.SSEConn
		var wg sync.WaitGroup
		wg.Go(func() { ga = tryGET(t, a, sid, "Accept", "text/event-stream") })
		wg.Go(func() { gb = tryGET(t, b, sid, "Accept", "text/event-stream") })
		wg.Wait()
		if ga == nil || gb == nil {
			t.Fatal("a GET was refused")
		}
		ca, cb := a.copyOf(t, sid), b.copyOf(t, sid)
		testutil.Eventually(t, th.WaitLong, "the copies to agree on the home", func() bool {
			return ca.home() == cb.home() && ca.homeVersion() == cb.homeVersion()
		})
		publish(t, uri, a)
		// Each stream either delivers the update or closes with a retry
		// hint: exactly one of each.
		got, closed := 0, 0
		for _, g := range []*th.SSEConn{ga, gb} {
		read:
			for wait := time.After(th.WaitLong); ; {
				select {
				case ev := <-g.Frames:
					if ev.Retry != "" {
						closed++
						break read
					}
					if strings.Contains(ev.Data, uri) {
						got++
						break read
					}
				case <-g.Done:
					closed++
					break read
				case <-wait:
					t.Fatalf("round %d: a stream neither delivered the update nor closed within %v", i, th.WaitLong)
				}
			}
		}
		if got != 1 || closed != 1 {
			t.Fatalf("round %d: the update went out on %d streams and %d closed, want one of each", i, got, closed)
		}
		ga.Close()
		gb.Close()
	}
}

// tryGET opens a GET stream on h, or returns nil when h answers 503 with
// Retry-After (Redis cannot say where the stream stands yet).
func tryGET(t *testing.T, h *harness, sid string, hdrs ...string) *th.SSEConn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res, err := h.Client.Do(h.NewRequest(t, ctx, http.MethodGet, sid, nil, hdrs...))
	if err != nil {
		cancel()
		t.Fatalf("GET: %v", err)
	}
	if res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") != "" {
		res.Body.Close()
		cancel()
		return nil
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		cancel()
		t.Fatalf("GET: want 200 or 503, got %d", res.StatusCode)
	}
	c := th.NewSSEConn(res, cancel)
	t.Cleanup(c.Close)
	return c
}

// TestRewriteAfterRedisLossKeepsHome (docs/adr/0026-redis-data-loss.md;
// only the home logs a broadcast,
// docs/adr/0016-resource-updates-logged-by-origin.md): after Redis lost a
// session (restart without persistence), the sweeper's rewrite puts back
// every field but "home", so the append script refuses every
// tools/list_changed (-3) for that session for good.
func TestRewriteAfterRedisLossKeepsHome(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	short := func(o *replicaConfig) { o.SessionIdleTimeout = 800 * time.Millisecond }
	a := replica(t, rdb, prefix, short)
	sid := a.Initialize(t)
	g := a.OpenGET(t, sid)
	g.Next(t) // priming; A holds the stream and is home
	key := redisKeys(prefix).session(sid)
	// Redis loses the session (FLUSHALL / restart without persistence).
	mustRedis(t, rdb.Del(context.Background(), key, redisKeys(prefix).stream(sid, "g")))
	testutil.Eventually(t, th.WaitLong, "the sweeper to write the session back", func() bool {
		v := hget(t, rdb, key, "v")
		return v != ""
	})
	if !a.copyOf(t, sid).IsHome() {
		t.Fatal("A's copy no longer thinks it is home")
	}
	home := hget(t, rdb, key, "home")
	if _, err := a.tr.ToolsListChanged(); err != nil {
		t.Fatal(err)
	}
	if ev, _ := g.NextMessage(t); ev.ID != "g-1" {
		t.Fatalf("tools/list_changed after the rewrite (home in redis: %q): got %+v", home, ev)
	}

	// A hash that names no home (rewritten by a copy that was not home)
	// is taken over by the next broadcast, not left without one.
	mustRedis(t, rdb.HDel(context.Background(), key, "home"))
	if _, err := a.tr.ToolsListChanged(); err != nil {
		t.Fatal(err)
	}
	if ev, _ := g.NextMessage(t); ev.ID != "g-2" {
		t.Fatalf("tools/list_changed of a session with no home in redis: got %+v", ev)
	}
	if home := hget(t, rdb, key, "home"); home == "" {
		t.Fatal("the broadcast did not make a home")
	}
}

// TestRedisErrorReplyRetriesEvents
// (docs/adr/0023-get-needs-redis-position.md): an error reply of a Redis
// briefly unable to serve (READONLY during a failover, LOADING after a
// restart, OOM, BUSY, MASTERDOWN...) is not a verdict on the command: the
// batch is retried, so no acknowledged event is dropped, and a rewrite it
// refused is tried again, so no acknowledged change is lost. Uses a
// private redis-server (redistest.Start) made a read-only replica for a
// moment.
func TestRedisErrorReplyRetriesEvents(t *testing.T) {
	// REPLICAOF would disturb every other test: a private server.
	rdb := testRedis(t, redistest.Start(t).Addr())
	prefix := testPrefix(t, rdb)
	// A short idle timeout: the sweeper, which rewrites, runs every 200 ms.
	a := replica(t, rdb, prefix, func(o *replicaConfig) { o.SessionIdleTimeout = 800 * time.Millisecond })
	sid := a.Initialize(t)
	a.Subscribe(t, sid, "test://r4")
	g := a.OpenGET(t, sid)
	g.Next(t) // priming

	ctx := context.Background()
	// A failover: the node this replica talks to is briefly a replica.
	if err := rdb.Do(ctx, "REPLICAOF", "127.0.0.1", "1").Err(); err != nil {
		t.Fatal(err)
	}
	publish(t, "test://r4", a)
	publish(t, "test://r4", a)
	if r := a.Post(t, sid, th.RPC("l", "logging/setLevel", map[string]any{"level": "debug"})); r.Status != http.StatusOK {
		t.Fatal(r)
	}
	a.waitSweeps(t, 2) // sweeps try the rewrite meanwhile
	if err := rdb.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	publish(t, "test://r4", a)
	got := 0
	deadline := time.After(2 * time.Second)
	for {
		select {
		case ev := <-g.Frames:
			if !ev.IsComment() {
				got++
				t.Logf("event %s", ev.ID)
			}
			continue
		case <-deadline:
		}
		break
	}
	if got != 3 {
		t.Fatalf("3 updates acknowledged, %d delivered: the ones refused with READONLY were dropped, not retried", got)
	}
	testutil.Eventually(t, th.WaitLong, "the log level set during the failover to reach redis", func() bool {
		v := hget(t, rdb, redisKeys(prefix).session(sid), "level")
		return v == "debug"
	})
}

// TestCloseFlushesQueuedEvents: Close while the appender is writing must
// neither cancel its pipeline under it nor take its own cancellation for
// a Redis outage (which skipped the final flush): everything queued
// before a graceful shutdown reaches Redis.
func TestCloseFlushesQueuedEvents(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	b := replica(t, rdb, prefix)
	a := replica(t, rdb, prefix)
	sid := b.Initialize(t)
	b.Subscribe(t, sid, "test://r5")
	a.ToolsListOK(t, sid)
	const n = 3000
	for range n {
		if _, err := a.tr.ResourceUpdated("", "test://r5"); err != nil {
			t.Fatal(err)
		}
	}
	a.Close() // graceful shutdown of the origin replica
	got := hgetInt(t, rdb, redisKeys(prefix).session(sid), "gseq")
	st := a.tr.SharingStats()
	t.Logf("queued %d, dropped %d, logged %d", st.Updates, st.Dropped, got)
	if int64(got) != st.Updates {
		t.Fatalf("%d updates queued before Close, %d logged: the final flush was skipped", st.Updates, got)
	}
}

// TestGETOnAnotherReplicaSupersedesFirst
// (docs/adr/0023-get-needs-redis-position.md): a second GET stream on
// another replica supersedes the first, as attach does in memory:
// otherwise both would carry every event, and basic/transports says a
// message MUST NOT be broadcast on several streams. The first is closed
// with a retry hint.
func TestGETOnAnotherReplicaSupersedesFirst(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := a.Initialize(t)
	a.Subscribe(t, sid, "test://r6")
	ga := a.OpenGET(t, sid)
	ga.Next(t)
	gb := b.OpenGET(t, sid) // the client reconnected; A's TCP conn not yet noticed dead
	gb.Next(t)
	wantSuperseded(t, ga)
	publish(t, "test://r6", a)
	if ev, _ := gb.NextMessage(t); ev.ID != "g-1" {
		t.Fatalf("B's stream: got %+v", ev)
	}
}

// TestStaleHomeClaimKeepsTheStream: pub/sub can deliver another
// replica's home claim to a replica after that replica's own, later,
// claim (B took over from a dead home while the client's GET opened on
// C). The stream the client opened must stay: only a claim newer than the
// replica's own supersedes it, and its version (hash field hv) tells.
func TestStaleHomeClaimKeepsTheStream(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := a.Initialize(t)
	hash := redisKeys(prefix).session(sid)
	before := hgetInt(t, rdb, hash, "hv")
	g := b.OpenGET(t, sid)
	g.Next(t) // priming: B's claim is in Redis
	cur := hgetInt(t, rdb, hash, "hv")
	if cur <= before {
		t.Fatalf("home version %d after B's claim, want more than %d", cur, before)
	}
	claim := func(hv int) {
		t.Helper()
		self := a.shared().self
		msg := fmt.Sprintf(`{"o":%q,"id":%q,"op":"home","home":%q,"hv":%d}`, self, sid, self, hv)
		mustRedis(t, rdb.Publish(context.Background(), b.shared().channel, msg))
	}
	claim(before) // A's, from before B's, delivered late
	quiet(t, g, th.WaitShort)
	if !b.copyOf(t, sid).IsHome() {
		t.Fatal("a stale claim took the home from B")
	}
	claim(cur + 1) // a newer one: the client moved on
	wantSuperseded(t, g)
}

// TestStaleHashReadKeepsTheStream: a replica re-reads its copies (its
// channel link came back) and the read of the hash lands before its own
// claim of the session, the reset after it. The hash is stale about the
// home: B stays home and the stream the client opened on B stays open.
// A hash naming a newer home still supersedes it.
func TestStaleHashReadKeepsTheStream(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := a.Initialize(t)
	b.ToolsListOK(t, sid)
	hash := redisKeys(prefix).session(sid)
	read := func() map[string]string {
		t.Helper()
		h, err := rdb.HGetAll(context.Background(), hash).Result()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	stale := read()
	g := b.OpenGET(t, sid)
	g.Next(t) // priming: B's claim is in Redis
	copyB := b.copyOf(t, sid)
	copyB.reset(stale)
	quiet(t, g, th.WaitShort)
	if !copyB.IsHome() {
		t.Fatalf("a hash read before B's claim took the home back (home %q)", copyB.home())
	}
	newer := read()
	newer["home"] = a.shared().self
	newer["hv"] = fmt.Sprint(hgetInt(t, rdb, hash, "hv") + 1)
	copyB.reset(newer)
	wantSuperseded(t, g)
}

// wantSuperseded waits for the GET stream g to close, as a superseded
// one does: no message on it meanwhile, and a retry hint.
func wantSuperseded(t *testing.T, g *th.SSEConn) {
	t.Helper()
	retry := false
	deadline := time.After(th.WaitLong)
	for {
		select {
		case ev := <-g.Frames:
			if ev.Retry != "" {
				retry = true
			}
			if !ev.IsComment() && ev.HasData {
				t.Fatalf("the superseded stream got %+v", ev)
			}
		case <-g.Done:
			for len(g.Frames) > 0 { // read before the end was seen
				if ev := <-g.Frames; ev.Retry != "" {
					retry = true
				}
			}
			if !retry {
				t.Error("the superseded stream closed without a retry hint")
			}
			return
		case <-deadline:
			t.Fatal("the superseded GET stream stays open")
		}
	}
}

// A replica that missed another's home claim — its channel link was down
// when the claim was published, as happens when the link is re-made
// under load — learns of it when it re-reads its copies, and must close
// its GET stream then, as it would have on the claim itself: the claim
// means the client opened its stream on the other replica. (It did not:
// the re-read took the new home and left the old stream open, so every
// event went out on two streams; TestGETOnAnotherReplicaSupersedesFirst
// failed so under load.)
func TestResyncClosesStreamOfMissedHomeClaim(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a := replica(t, rdb, prefix)
	sid := a.Initialize(t)
	ga := a.OpenGET(t, sid)
	ga.Next(t) // priming: A holds the stream, and is home
	// The claim of a replica B, written behind A's channel.
	if err := rdb.HSet(context.Background(), redisKeys(prefix).session(sid), "home", "replica-b").Err(); err != nil {
		t.Fatal(err)
	}
	a.shared().resyncAll() // as after the link came back
	wantSuperseded(t, ga)
	if a.copyOf(t, sid).IsHome() {
		t.Fatal("A still takes itself for home")
	}
}

// TestMadeUpSessionIDsCostNoRedisLookup
// (docs/adr/0023-get-needs-redis-position.md): an id that transport.NewSessionID
// cannot have made is answered 404 without a Redis lookup, as the
// in-memory store answers it, so a flood of made-up ids can neither load
// Redis nor make it look unavailable to every client. The replica's Redis
// is unreachable here: a lookup would answer 503.
func TestMadeUpSessionIDsCostNoRedisLookup(t *testing.T) {
	direct := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, direct)
	proxy := netfault.NewProxy(t, testRedisAddr)
	a := replica(t, testRedis(t, proxy.Addr()), prefix)
	mem := newHarness(t, sessiontest.Options())
	sid := a.Initialize(t)
	proxy.Cut()
	defer proxy.Restore()
	ids := []string{
		"nope",
		strings.Repeat("x", 64),
		sid + "A",                  // too long
		sid[:sessionIDLen-1],       // too short
		"AAAAAAAAAAAAAAAAAAAAA!",   // not base64url
		"AAAAAAAAAAAAAAAAAAAAAB",   // not the encoding of 16 bytes (trailing bits)
		"AAAAAAAAAAAAAAAAAAAAAA==", // padded
	}
	for _, id := range ids {
		for name, h := range map[string]*harness{"redis": a, "memory": mem} {
			if r := h.Post(t, id, th.RPC(1, "tools/list", nil)); r.Status != http.StatusNotFound {
				t.Errorf("%s store, session id %q: want 404, got %v", name, id, r)
			}
		}
	}
	// One that could be ours needs Redis to say: 503, never 404.
	unknown, err := transport.NewSessionID()
	if err != nil {
		t.Fatal(err)
	}
	if r := a.Post(t, unknown, th.RPC(1, "tools/list", nil)); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("possible session id while redis is down: want 503, got %v", r)
	}
}

// TestSessionLoadsAreBounded (docs/adr/0023-get-needs-redis-position.md):
// past maxConcurrentLoads materialisations in progress, a request for a
// session this replica does not know gets 503 with Retry-After instead of
// one more Redis round trip.
func TestSessionLoadsAreBounded(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := a.Initialize(t)
	for range cap(b.shared().loads) { // every slot taken
		b.shared().loads <- struct{}{}
	}
	r := b.Post(t, sid, th.RPC(1, "tools/list", nil))
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a load over the bound: want 503 with Retry-After, got %v", r)
	}
	<-b.shared().loads
	b.ToolsListOK(t, sid)
}

// TestSessionLoadOutlivesFirstCaller: the load of a session this replica
// does not know serves every request waiting for it, so it must not run
// on the context of the request that began it: a client that hangs up
// would fail the others with 503.
func TestSessionLoadOutlivesFirstCaller(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := a.Initialize(t)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	// The first caller, whose client has left, begins the load; the
	// others join it.
	if _, err := b.shared().Get(gone, sid); err != nil {
		t.Fatalf("a load begun by a request whose client left: %v", err)
	}
	b.shared().drop(sid)
	// Concurrently: whichever caller begins the load, the ones whose
	// client stays get the session.
	errs := make(chan error, 8)
	for i := range cap(errs) {
		ctx := context.Background()
		if i%2 == 0 {
			ctx = gone
		}
		go func() {
			_, err := b.shared().Get(ctx, sid)
			if ctx == gone && errors.Is(err, context.Canceled) {
				err = nil // its own client left while it waited: fine
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Fatalf("load of a live session: %v", err)
		}
	}
}

// TestSweeperKeepsCopyJustGiven (docs/adr/0025-shared-copy-lifetime.md):
// the sweeper lets go of copies idle on this replica, but never of one
// Get has just handed to a request, which would then answer 404
// (errSessionEnded) for a session alive in Redis.
func TestSweeperKeepsCopyJustGiven(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := a.Initialize(t)
	b.ToolsListOK(t, sid)
	m := b.shared()
	c := b.copyOf(t, sid)
	s := c.s
	s.Touch(time.Unix(0, 0)) // idle here for ever: the sweeper's to let go
	got, err := m.Get(context.Background(), sid)
	if err != nil || got != s {
		t.Fatalf("Get: %v (same copy: %v)", err, got == s)
	}
	// The sweeper decided before the Get, and evicts after it.
	m.evict(c, m.now().Add(-m.idle))
	if s.Ended() {
		t.Fatal("the sweeper ended the copy a request had just been given")
	}
	b.ToolsListOK(t, sid)

	// Idle for real, it goes; the session lives on in Redis.
	s.Touch(time.Unix(0, 0))
	m.evict(c, m.now().Add(-m.idle))
	if !s.Ended() {
		t.Fatal("an idle copy was not let go")
	}
	b.ToolsListOK(t, sid)
}

// TestRereadKeepsChangesHeardMeanwhile: a replica re-reads its copy (its
// channel came back) and another replica's change is published after the
// read was sent but heard before the reset: the hash predates it, and the
// reset must not undo it. The copy keeps the level and the subscription
// B set, as Redis does.
func TestRereadKeepsChangesHeardMeanwhile(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := a.Initialize(t)
	b.ToolsListOK(t, sid)
	ca := a.copyOf(t, sid)
	hash := redisKeys(prefix).session(sid)

	ca.startReread()
	old := hgetAll(t, rdb, hash) // the read, sent before B's changes
	if r := b.Post(t, sid, th.RPC("lvl", "logging/setLevel", map[string]any{"level": "error"})); r.Status != http.StatusOK {
		t.Fatalf("setLevel on B: %s", r)
	}
	b.Subscribe(t, sid, "test://x")
	testutil.Eventually(t, th.WaitLong, "A to hear B's changes", func() bool {
		return ca.s.LogLevel() == "error" && subscribed(ca.s, "test://x")
	})
	a.shared().reread([]*redisCopy{ca}, []map[string]string{old})
	if lvl := ca.s.LogLevel(); lvl != "error" || !subscribed(ca.s, "test://x") {
		t.Fatalf("after the re-read: level %q, subscribed %v; want B's level and subscription", lvl, subscribed(ca.s, "test://x"))
	}
	if h := hgetAll(t, rdb, hash); h["level"] != "error" || h["s:test://x"] == "" {
		t.Fatalf("redis holds %v", h)
	}
}

// TestHomeVersionNewerAfterLaggingWriteBack: Redis lost a session and a
// copy that had missed the latest home claims wrote it back, its home
// version behind the one the other copies know. A claim made after it
// must still be newer than every earlier one, or the copies would take it
// for stale and keep their stream open beside the client's new one
// (basic/transports: a message goes out on one stream).
func TestHomeVersionNewerAfterLaggingWriteBack(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := a.Initialize(t)
	hash := redisKeys(prefix).session(sid)
	g := b.OpenGET(t, sid)
	g.Next(t) // priming: B's claim is in Redis
	seen := hgetInt(t, rdb, hash, "hv")
	testutil.Eventually(t, th.WaitLong, "A to hear B's claim", func() bool { return a.copyOf(t, sid).homeVersion() == uint64(seen) })

	// As a write-back from a copy that was not home and never heard a
	// claim leaves it: no home, the first version.
	mustRedis(t, rdb.HSet(context.Background(), hash, "hv", "1"))
	mustRedis(t, rdb.HDel(context.Background(), hash, "home"))
	a.OpenGET(t, sid).Next(t) // A's claim
	if hv := hgetInt(t, rdb, hash, "hv"); hv <= seen {
		t.Fatalf("home version %d after A's claim, not newer than %d, which B knows", hv, seen)
	}
	wantSuperseded(t, g)
}
