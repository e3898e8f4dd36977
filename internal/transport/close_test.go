package transport

import (
	"context"
	"net/http"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// Close ends every session: open GET streams end, running handlers (detached
// and inline) are cancelled and finish, and nothing is left running.
func TestClose_EndsEverything(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	h := newHarness(t)
	a := h.Initialize(t)
	b := h.Initialize(t)

	getA := h.OpenGET(t, a)
	getA.Next(t)
	subB := th.SubscribeR(t, h.RClient(b))
	subB.Next(t) // priming

	// A detached (LongRunning) tools/call with an SSE response, and an
	// inline one.
	blkA := h.Fx.Block("close-a")
	psA := h.PostSSE(t, a, th.ToolCall(1, "block_long", map[string]any{"key": "close-a"}, "pt"))
	psA.NextMessage(t)
	blkA.WaitStarted(t)
	blkB := h.Fx.Block("close-b")
	pendingB := h.PostAsync(t, context.Background(), b, th.ToolCall(2, "block", map[string]any{"key": "close-b"}, nil), "Accept", "application/json")
	blkB.WaitStarted(t)

	ctx, cancel := context.WithTimeout(context.Background(), th.WaitLong)
	defer cancel()
	if err := h.tr.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Close waited for the detached handler; the inline one was cancelled.
	select {
	case <-blkA.Finished:
	default:
		t.Error("Close returned before the detached handler finished")
	}
	th.WaitChan(t, blkA.Cancelled, "the detached handler to be cancelled")
	th.WaitChan(t, blkB.Cancelled, "the inline handler to be cancelled")
	getA.WaitEnd(t)
	psA.WaitEnd(t)
	select {
	case err := <-subB.Done:
		subB.Done <- err
	case <-subB.Events:
		t.Error("r3labs GET stream got an event after Close")
	case <-th.WaitAfter():
		t.Error("r3labs GET stream did not end after Close")
	}
	if r := th.WaitReply(t, pendingB); r.Status != http.StatusOK {
		t.Errorf("inline call after Close: %s", r)
	}
	if n := h.tr.Sessions().Len(); n != 0 {
		t.Errorf("sessions = %d after Close, want 0", n)
	}
	th.WantRPCError(t, h.Post(t, a, th.RPC(3, "tools/list", nil)), http.StatusNotFound, "3", protocol.CodeInvalidRequest)
	// No new session after Close: the idle sweeper has stopped, so nothing
	// would ever reap it.
	if r := h.Post(t, "", th.InitBody(protocol.LatestVersion, nil)); r.Status != http.StatusServiceUnavailable {
		t.Errorf("initialize after Close: %s, want 503", r)
	}

	// Shut the rest down and check that nothing leaked.
	getA.Close()
	psA.Close()
	subB.Stop(t)
	h.Close()
	goleak.VerifyNone(t, ignore)
}
