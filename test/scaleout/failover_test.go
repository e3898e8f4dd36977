package scaleout

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// A master of the Redis Cluster is lost mid-run and its replica takes
// over (docs/adr/0044-one-redis-foundation.md): every client keeps being
// served meanwhile, on both replicas, and the client-session state the
// server acknowledged — the sessions and their subscriptions, those made
// while the master was being lost included — is in Redis afterwards, as a
// replica that never saw the sessions finds.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs server processes and a Redis Cluster")
	}
	cluster := redistest.StartCluster(t)
	env := []string{"REDIS_URL=" + cluster.URL(), "MCP_REDIS_MODE=cluster", "DATABASE_URL=" + pgtest.NewDatabase(t)}
	r1 := startReplica(t, "replica-1", serverBin, env)
	r2 := startReplica(t, "replica-2", serverBin, env)

	// Sessions enough that each master holds some (a session's keys
	// hash by its id).
	clients := make([]*client, 12)
	for i := range clients {
		c := &client{t: t}
		c.initialize(r1, fmt.Sprintf("agent-%d", i))
		c.must(r2, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		c.must(r2, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"`+planURI+`"}}`)
		clients[i] = c
	}

	clients[0].must(r1, storeCall(3, "plan", 0))

	// Every client calls a tool on each replica in turn while the master
	// holding the first session's keys is lost.
	var (
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		calls    atomic.Int64
		mu       sync.Mutex
		failures []string
		// failing: the master is lost and no replica has taken over
		// yet; each client then subscribes once more, to its own URI,
		// and acked records it if the server acknowledged that.
		failing atomic.Bool
		acked   = make([]atomic.Bool, len(clients))
	)
	for i, c := range clients {
		wg.Go(func() {
			rs := []*replica{r1, r2}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				r := rs[(i+n)%2]
				if failing.Load() && !acked[i].Load() {
					a, err := post(r.url, c.sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, 100+n, ownURI(i)))
					if err == nil && a.status == http.StatusOK && !strings.Contains(a.body, `"error":{`) {
						acked[i].Store(true)
					} else {
						mu.Lock()
						failures = append(failures, fmt.Sprintf("%s, session %d: subscribe: %d %v %s", r.name, i, a.status, err, short(a.body)))
						mu.Unlock()
					}
					continue
				}
				a, err := post(r.url, c.sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_retrieve","arguments":{"namespace":"team","key":"plan"}}}`, 100+n))
				calls.Add(1)
				if err != nil || a.status != http.StatusOK || strings.Contains(a.body, `"error":{`) || strings.Contains(a.body, `"isError":true`) {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s, session %d: %d %v %s", r.name, i, a.status, err, short(a.body)))
					mu.Unlock()
				}
			}
		})
	}
	// awaitCalls waits until n more calls were made.
	awaitCalls := func(n int64) {
		target := calls.Load() + n
		testutil.Eventually(t, 30*time.Second, fmt.Sprintf("%d more calls", n), func() bool { return calls.Load() >= target })
	}
	awaitCalls(100)
	before := calls.Load()
	lost := cluster.FailOver("{"+clients[0].sid+"}", func() { failing.Store(true) })
	awaitCalls(100) // and on, with the promoted replica serving

	close(stop)
	wg.Wait()
	t.Logf("master %s lost; %d calls during and after the failover (%d before it)", lost, calls.Load()-before, before)
	if len(failures) > 0 {
		t.Fatalf("%d of %d calls failed across the failover; first: %s", len(failures), calls.Load(), failures[0])
	}

	// A replica that never saw the sessions reads them, subscriptions
	// included, from the cluster: a change through replica 1 reaches each
	// client's stream on replica 3.
	r3 := startReplica(t, "replica-3", serverBin, env)
	streams := make([]sse, len(clients))
	for i, c := range clients {
		streams[i] = c.stream(r3, "")
	}
	clients[0].must(r1, storeCall(200, "plan", 1))
	for i := range clients {
		updates(t, streams[i], planURI, 1, 10*time.Second)
	}
	// A subscription whose write met the lost master is replayed once
	// the slot is served again; the update is made once it is in Redis
	// (a mutation reaches the subscribers Redis knows of at that moment):
	// in the session's hash and in the index by URI the mutation reads,
	// which is in another slot, so one may land before the other.
	rdb, err := redis.ParseClusterURL(cluster.URL())
	if err != nil {
		t.Fatal(err)
	}
	cc := redis.NewClusterClient(rdb)
	t.Cleanup(func() { _ = cc.Close() })
	for i, c := range clients {
		if !acked[i].Load() {
			t.Fatalf("session %d made no subscription during the failover", i)
		}
		testutil.Eventually(t, 30*time.Second, fmt.Sprintf("session %d's subscription to reach Redis", i), func() bool {
			v, err := cc.HGet(t.Context(), "mcp-runtime:cs:{"+c.sid+"}", "s:"+ownURI(i)).Result()
			indexed, ierr := cc.SIsMember(t.Context(), "mcp-runtime:subs:7:default:"+ownURI(i), c.sid).Result()
			return err == nil && v == "1" && ierr == nil && indexed
		})
		clients[0].must(r1, storeCall(300+i, fmt.Sprintf("own-%d", i), 1))
		updates(t, streams[i], ownURI(i), 1, 10*time.Second)
	}
}

// ownURI is the resource client i subscribes to during the failover.
func ownURI(i int) string { return fmt.Sprintf("memory://team/own-%d", i) }
