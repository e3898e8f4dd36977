package main

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

// Two deployments share one Redis under their own redis.keyPrefix: each
// reads its own database through the cache tier, and a mutation in one
// never notifies the other's sessions, though tenant and URI are the
// same.
func TestDeploymentsShareRedisUnderOwnPrefixes(t *testing.T) {
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	redisURL := "redis://" + redistest.Shared(t) + "/0"
	deployment := func(name string) (string, *mcp.ClientSession) {
		cfg := pgConfig(t)
		cfg.RedisURL = redisURL
		cfg.Redis.KeyPrefix = "prefix-test-" + hex.EncodeToString(suffix[:]) + "-" + name + ":"
		// This test is about key prefixes, not Redis timeouts: on a busy
		// machine the default 50 ms answers initialize with 503.
		cfg.Redis.TimeoutMs = 2000
		url, _ := runServer(t, cfg, io.Discard)
		return url, connect(t, url)
	}
	_, a := deployment("a")
	urlB, b := deployment("b")
	store := func(cs *mcp.ClientSession, v int) {
		t.Helper()
		mustSucceed(t, call(t, cs, "memory_store", map[string]any{"namespace": "team", "key": "plan", "value": v}), "memory_store")
	}
	retrieve := func(cs *mcp.ClientSession) string {
		t.Helper()
		env := call(t, cs, "memory_retrieve", map[string]any{"namespace": "team", "key": "plan"})
		mustSucceed(t, env, "memory_retrieve")
		return string(env.Data)
	}

	// B's subscriber streams from B.
	sub := &rawClient{t: t, url: urlB}
	sub.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b-sub","version":"1"}}}`)
	sub.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	sub.post(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"memory://team/plan"}}`)
	events, cut := sub.stream("")
	defer cut()

	store(b, 2)
	store(a, 1)
	retrieve(a) // fills A's cache tiers
	if got := retrieve(a); !strings.Contains(got, `"value":1`) {
		t.Errorf("A reads %s, want its own value 1", got)
	}
	if got := retrieve(b); !strings.Contains(got, `"value":2`) {
		t.Errorf("B reads %s, want its own value 2", got)
	}

	// B's subscriber hears of B's store, and of nothing A does.
	deadline := time.After(5 * time.Second)
	for got := false; !got; {
		select {
		case ev := <-events:
			got = strings.Contains(ev[1], `"notifications/resources/updated"`)
		case <-deadline:
			t.Fatal("B's subscriber missed B's own update")
		}
	}
	// B's replica counted the update it wrote into its subscriber's log.
	resp, err := http.Get(strings.TrimSuffix(urlB, "/mcp") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"mcp_shared_session_updates_total ", "mcp_shared_session_notifications_total 1", "mcp_shared_session_dropped_total 0"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("B's /metrics lacks %q", want)
		}
	}

	store(a, 3)
	store(a, 4)
	quietFor := time.After(500 * time.Millisecond)
	for {
		select {
		case ev := <-events:
			if strings.Contains(ev[1], "memory://team/plan") {
				t.Fatalf("B's subscriber was notified of A's mutation: %s", ev[1])
			}
		case <-quietFor:
			return
		}
	}
}
