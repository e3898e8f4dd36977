package redisshare

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// listenOn opens a listen with filter on h and reads its
// acknowledgement: from then on, the replica hears its tenant's events.
func listenOn(t *testing.T, h *harness, id any, filter map[string]any) *th.SSEConn {
	t.Helper()
	params := map[string]any{"notifications": filter, "_meta": map[string]any{
		protocol.MetaProtocolVersion: protocol.Version20260728, protocol.MetaClientCapabilities: map[string]any{}}}
	c := h.PostSSE(t, "", th.RPC(id, protocol.MethodSubscriptionsListen, params),
		"Mcp-Protocol-Version", protocol.Version20260728, protocol.HeaderMethod, protocol.MethodSubscriptionsListen)
	if _, m := c.NextMessage(t); m.Method != protocol.NotificationSubscriptionsAcknowledged {
		t.Fatalf("first message %s, want the acknowledgement", m.Method)
	}
	return c
}

// heard reads n notifications from c: "<subscriptionId> <method> <uri>".
func heard(t *testing.T, c *th.SSEConn, n int) []string {
	t.Helper()
	var out []string
	for range n {
		ev, m := c.NextMessage(t)
		if ev.HasID {
			t.Errorf("a listen event with an id: %+v", ev)
		}
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
			URI  string                     `json:"uri"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", p.Meta[protocol.MetaSubscriptionID], m.Method, p.URI)))
	}
	slices.Sort(out)
	return out
}

// A change on any replica reaches the listen streams of every replica
// whose filter names it, with their subscription ids, and no other
// (docs/adr/0054-listen-across-replicas.md); on one node and on a
// cluster, where the events travel by sharded pub/sub.
func TestListenAcrossReplicas(t *testing.T) {
	onEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		prefix := testPrefix(t, rdb)
		r1, r2, r3 := replica(t, rdb, prefix), replica(t, rdb, prefix), replica(t, rdb, prefix)
		plan := listenOn(t, r1, "plan", map[string]any{
			"resourceSubscriptions": []string{"memory://team/plan", "stale://memory.*", "memory://sentinel"}, "resourcesListChanged": true})
		other := listenOn(t, r3, 9, map[string]any{"resourceSubscriptions": []string{"memory://team/other", "memory://sentinel"}})

		publish(t, "memory://team/plan", r2)
		publish(t, "stale://memory.*", r3)
		r2.tr.ResourcesListChanged(context.Background(), "")
		publish(t, "memory://unwatched", r2)
		for _, r := range []*harness{r1, r2, r3} {
			publish(t, "memory://sentinel", r)
		}
		want := []string{
			`"plan" notifications/resources/list_changed`,
			`"plan" notifications/resources/updated memory://sentinel`,
			`"plan" notifications/resources/updated memory://sentinel`,
			`"plan" notifications/resources/updated memory://sentinel`,
			`"plan" notifications/resources/updated memory://team/plan`,
			`"plan" notifications/resources/updated stale://memory.*`,
		}
		if got := heard(t, plan, len(want)); !slices.Equal(got, want) {
			t.Errorf("listener of the plan heard\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		// Each replica's events arrive in the order it published them, so
		// once its sentinel is in, nothing before it is still coming.
		want = []string{"9 notifications/resources/updated memory://sentinel", "9 notifications/resources/updated memory://sentinel", "9 notifications/resources/updated memory://sentinel"}
		if got := heard(t, other, 3); !slices.Equal(got, want) {
			t.Errorf("listener of another URI heard %q, want only the sentinels", got)
		}
		// A batch is counted once Redis has answered its pipeline, and
		// a subscriber can hear the batch before the publisher hears that.
		testutil.Eventually(t, th.WaitLong, "r2's publishes to be counted", func() bool {
			return r2.shared().Stats().ListenPublished > 0
		})
		if s := r2.shared().Stats(); s.ListenDropped != 0 {
			t.Errorf("stats %+v", s)
		}
	})
}

