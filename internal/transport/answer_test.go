package transport

import (
	"context"
	"net/http"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// A handler that answers early (the runtime does, for a call over its
// timeout) gets its answer to the client while it still holds the request's
// goroutine; what it returns later is dropped. This is what lets a timed-out
// call be answered on time even if its handler ignores ctx
// (INV-MCP-TIMEOUT-001).
func TestPeerAnswer_EarlyWhileHandlerRuns(t *testing.T) {
	release := make(chan struct{})
	late := make(chan bool, 1)
	tool := handlers.Tool{Name: "early", Description: "answers early, then blocks ignoring ctx",
		Handler: func(_ context.Context, call *handlers.ToolCall) (*protocol.CallToolResult, error) {
			if !call.AnswerEarly(handlers.TextResult("early")) {
				t.Error("first early answer refused")
			}
			<-release
			late <- call.AnswerEarly(handlers.TextResult("second"))
			return handlers.TextResult("late"), nil
		}}
	for _, accept := range []string{"application/json", th.AcceptBoth} {
		t.Run(accept, func(t *testing.T) {
			h := newHarness(t)
			if err := h.Server.Tools().Add(tool); err != nil {
				t.Fatal(err)
			}
			sid := h.Initialize(t)
			pending := h.PostAsync(t, context.Background(), sid, th.ToolCall(5, "early", map[string]any{}, nil), "Accept", accept)
			r := th.WaitReply(t, pending) // arrives while the handler is blocked
			if r.Status != http.StatusOK {
				t.Fatalf("reply %s", r)
			}
			if text, _ := th.ToolText(t, th.ResultOf(t, r, "5")); text != "early" {
				t.Fatalf("got %q, want the early answer", text)
			}
			release <- struct{}{}
			if <-late {
				t.Error("a second answer was accepted")
			}
			h.ToolsListOK(t, sid)
		})
	}
}
