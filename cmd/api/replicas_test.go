package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

// Two replicas share PostgreSQL and Redis: a write through one is read
// fresh through the other (the invalidation crosses over Redis pub/sub),
// and when Redis dies every call keeps succeeding from PostgreSQL; when it
// returns, the replicas use it again without a restart (INV-MCP-XC-002).
func TestReplicasShareStateThroughRedisOutage(t *testing.T) {
	redis := redistest.Start(t)
	cfg := pgConfig(t)
	cfg.RedisURL = "redis://" + redis.Addr() + "/0"
	urlA, _ := runServer(t, cfg, io.Discard)
	urlB, _ := runServer(t, cfg, io.Discard)
	a, b := connect(t, urlA), connect(t, urlB)

	value := func(env envelopeDoc) int {
		var e struct{ Value int }
		_ = json.Unmarshal(env.Data, &e)
		return e.Value
	}
	// readFresh polls b until it sees want: the invalidation travels
	// asynchronously, within milliseconds while Redis is up.
	readFresh := func(want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			env := call(t, b, "memory_retrieve", map[string]any{"key": "shared"})
			mustSucceed(t, env, "memory_retrieve on replica B")
			if value(env) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica B still reads %d, want %d", value(env), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	mustSucceed(t, call(t, a, "memory_store", map[string]any{"key": "shared", "value": 1}), "store 1")
	readFresh(1)
	call(t, b, "memory_retrieve", map[string]any{"key": "shared"}) // now cached on B
	mustSucceed(t, call(t, a, "memory_store", map[string]any{"key": "shared", "value": 2}), "store 2")
	readFresh(2)

	redis.Stop()
	for i := 3; i <= 6; i++ {
		start := time.Now()
		mustSucceed(t, call(t, a, "memory_store", map[string]any{"key": "shared", "value": i}), fmt.Sprintf("store %d without Redis", i))
		env := call(t, a, "memory_retrieve", map[string]any{"key": "shared"})
		mustSucceed(t, env, "retrieve without Redis")
		if value(env) != i {
			t.Errorf("replica A reads %d without Redis, want its own write %d", value(env), i)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("a call without Redis took %s", d)
		}
	}

	redis.Restart()
	// Once Redis is back (and B has re-subscribed, dropping what it may
	// have missed), B reads A's last write.
	readFresh(6)
	mustSucceed(t, call(t, a, "memory_store", map[string]any{"key": "shared", "value": 7}), "store after Redis returned")
	readFresh(7)
}

// Two replicas share PostgreSQL and Redis. B, streaming from replica 1,
// subscribes to memory://team/plan; A changes it through replica 2: B is
// told once, through the Redis log of its client session, which replica 2
// writes (docs/adr/0016-resource-updates-logged-by-origin.md). C, subscribed on replica 2 itself, is told
// once too.
func TestReplicasFanOutResourceUpdates(t *testing.T) {
	srv := redistest.Start(t)
	cfg := pgConfig(t)
	cfg.RedisURL = "redis://" + srv.Addr() + "/0"
	url1, _ := runServer(t, cfg, io.Discard)
	url2, _ := runServer(t, cfg, io.Discard)

	var bGot, cGot notified
	b := connectWith(t, url1, &bGot)
	c := connectWith(t, url2, &cGot)
	a := connectWith(t, url2, nil)
	ctx := context.Background()
	const uri = "memory://team/plan"
	for _, s := range []*mcp.ClientSession{b, c} {
		if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	for i, v := range []string{"v1", "v2"} {
		res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "memory_store",
			Arguments: map[string]any{"namespace": "team", "key": "plan", "value": v}})
		if err != nil || res.IsError {
			t.Fatalf("memory_store %d on replica 2: %v %+v", i, err, res)
		}
		bGot.waitFor(t, uri) // exactly once each time, across replicas
		cGot.waitFor(t, uri) // exactly once each time, on the same replica
	}
}
