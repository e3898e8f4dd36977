package transport

import (
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// TestToolsListChanged: every client session gets the notification on its
// GET stream, a connected one at once and one that connects later from
// the stream's log.
func TestToolsListChanged(t *testing.T) {
	h := newHarness(t)
	live, later := h.Initialize(t), h.Initialize(t)
	sub := th.SubscribeR(t, h.RClient(live))
	if ev := sub.Next(t); ev.ID != "g-0" {
		t.Fatalf("first event %+v, want the priming event", ev)
	}
	n, err := h.tr.ToolsListChanged()
	if err != nil || n != 2 {
		t.Fatalf("ToolsListChanged = %d, %v; want 2 sessions", n, err)
	}
	for name, s := range map[string]*th.RSub{"connected": sub, "connecting later": th.SubscribeR(t, h.RClient(later))} {
		if name == "connecting later" {
			s.Next(t) // its priming event
		}
		_, m := s.NextMessage(t)
		if m.Method != protocol.NotificationToolsListChanged {
			t.Fatalf("%s session got %s, want %s", name, m.Method, protocol.NotificationToolsListChanged)
		}
	}
}
