package scaleout

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// A master of the Redis Cluster is lost mid-run and its replica takes
// over (docs/adr/0044-one-redis-foundation.md): every client keeps being
// served meanwhile, on both replicas, and the client-session state the
// server acknowledged before — the sessions and their subscriptions — is
// still in Redis afterwards, as a replica that never saw the sessions
// finds.
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
	lost := cluster.FailOver("{" + clients[0].sid + "}")
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
}
