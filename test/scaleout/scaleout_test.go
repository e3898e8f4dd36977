package scaleout

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

const planURI = "memory://team/plan"

// Three cmd/api processes share one PostgreSQL database and one Redis,
// a single node or a Redis Cluster; clients send their requests to any of
// them (docs/adr/0015-shared-client-sessions.md).
func TestThreeReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three server processes")
	}
	onEachRedis(t, "", threeReplicas)
}

// onEachRedis runs test once on a private single Redis node and once on
// the shared test cluster, with the environment of replicas using it and
// config, YAML of more settings ("" for none).
func onEachRedis(t *testing.T, config string, test func(t *testing.T, env []string)) {
	withConfig := func(t *testing.T, yaml string) string {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return "MCP_CONFIG=" + path
	}
	t.Run("single node", func(t *testing.T) {
		test(t, []string{"REDIS_URL=redis://" + redistest.Start(t).Addr() + "/0", withConfig(t, config)})
	})
	t.Run("cluster", func(t *testing.T) {
		// The cluster is shared with other tests: the replicas keep
		// their keys under a prefix of their own.
		prefix := fmt.Sprintf("scaleout-%d:", time.Now().UnixNano())
		yaml := "redis:\n  keyPrefix: \"" + prefix + "\"\n" + config
		test(t, []string{"REDIS_URL=" + redistest.ClusterURL(t), "MCP_REDIS_MODE=cluster", withConfig(t, yaml)})
	})
}