// A replica whose Redis does not answer publishes nothing and holds
// nothing up: the change is made, its own listeners hear of it, and the
// loss is counted (INV-MCP-XC-002).
func TestListenPublishWithoutRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	rdb := testRedis(t, addr)
	h := replica(t, rdb, "mcp-test:gone:")
	c := listenOn(t, h, 1, map[string]any{"resourceSubscriptions": []string{"memory://a/b"}})
	start := time.Now()
	// More than the publish queue holds, of a URI nobody here listens to
	// (a listener's own queue is smaller, and a client that lets it fill
	// is ended).
	for range listenQueueSize + 10 {
		if _, err := h.tr.ResourceUpdated("", "memory://a/other"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.tr.ResourceUpdated("", "memory://a/b"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%d updates took %v without Redis", listenQueueSize+11, d)
	}
	if got := heard(t, c, 1); got[0] != "1 notifications/resources/updated memory://a/b" {
		t.Errorf("own listener heard %q", got)
	}
	testutil.Eventually(t, th.WaitLong, "the lost events to be counted", func() bool {
		return h.shared().Stats().ListenDropped >= 10
	})
}

// The wire form of an event between replicas reads back as written, its
// cause too, and nothing else reads as an event. A replica of the
// previous version, which splits origin from event at the first space
// only, reads an event with a cause as one from another replica.
func TestListenEventEncoding(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	cause := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	for _, ev := range []transport.ListenEvent{
		{Tenant: "acme", Method: protocol.NotificationResourcesUpdated, URI: "memory://team/plan"},
		{Tenant: "a:b 1", Method: protocol.NotificationResourcesUpdated, URI: "stale://memory.*"},
		{Tenant: "acme", Method: protocol.NotificationResourcesListChange},
		{Tenant: "acme", Method: protocol.NotificationResourcesUpdated, URI: "memory://team/plan", Cause: cause},
	} {
		wire := encodeListenEvent("r1", ev)
		got, origin, ok := decodeListenEvent(wire)
		if !ok || origin != "r1" || got.Tenant != ev.Tenant || got.Method != ev.Method || got.URI != ev.URI || !got.Cause.Equal(ev.Cause) {
			t.Errorf("%+v read back as %+v from %q (%v)", ev, got, origin, ok)
		}
		if old, _, _ := strings.Cut(wire, " "); ev.Cause.IsValid() && old == "r1" {
			t.Errorf("%q: a previous version would take the event for its own", wire)
		}
	}
	for _, bad := range []string{"r1/00-zz-yy-01 u4:acmememory://x", "/ l1:0",
		"r1/01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 u4:acmememory://x",
		"r1/00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01 u4:acmememory://x"} {
		if got, _, ok := decodeListenEvent(bad); ok {
			t.Errorf("%q, a cause no replica writes, read as %+v", bad, got)
		}
	}
	for _, bad := range []string{"", "r1", "r1 ", "r1 x4:acme", "r1 u0:", "r1 u9:acme", "r1 uz:acme", "r1 u4:acme", "r1 l4:acmememory://x", "r1 u04:acmememory://x", "r1 u+4:acmememory://x"} {
		if ev, _, ok := decodeListenEvent(bad); ok {
			t.Errorf("%q read as %+v", bad, ev)
		}
	}
}

func FuzzDecodeListenEvent(f *testing.F) {
	f.Add(encodeListenEvent("r1", transport.ListenEvent{Tenant: "acme", Method: protocol.NotificationResourcesUpdated, URI: "memory://a/b"}))
	f.Add(encodeListenEvent("r1", transport.ListenEvent{Tenant: "t", Method: protocol.NotificationResourcesListChange}))
	f.Add("r1 u3:abc")
	f.Add("/ l1:0") // a malformed cause, found by the fuzzer
	f.Add("r1/00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 u4:acmememory://a/b")
	f.Fuzz(func(t *testing.T, s string) {
		ev, origin, ok := decodeListenEvent(s)
		if !ok {
			return
		}
		if ev.Tenant == "" {
			t.Fatalf("%q read with no tenant", s)
		}
		if again := encodeListenEvent(origin, ev); again != s {
			t.Fatalf("%q read as %+v, which writes %q", s, ev, again)
		}
	})
}

// Redis restarts under two replicas: what is published while it is down
// is lost (listen has no redelivery), the change itself is made and the
// origin's own listeners hear of it; once Redis answers again, each
// replica subscribes anew and changes cross again, without a restart.
func TestListenAcrossRedisRestart(t *testing.T) {
	srv := redistest.Start(t)
	rdb := testRedis(t, srv.Addr())
	prefix := testPrefix(t, rdb)
	r1, r2 := replica(t, rdb, prefix), replica(t, rdb, prefix)
	far := listenOn(t, r1, "far", map[string]any{"resourceSubscriptions": []string{"memory://a/b"}})
	near := listenOn(t, r2, "near", map[string]any{"resourceSubscriptions": []string{"memory://a/b"}})

	srv.Stop()
	publish(t, "memory://a/b", r2)
	if got := heard(t, near, 1); got[0] != `"near" notifications/resources/updated memory://a/b` {
		t.Errorf("the origin's listener heard %q", got)
	}
	srv.Restart()
	// The far replica's subscription comes back after its backoff; until
	// then a change is lost, so the writer repeats it until one arrives.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(th.WaitLong)
	for done := false; !done; {
		select {
		case ev := <-far.Frames:
			if !ev.HasData || ev.Data == "" {
				continue // a keep-alive
			}
			if m := th.ParseMessage(t, ev.Data); m.Method != protocol.NotificationResourcesUpdated {
				t.Errorf("the far listener got %s", ev.Data)
			}
			done = true
		case <-tick.C:
			publish(t, "memory://a/b", r2)
		case <-deadline:
			t.Fatal("no change crossed replicas after Redis came back")
		}
	}
}

// A listen channel that Redis itself unsubscribes — its slot moved to
// another master by a manual failover, and the old master says so with
// sunsubscribe while it stays up — is subscribed again on the new
// master: the listen keeps hearing the other replicas' events.
func TestListenChannelSurvivesManualFailover(t *testing.T) {
	cluster, cc := privateCluster(t)
	prefix := testPrefix(t, cc)
	r1, r2 := replica(t, cc, prefix), replica(t, cc, prefix)
	c := listenOn(t, r1, "l", map[string]any{"resourceSubscriptions": []string{"memory://a/b"}})
	ch := r1.shared().listen.names[listenShard(tenant.Default)]
	if n := shardSubscribers(t, cc, ch); n != 1 {
		t.Fatalf("%d subscribers of %s before the failover, want 1", n, ch)
	}
	// The old master dropped the subscription when the slot left it;
	// the new one may be made on either node of the shard (a replica
	// serves SSUBSCRIBE, and hears what its master publishes), so every
	// node is counted.
	cluster.Promote(ch)
	testutil.Eventually(t, th.WaitLong, "the listen channel to be subscribed again", func() bool {
		var subs atomic.Int64
		err := cc.ForEachShard(context.Background(), func(ctx context.Context, n *redis.Client) error {
			m, err := n.PubSubShardNumSub(ctx, ch).Result()
			subs.Add(m[ch])
			return err
		})
		return err == nil && subs.Load() == 1
	})
	publish(t, "memory://a/b", r2)
	if got := heard(t, c, 1); got[0] != `"l" notifications/resources/updated memory://a/b` {
		t.Fatalf("heard %q", got)
	}
}
