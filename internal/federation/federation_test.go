package federation

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// A failed proxied call maps to the envelope's codes by the kind of
// failure, and its context names the server and tool, the attempts and
// whether the deadline expired (INV-MCP-ECO-100).
func TestCallErrorCodes(t *testing.T) {
	u := upstream.Tool{Server: "a", Name: "search"}
	for _, tt := range []struct {
		name       string
		err        error
		code       response.Code
		attempts   any
		retryAfter int64
	}{
		{"connection timeout", &upstream.Error{Kind: upstream.ErrConnectionTimeout, Server: "a", Op: "connect", Timeout: true}, response.CodeConnectionTimeout, 1, 0},
		{"not found", &upstream.Error{Kind: upstream.ErrNotFound, Server: "a", Op: "tools/call search"}, response.CodeNotFound, 1, 0},
		{"disabled", &upstream.Error{Kind: upstream.ErrDisabled, Server: "a", Op: "tools/call search"}, response.CodeServiceUnavailable, 1, 0},
		{"unavailable", &upstream.Error{Kind: upstream.ErrUnavailable, Server: "a", Op: "connect", Attempts: 3, RetryAfter: 2 * time.Second},
			response.CodeServiceUnavailable, 3, 2000},
		{"other", fmt.Errorf("wrapped: %w", errors.New("broken pipe")), response.CodeInvocationFailed, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var e *response.Error
			if !errors.As(callError(u, tt.err), &e) {
				t.Fatalf("not a *response.Error")
			}
			if e.Code != tt.code || e.Context["server"] != "a" || e.Context["tool"] != "search" || e.Context["attempts"] != tt.attempts {
				t.Errorf("got %s %v, want %s with attempts %v", e.Code, e.Context, tt.code, tt.attempts)
			}
			if e.RetryAfterMs != tt.retryAfter {
				t.Errorf("retryAfterMs %d, want %d", e.RetryAfterMs, tt.retryAfter)
			}
		})
	}
}