// The per-principal session cap holds across replicas, the count kept in
// Redis (docs/adr/0027-session-caps.md): with a cap of
// three, the fourth initialize is refused on whichever replica it lands,
// and ending a session makes room on another.
func TestSessionCapAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs server processes")
	}
	onEachRedis(t, "transport:\n  maxSessionsPerPrincipal: 3\n", func(t *testing.T, env []string) {
		env = append(env, "DATABASE_URL="+pgtest.NewDatabase(t))
		rs := []*replica{startReplica(t, "replica-1", serverBin, env), startReplica(t, "replica-2", serverBin, env)}
		const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"capped","version":"1"}}}`
		var held []*client
		for i := range 3 {
			c := &client{t: t}
			c.initialize(rs[i%2], fmt.Sprintf("agent-%d", i))
			held = append(held, c)
		}
		for _, r := range rs {
			if a := (&client{t: t}).do(r, init); a.status != http.StatusTooManyRequests {
				t.Fatalf("a fourth initialize on %s: %d %s, want 429", r.name, a.status, short(a.body))
			}
		}
		del, _ := http.NewRequest(http.MethodDelete, rs[0].url, nil)
		del.Header.Set("Mcp-Session-Id", held[1].sid) // made on replica 2
		del.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(del)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
			t.Fatalf("DELETE on replica 1: %d", resp.StatusCode)
		}
		(&client{t: t}).initialize(rs[1], "after the DELETE")
	})
}

// threeReplicas is TestThreeReplicas on the Redis env names.
func threeReplicas(t *testing.T, env []string) {
	bin := serverBin // built once by TestMain
	env = append(env, "DATABASE_URL="+pgtest.NewDatabase(t))
	r1 := startReplica(t, "replica-1", bin, env)
	r2 := startReplica(t, "replica-2", bin, env)
	r3 := startReplica(t, "replica-3", bin, env)
	all := []*replica{r1, r2, r3}

	// Agent A: every request to the next replica in turn.
	a := &client{t: t, rr: all}
	a.initialize(r1, "agent-a")
	a.n = 1
	a.next(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if body := a.next(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); !strings.Contains(body, `"memory_store"`) {
		t.Fatalf("tools/list: %s", body)
	}
	for i := range 3 {
		a.next(storeCall(10+i, "round-robin", i))
	}
	a.next(`{"jsonrpc":"2.0","id":20,"method":"resources/subscribe","params":{"uri":"memory://team/round-robin"}}`)
	if body := a.next(`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"memory_retrieve","arguments":{"namespace":"team","key":"round-robin"}}}`); !strings.Contains(body, `\"value\":2`) {
		t.Fatalf("memory_retrieve after round-robin stores: %s", body)
	}

	// Agent B streams from replica 1 and hears of A's mutations on
	// replica 2.
	b := &client{t: t}
	b.initialize(r3, "agent-b")
	b.must(r2, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	b.must(r2, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"`+planURI+`"}}`)
	live := b.stream(r1, "")
	a.must(r2, storeCall(30, "plan", 1))
	first := updates(t, live, planURI, 1, 5*time.Second)
	lastID := first[0][0]
	if lastID == "" {
		t.Fatal("the update carries no event id to resume from")
	}

	// Replica 1 dies mid-stream; A mutates meanwhile; B resumes on
	// replica 3 and gets each missed update exactly once.
	r1.kill()
	for range live.events { // the stream ends with the process
	}
	a.must(r2, storeCall(31, "plan", 2))
	a.must(r3, storeCall(32, "plan", 3))
	resumed := b.stream(r3, lastID)
	missed := updates(t, resumed, planURI, 2, 5*time.Second)
	if missed[0][0] == missed[1][0] || missed[0][0] == lastID || missed[1][0] == lastID {
		t.Errorf("event ids repeat: %s, then %s and %s", lastID, missed[0][0], missed[1][0])
	}
	quiet(t, resumed, planURI, 500*time.Millisecond)
	// And live again on replica 3, from a mutation on replica 2.
	a.must(r2, storeCall(33, "plan", 4))
	updates(t, resumed, planURI, 1, 5*time.Second)
	resumed.cut()

	// DELETE on replica 2 ends B's session everywhere: on replica 3, and
	// on a replica 1 that is started again.
	del, _ := http.NewRequest(http.MethodDelete, r2.url, nil)
	del.Header.Set("Mcp-Session-Id", b.sid)
	del.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE on replica 2: %d", resp.StatusCode)
	}
	r1 = startReplica(t, "replica-1 (restarted)", bin, env)
	ping := `{"jsonrpc":"2.0","id":40,"method":"ping"}`
	for _, r := range []*replica{r1, r3} {
		// The other replicas learn of the delete through Redis, with no
		// signal a test outside their processes could wait on.
		testutil.Eventually(t, 5*time.Second, r.name+" to answer 404 for the deleted session", func() bool {
			return b.do(r, ping).status == http.StatusNotFound
		})
	}
	// A's session is untouched.
	a.rr = []*replica{r1, r2, r3}
	for i := range 3 {
		a.next(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 50+i))
	}
}

// Redis stops mid-test and comes back empty
// (docs/adr/0026-redis-data-loss.md): sessions a replica knows keep
// working, one it cannot resolve gets 503 with Retry-After (never 404),
// and everything works again once Redis is back.
func TestRedisOutageAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs server processes")
	}
	bin := serverBin // built once by TestMain
	redis := redistest.Start(t)
	env := []string{"DATABASE_URL=" + pgtest.NewDatabase(t), "REDIS_URL=redis://" + redis.Addr() + "/0"}
	r1 := startReplica(t, "replica-1", bin, env)
	r2 := startReplica(t, "replica-2", bin, env)

	known := &client{t: t}
	known.initialize(r1, "known")
	known.must(r2, `{"jsonrpc":"2.0","method":"notifications/initialized"}`) // r2 now holds a copy
	stranger := &client{t: t}
	stranger.initialize(r1, "stranger") // r2 has never seen it

	redis.Stop()
	for _, r := range []*replica{r1, r2} {
		known.must(r, storeCall(2, "outage", 1))
	}
	got := stranger.do(r2, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if got.status != http.StatusServiceUnavailable || got.header.Get("Retry-After") == "" {
		t.Fatalf("unresolvable session during the outage: %d, Retry-After %q, want 503 with Retry-After", got.status, got.header.Get("Retry-After"))
	}

	redis.Restart()
	// The replicas find Redis back by using it, with no signal a test
	// outside their processes could wait on.
	testutil.Eventually(t, 15*time.Second, "the session to be served once Redis returned", func() bool {
		got := stranger.do(r2, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		if got.status == http.StatusNotFound {
			t.Fatalf("a live session answered 404 after Redis came back empty: %s", got.body)
		}
		return got.status == http.StatusOK
	})
	if body := known.must(r2, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"memory_retrieve","arguments":{"namespace":"team","key":"outage"}}}`); !strings.Contains(body, `\"value\":1`) {
		t.Errorf("the write acknowledged during the outage: %s", body)
	}
}
