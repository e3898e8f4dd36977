package transport

import (
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// TestToolsListChanged: every client session gets the notification on its
// GET stream, a connected one at once and one that connects later from
// the stream's log.
func TestToolsListChanged(t *testing.T) {
	h := newHarness(t)
	live, later := h.initialize(t), h.initialize(t)
	sub := subscribeR(t, h.rClient(live))
	if ev := sub.next(t); ev.ID != "g-0" {
		t.Fatalf("first event %+v, want the priming event", ev)
	}
	n, err := h.tr.ToolsListChanged()
	if err != nil || n != 2 {
		t.Fatalf("ToolsListChanged = %d, %v; want 2 sessions", n, err)
	}
	for name, s := range map[string]*rSub{"connected": sub, "connecting later": subscribeR(t, h.rClient(later))} {
		if name == "connecting later" {
			s.next(t) // its priming event
		}
		_, m := s.nextMessage(t)
		if m.Method != protocol.NotificationToolsListChanged {
			t.Fatalf("%s session got %s, want %s", name, m.Method, protocol.NotificationToolsListChanged)
		}
	}
}
