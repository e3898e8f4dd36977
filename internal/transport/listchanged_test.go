package transport

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// ListChanged tells every client session on its GET stream, as
// ToolsListChanged does.
func TestListChanged(t *testing.T) {
	h := newHarness(t)
	sid := h.initialize(t)
	sub := subscribeR(t, h.rClient(sid))
	sub.next(t) // priming
	for _, method := range []string{protocol.NotificationPromptsListChanged, protocol.NotificationResourcesListChange} {
		if n, err := h.tr.ListChanged(method); err != nil || n != 1 {
			t.Fatalf("ListChanged(%s) = %d, %v", method, n, err)
		}
		if _, m := sub.nextMessage(t); m.Method != method {
			t.Fatalf("got %s, want %s", m.Method, method)
		}
	}
}

// Subscribers names the sessions subscribed to a URI, in memory and, with
// shared sessions, whichever replica they subscribed or unsubscribed on.
func TestSubscribers(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	a, b := h.initialize(t), h.initialize(t)
	h.subscribe(t, a, "up://x")
	h.subscribe(t, b, "up://x", "up://y")
	ids, err := h.tr.Subscribers(ctx, "", "up://x")
	slices.Sort(ids)
	want := []string{a, b}
	slices.Sort(want)
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("subscribers of up://x = %v, %v; want %v", ids, err, want)
	}
	if ids, _ := h.tr.Subscribers(ctx, "other-tenant", "up://x"); len(ids) != 0 {
		t.Fatalf("another tenant's subscribers = %v", ids)
	}

	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	r1, r2 := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := r1.initialize(t)
	r1.subscribe(t, sid, "up://x")
	if ids, err := r2.tr.Subscribers(ctx, "", "up://x"); err != nil || !slices.Equal(ids, []string{sid}) {
		t.Fatalf("subscribers seen by the other replica = %v, %v", ids, err)
	}
	if r := r2.post(t, sid, rpc("u", "resources/unsubscribe", map[string]any{"uri": "up://x"})); r.Status != http.StatusOK {
		t.Fatalf("unsubscribe: %s", r)
	}
	if ids, err := r1.tr.Subscribers(ctx, "", "up://x"); err != nil || len(ids) != 0 {
		t.Fatalf("subscribers after an unsubscribe on the other replica = %v, %v", ids, err)
	}
}
