package redisshare

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// dialGate dials the connections of one replica's cluster client, and
// can hold the new ones to one node, as a node that accepts none (its
// host unreachable, new connections dropped) would, while the
// connections already open go on working.
type dialGate struct {
	mu    sync.Mutex
	held  string        // the node whose dials wait; "" for none
	open  chan struct{} // closed to let them through
	dials map[string]int
	// waiting receives once per dial held.
	waiting chan string
}

func newDialGate() *dialGate {
	return &dialGate{open: make(chan struct{}), dials: map[string]int{}, waiting: make(chan string, 64)}
}

func (g *dialGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	g.mu.Lock()
	g.dials[addr]++
	held, open := g.held == addr, g.open
	g.mu.Unlock()
	if held {
		select {
		case g.waiting <- addr:
		default:
		}
		select {
		case <-open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// hold makes the dials to addr wait until release.
func (g *dialGate) hold(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = addr
}

func (g *dialGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != "" {
		g.held = ""
		close(g.open)
	}
}

func (g *dialGate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, d := range g.dials {
		n += d
	}
	return n
}

// gatedCluster is a client of the test cluster, made as clusterRedis
// makes it but dialling through g and named name (CLIENT LIST shows
// it). Every node keeps idle connections, so that the commands of the
// store do not need new ones while g holds a node's.
func gatedCluster(t *testing.T, g *dialGate, name string) *redis.ClusterClient {
	t.Helper()
	o, err := redis.ParseClusterURL(redistest.ClusterURL(t))
	if err != nil {
		t.Fatal(err)
	}
	o.ContextTimeoutEnabled = true
	o.DialerRetries = 1
	o.Dialer = g.dial
	o.ClientName = name
	o.MinIdleConns = 4
	cc := redis.NewClusterClient(o)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func clientName(t *testing.T) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "mcp-test-" + hex.EncodeToString(b[:])
}

// nodeOf is the address of the master serving key.
func nodeOf(t *testing.T, cc *redis.ClusterClient, key string) string {
	t.Helper()
	n, err := cc.MasterForKey(context.Background(), key)
	if err != nil {
		t.Fatalf("route %s: %v", key, err)
	}
	return n.Options().Addr
}

// killPubSub closes, on node addr, the pub/sub connections of the
// clients named name, as a lost link would be.
func killPubSub(t *testing.T, cc *redis.ClusterClient, addr, name string) {
	t.Helper()
	ctx := context.Background()
	var node *redis.Client
	_ = cc.ForEachShard(ctx, func(_ context.Context, c *redis.Client) error {
		if c.Options().Addr == addr {
			node = c
		}
		return nil
	})
	if node == nil {
		t.Fatalf("no node %s", addr)
	}
	list, err := node.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		var id, cname string
		pubsub := false
		for f := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "id":
				id = v
			case "name":
				cname = v
			case "flags":
				pubsub = strings.Contains(v, "P")
			}
		}
		if cname == name && pubsub {
			if err := node.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
				t.Fatal(err)
			}
			killed++
		}
	}
	if killed == 0 {
		t.Fatalf("no pub/sub connection of %s on %s", name, addr)
	}
}

// A node that takes no new connection holds up the subscriptions to its
// own sessions' channels only: a session on another node is loaded as
// before. One goroutine sending every SSUBSCRIBE made a replica whose
// link to one node was dialling again (a lost master, a host gone) fail
// every load and create on every node, the whole time.
func TestShardedChannelsSlowNodeHoldsUpNoOther(t *testing.T) {
	cc := clusterRedis(t)
	prefix := testPrefix(t, cc)
	g := newDialGate()
	name := clientName(t)
	a, b := replica(t, gatedCluster(t, g, name), prefix), replica(t, cc, prefix)
	t.Cleanup(g.release)
	ctx := context.Background()
	keys := redisKeys(prefix)

	// Sessions made on B: two on one node, X, one elsewhere.
	var onX []string
	var elsewhere, x string
	for len(onX) < 2 || elsewhere == "" {
		sid := b.Initialize(t)
		switch n := nodeOf(t, cc, keys.session(sid)); {
		case x == "" || n == x:
			x = n
			if len(onX) < 2 {
				onX = append(onX, sid)
			}
		case elsewhere == "":
			elsewhere = sid
		}
	}
	a.ToolsListOK(t, onX[0]) // A's link to X is up

	// X takes no new connection, and A's link to it is lost: it dials
	// again, and waits.
	g.hold(x)
	killPubSub(t, cc, x, name)
	select {
	case <-g.waiting:
	case <-time.After(th.WaitLong):
		t.Fatal("A did not dial X again")
	}
	// A request for another session on X: its subscription is sent to X.
	held := make(chan struct{})
	go func() {
		defer close(held)
		_, _ = a.shared().Get(ctx, onX[1]) // fails once the session bound runs out
	}()
	defer func() { <-held }()
	bus := a.shared().shard
	testutil.Eventually(t, th.WaitLong, "the subscription to be sent to X", func() bool {
		bus.mu.Lock()
		defer bus.mu.Unlock()
		s := bus.subs[onX[1]]
		return s != nil && s.link != nil
	})

	if _, err := a.shared().Get(ctx, elsewhere); err != nil {
		t.Fatalf("a session on another node than X: %v", err)
	}
}

