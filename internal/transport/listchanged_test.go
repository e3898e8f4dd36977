package transport

import (
	"context"
	"slices"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// ListChanged tells every client session on its GET stream, as
// ToolsListChanged does.
func TestListChanged(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	sub := th.SubscribeR(t, h.RClient(sid))
	sub.Next(t) // priming
	for _, method := range []string{protocol.NotificationPromptsListChanged, protocol.NotificationResourcesListChange} {
		if n, err := h.tr.ListChanged(method); err != nil || n != 1 {
			t.Fatalf("ListChanged(%s) = %d, %v", method, n, err)
		}
		if _, m := sub.NextMessage(t); m.Method != method {
			t.Fatalf("got %s, want %s", m.Method, method)
		}
	}
}

// Subscribers names the sessions subscribed to a URI, in memory (a
// shared store's tests check it across replicas).
func TestSubscribers(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	a, b := h.Initialize(t), h.Initialize(t)
	h.Subscribe(t, a, "up://x")
	h.Subscribe(t, b, "up://x", "up://y")
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
}
