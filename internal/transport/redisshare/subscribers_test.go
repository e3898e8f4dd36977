package redisshare

import (
	"context"
	"net/http"
	"slices"
	"testing"

	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// Subscribers names the sessions subscribed to a URI whichever replica
// they subscribed or unsubscribed on (in memory: the transport's
// TestSubscribers).
func TestSubscribers(t *testing.T) {
	ctx := context.Background()
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	r1, r2 := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := r1.Initialize(t)
	r1.Subscribe(t, sid, "up://x")
	if ids, err := r2.tr.Subscribers(ctx, "", "up://x"); err != nil || !slices.Equal(ids, []string{sid}) {
		t.Fatalf("subscribers seen by the other replica = %v, %v", ids, err)
	}
	if r := r2.Post(t, sid, th.RPC("u", "resources/unsubscribe", map[string]any{"uri": "up://x"})); r.Status != http.StatusOK {
		t.Fatalf("unsubscribe: %s", r)
	}
	if ids, err := r1.tr.Subscribers(ctx, "", "up://x"); err != nil || len(ids) != 0 {
		t.Fatalf("subscribers after an unsubscribe on the other replica = %v, %v", ids, err)
	}
}