// holdRead holds the first pipeline that reads key (HGETALL), once Redis
// has answered it, until free: a load that has read the session's hash
// and not yet made its copy.
type holdRead struct {
	key        string
	read, done chan struct{}
	readOnce   sync.Once
	freeOnce   sync.Once
}

func newHoldRead(key string) *holdRead {
	return &holdRead{key: key, read: make(chan struct{}), done: make(chan struct{})}
}

func (h *holdRead) free() { h.freeOnce.Do(func() { close(h.done) }) }

func (h *holdRead) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *holdRead) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *holdRead) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if len(cmds) > 0 && cmds[0].Name() == "hgetall" && len(cmds[0].Args()) > 1 && cmds[0].Args()[1] == h.key {
			first := false
			h.readOnce.Do(func() { first = true; close(h.read) })
			if first {
				<-h.done
			}
		}
		return err
	}
}

// A link lost while a load of a session is in flight (its hash read, its
// copy not yet made) comes back with the session re-read like every copy
// whose channel was lost: what was published meanwhile is missed. Only
// the copies already made were re-read, so the new one kept, for as long
// as nobody changed it again, what the read before the loss saw.
func TestShardedChannelsLossDuringLoadReReads(t *testing.T) {
	cc := clusterRedis(t)
	prefix := testPrefix(t, cc)
	ccA := clusterRedis(t)
	a, b := replica(t, ccA, prefix), replica(t, cc, prefix)
	ctx := context.Background()
	sid := b.Initialize(t)
	key := redisKeys(prefix).session(sid)
	hold := newHoldRead(key)
	ccA.AddHook(hold)
	t.Cleanup(hold.free)

	got := make(chan error, 1)
	go func() {
		_, err := a.shared().Get(ctx, sid)
		got <- err
	}()
	select {
	case <-hold.read:
	case <-time.After(th.WaitLong):
		t.Fatal("A did not read the session")
	}
	// Changed after A's read, unpublished: as a change published while
	// A's channel is down, only a re-read tells A.
	if err := cc.HSet(ctx, key, "level", "critical").Err(); err != nil {
		t.Fatal(err)
	}
	bus := a.shared().shard
	bus.mu.Lock()
	l := bus.subs[sid].link
	bus.mu.Unlock()
	bus.fail(l, errors.New("link lost (test)"))
	testutil.Eventually(t, th.WaitLong, "A to subscribe again", func() bool {
		bus.mu.Lock()
		defer bus.mu.Unlock()
		s := bus.subs[sid]
		return s != nil && s.confirmed && !s.reread
	})
	r := bus.rounds.Load()
	testutil.Eventually(t, th.WaitLong, "a whole round of the bus", func() bool { return bus.rounds.Load() >= r+2 })

	hold.free()
	if err := <-got; err != nil {
		t.Fatalf("load: %v", err)
	}
	sa := a.copyOf(t, sid).s
	testutil.Eventually(t, th.WaitLong, "A to re-read the session", func() bool { return sa.LogLevel() == "critical" })
}

// Requests naming sessions nobody created, with well-formed ids, cost no
// more than their loads: the subscriptions are given back, and the
// links to the nodes are not dialled again and again. Each such request
// used to open a connection to a node and close it (the link closed as
// soon as it carried no channel), and reload the cluster's slot map.
func TestShardedChannelsUnknownIDsDialNoNewLinks(t *testing.T) {
	cc := clusterRedis(t)
	prefix := testPrefix(t, cc)
	g := newDialGate()
	a := replica(t, gatedCluster(t, g, clientName(t)), prefix)
	bus := a.shared().shard
	ctx := context.Background()
	get := func() {
		t.Helper()
		id, err := transport.NewSessionID()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.shared().Get(ctx, id); !errors.Is(err, transport.ErrSessionNotFound) {
			t.Fatalf("unknown session %s: %v", id, err)
		}
	}
	settled := func() bool {
		bus.mu.Lock()
		defer bus.mu.Unlock()
		return len(bus.subs) == 0 && len(bus.todo) == 0
	}
	// One round of requests for every node: links are made.
	for range 30 {
		get()
	}
	testutil.Eventually(t, th.WaitLong, "the subscriptions to be given back", settled)
	dials := g.count()
	for range 30 {
		get()
	}
	testutil.Eventually(t, th.WaitLong, "the subscriptions to be given back", settled)
	if n := g.count() - dials; n > 0 {
		t.Fatalf("30 requests for unknown sessions dialled %d new connections", n)
	}
}
