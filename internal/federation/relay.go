package federation

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// callRelay passes what an upstream sends during a proxied call to the
// client that made it (upstream.Relay): its progress under the client's
// own progress token, its log messages at or above the client's level,
// and its sampling, elicitation and roots requests, which the transport
// sends to the client wherever its stream is (another replica included)
// and whose answers it returns.
type callRelay struct{ call *handlers.ToolCall }

func (r callRelay) Progress(ctx context.Context, progress float64, total *float64, message string) {
	t := 0.0
	if total != nil {
		t = *total
	}
	// A progress notification that cannot be sent is not the call's
	// failure (the client may have gone).
	_ = r.call.Progress(ctx, progress, t, message)
}

func (r callRelay) Log(ctx context.Context, params json.RawMessage) {
	var p struct {
		Level protocol.LoggingLevel `json:"level"`
	}
	if json.Unmarshal(params, &p) != nil || !p.Level.Valid() {
		return
	}
	if p.Level.Severity() < r.call.Session.LogLevel().Severity() {
		return
	}
	_ = r.call.Peer.Notify(ctx, protocol.NotificationMessage, params)
}

func (r callRelay) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if err := askable(r.call.Session.ClientCapabilities(), method); err != nil {
		return nil, err
	}
	res, err := r.call.Peer.Request(ctx, method, params)
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return nil, perr // the client's own error answer, passed on
	}
	return res, err
}

// askable is the refusal, sent to the upstream as its request's error,
// of a request the gateway does not pass to a client with caps: one that
// is not the client's to answer, or that needs a capability the client
// did not declare (basic/lifecycle; basic/patterns/mrtr: it is not
// asked, and the server hears why). Nil when it may be asked.
func askable(caps protocol.ClientCapabilities, method string) *protocol.Error {
	capName, err := protocol.InputCapability(method)
	if err != nil {
		return protocol.Errorf(protocol.CodeMethodNotFound, "method not found: the gateway does not relay %s", method)
	}
	if !caps.Has(capName) {
		return protocol.Errorf(protocol.CodeMethodNotFound, "the client did not declare the capability %s needs", method)
	}
	return nil
}
