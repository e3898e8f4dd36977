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
	capName, err := protocol.InputCapability(method)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeMethodNotFound, "method not found: the gateway does not relay %s", method)
	}
	if !r.call.Session.ClientCapabilities().Has(capName) {
		// basic/lifecycle: the client did not declare the capability, so
		// it is not asked; the server hears why.
		return nil, protocol.Errorf(protocol.CodeMethodNotFound, "the client did not declare the capability %s needs", method)
	}
	res, err := r.call.Peer.Request(ctx, method, params)
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return nil, perr // the client's own error answer, passed on
	}
	return res, err
}
