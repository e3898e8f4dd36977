package transport

import (
	"context"
	"net/http"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Close ends every session: open GET streams end, running handlers (detached
// and inline) are cancelled and finish, and nothing is left running.
func TestClose_EndsEverything(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	h := newHarness(t)
	a := h.initialize(t)
	b := h.initialize(t)

	getA := h.openGET(t, a)
	getA.next(t)
	subB := subscribeR(t, h.rClient(b))
	subB.next(t) // priming

	// A detached (LongRunning) tools/call with an SSE response, and an
	// inline one.
	blkA := h.fx.block("close-a")
	psA := h.postSSE(t, a, toolCall(1, "block_long", map[string]any{"key": "close-a"}, "pt"))
	psA.nextMessage(t)
	blkA.waitStarted(t)
	blkB := h.fx.block("close-b")
	pendingB := h.postAsync(t, context.Background(), b, toolCall(2, "block", map[string]any{"key": "close-b"}, nil), "Accept", "application/json")
	blkB.waitStarted(t)

	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := h.tr.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Close waited for the detached handler; the inline one was cancelled.
	select {
	case <-blkA.finished:
	default:
		t.Error("Close returned before the detached handler finished")
	}
	waitChan(t, blkA.cancelled, "the detached handler to be cancelled")
	waitChan(t, blkB.cancelled, "the inline handler to be cancelled")
	getA.waitEnd(t)
	psA.waitEnd(t)
	select {
	case err := <-subB.done:
		subB.done <- err
	case <-subB.events:
		t.Error("r3labs GET stream got an event after Close")
	case <-waitAfter():
		t.Error("r3labs GET stream did not end after Close")
	}
	if r := waitReply(t, pendingB); r.Status != http.StatusOK {
		t.Errorf("inline call after Close: %s", r)
	}
	if n := h.tr.Sessions().Len(); n != 0 {
		t.Errorf("sessions = %d after Close, want 0", n)
	}
	wantRPCError(t, h.post(t, a, rpc(3, "tools/list", nil)), http.StatusNotFound, "3", protocol.CodeInvalidRequest)
	// No new session after Close: the idle sweeper has stopped, so nothing
	// would ever reap it.
	if r := h.post(t, "", initBody(protocol.LatestVersion, nil)); r.Status != http.StatusServiceUnavailable {
		t.Errorf("initialize after Close: %s, want 503", r)
	}

	// Shut the rest down and check that nothing leaked.
	getA.close()
	psA.close()
	subB.stop(t)
	h.close()
	goleak.VerifyNone(t, ignore)
}
