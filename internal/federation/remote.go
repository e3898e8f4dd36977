package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
)

// A held call lives on the replica where it started; the client's retry
// may land on any (docs/adr/0055-multi-round-trip-requests.md). The round
// state names the replica; a retry that lands elsewhere goes to it
// through the HeldRoute, which runs the round there and brings back its
// step.

// HeldRoute carries retries of held calls between the replicas of a
// deployment.
type HeldRoute interface {
	// Self is this replica's name, unique among the deployment's live
	// replicas, without dots.
	Self() string
	// Continue runs, on replica, the round of the held call id with the
	// client's answers, within ctx's deadline, and returns the step that
	// replica's handler encoded; nil and no error when no replica of
	// that name is there any more.
	Continue(ctx context.Context, replica, id string, answers map[string]json.RawMessage) ([]byte, error)
	// Serve hands the other replicas' Continue requests for this
	// replica's calls to handle, until the route is closed.
	Serve(handle func(ctx context.Context, id string, answers map[string]json.RawMessage) []byte)
}

// ServeHeld answers the other replicas' retries of this replica's held
// calls through the route; a no-op without one.
func (f *Federation) ServeHeld() {
	if f.route != nil {
		f.route.Serve(f.continueHere)
	}
}

// resume is a round of a retry naming a held call: here, or on the
// replica that holds it.
func (f *Federation) resume(ctx context.Context, call *handlers.ToolCall, in handlers.Input) (any, error) {
	replica, id, ok := parseHeld(in.State[1:])
	if !ok {
		return nil, errNoHeld
	}
	if replica == f.held.self || f.route == nil {
		return f.held.resume(ctx, id, call, in.Responses)
	}
	out, err := f.route.Continue(ctx, replica, id, in.Responses)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, response.NewError(response.CodeServiceUnavailable,
			"the replica holding this call did not answer (%v); retry with the same requestState, or start the call again without it", err)
	}
	if out == nil {
		return nil, errNoHeld
	}
	return decodeStep(out)
}

// continueHere is the round another replica sent for one of this
// replica's held calls.
func (f *Federation) continueHere(ctx context.Context, id string, answers map[string]json.RawMessage) []byte {
	return encodeStep(f.held.resume(ctx, id, nil, answers))
}

// remoteStep is a round's outcome on the wire between replicas: exactly
// one member is set.
type remoteStep struct {
	Result    *remoteResult       `json:"result,omitempty"`
	Need      *handlers.NeedInput `json:"need,omitempty"`
	RPCError  *protocol.Error     `json:"rpcError,omitempty"`
	ToolError *remoteToolError    `json:"toolError,omitempty"`
}

// remoteResult is a response.Passed on the wire; members it lacks stay
// absent (an absent structuredContent is not null).
type remoteResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	Meta              json.RawMessage   `json:"meta,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
	Attempts          int               `json:"attempts,omitempty"`
}

// remoteToolError is a response.Error on the wire.
type remoteToolError struct {
	Code         response.Code  `json:"code"`
	Message      string         `json:"message"`
	Context      map[string]any `json:"context,omitempty"`
	RetryAfterMs int64          `json:"retryAfterMs,omitempty"`
}

func encodeStep(v any, err error) []byte {
	var st remoteStep
	var need *handlers.NeedInput
	var perr *protocol.Error
	var rerr *response.Error
	switch {
	case errors.As(err, &need):
		st.Need = need
	case errors.As(err, &perr):
		st.RPCError = perr
	case errors.As(err, &rerr):
		st.ToolError = &remoteToolError{Code: rerr.Code, Message: rerr.Message, Context: rerr.Context, RetryAfterMs: rerr.RetryAfterMs}
	case err != nil:
		st.ToolError = &remoteToolError{Code: response.FromError(err).Code, Message: err.Error()}
	default:
		p, ok := v.(response.Passed)
		if !ok {
			st.ToolError = &remoteToolError{Code: response.CodeInternalError, Message: fmt.Sprintf("a held call ended with %T", v)}
			break
		}
		st.Result = &remoteResult{Content: p.Content, StructuredContent: p.StructuredContent, Meta: p.Meta, IsError: p.IsError, Attempts: p.Attempts}
	}
	b, err := json.Marshal(st)
	if err != nil {
		b, _ = json.Marshal(remoteStep{ToolError: &remoteToolError{Code: response.CodeInternalError, Message: "the held call's step could not be encoded"}})
	}
	return b
}

func decodeStep(b []byte) (any, error) {
	var st remoteStep
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("the replica holding the call answered %d bytes that are not a step: %w", len(b), err)
	}
	switch {
	case st.Result != nil:
		r := st.Result
		return response.Passed{Content: r.Content, StructuredContent: r.StructuredContent, Meta: r.Meta, IsError: r.IsError, Attempts: r.Attempts}, nil
	case st.Need != nil:
		return nil, st.Need
	case st.RPCError != nil:
		return nil, st.RPCError
	case st.ToolError != nil:
		e := response.NewError(st.ToolError.Code, "%s", st.ToolError.Message)
		e.Context = st.ToolError.Context
		if st.ToolError.RetryAfterMs > 0 {
			e = e.WithRetryAfter(time.Duration(st.ToolError.RetryAfterMs) * time.Millisecond)
		}
		return nil, e
	}
	return nil, errors.New("the replica holding the call answered an empty step")
}
