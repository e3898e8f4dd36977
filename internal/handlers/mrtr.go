package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Multi-round-trip requests (basic/patterns/mrtr;
// docs/adr/0055-multi-round-trip-requests.md). A tool, prompt or resource
// written in this style asks for the client's input by returning a
// *NeedInput, and finds the answers of the previous round with InputOf.
// The server then answers a client of the 2026-07-28 era with an
// InputRequiredResult, its state sealed (StateSealer), and the client
// retries; a client session of the legacy era is asked the same questions
// as real server-to-client requests, and the handler runs again with the
// answers, in the same call. So a handler is written once for both eras.

// NeedInput is what a handler returns, as its error, to ask the client
// for input before it answers: requests by key, and the state it wants
// back with the answers (nil: none).
type NeedInput struct {
	Requests map[string]protocol.InputRequest
	State    []byte
}

func (e *NeedInput) Error() string {
	return fmt.Sprintf("the request needs %d answers from the client", len(e.Requests))
}

// InputNeeded marks the error as a round, not a failure, to the layers it
// passes through (the guardrails' pipeline).
func (*NeedInput) InputNeeded() bool { return true }

// Input is what the client answered in the rounds so far: its results by
// the keys the handler chose, and the handler's state from the last
// round. Keys the handler did not ask for may be present; it ignores
// them (basic/patterns/mrtr).
type Input struct {
	Responses map[string]json.RawMessage
	State     []byte
}

type inputKey struct{}

// InputOf returns the input gathered for the request of ctx; empty on a
// first round.
func InputOf(ctx context.Context) Input {
	in, _ := ctx.Value(inputKey{}).(Input)
	return in
}

// StateSealer seals the state of a round for the client to carry, bound
// to the request (its principal and tenant, from ctx, its method and
// params), and opens it on the retry, on any replica that holds the key.
// Open's error is the client's: tampered, foreign or expired state.
type StateSealer interface {
	Seal(ctx context.Context, method string, params json.RawMessage, state []byte) (string, error)
	Open(ctx context.Context, method string, params json.RawMessage, token string) ([]byte, error)
}

// SetStateSealer installs the sealer of round state; without one a
// handler asking for input with state fails.
func (s *Server) SetStateSealer(sealer StateSealer) { s.sealer = sealer }

// maxRounds bounds the rounds of one legacy call: a handler that keeps
// asking is failed rather than looped forever.
const maxRounds = 10

// rounds runs run as a multi-round request: with the input of the
// request's retry (modern) or of the client's answers (legacy). run's
// *NeedInput becomes an InputRequiredResult for a modern client, or the
// requests sent to a legacy one.
func (s *Server) rounds(ctx context.Context, req *Request, run func(context.Context) (any, error)) (any, error) {
	modern := req.Session != nil && protocol.IsModernVersion(req.Session.ProtocolVersion())
	var round protocol.Round
	if modern && req.Retry {
		// Only this era retries with answers and state; a legacy client
		// is asked within the call, and such members of its params mean
		// nothing.
		var perr *protocol.Error
		if round, perr = protocol.DecodeRound(req.Params); perr != nil {
			return nil, perr
		}
	}
	in := Input{Responses: round.InputResponses}
	if round.RequestState != nil {
		if s.sealer == nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: requestState was not issued by this server")
		}
		state, err := s.sealer.Open(ctx, req.Method, req.Params, *round.RequestState)
		if err != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %s; start the request again without it", logging.Field(err.Error()))
		}
		in.State = state
	}
	for n := 0; ; n++ {
		rctx := ctx
		if in.Responses != nil || in.State != nil {
			rctx = context.WithValue(ctx, inputKey{}, in)
		}
		res, err := run(rctx)
		var need *NeedInput
		if !errors.As(err, &need) {
			return res, err
		}
		if err := s.checkInput(req, need); err != nil {
			return nil, err
		}
		if modern {
			return s.inputRequired(ctx, req, need)
		}
		if n+1 >= maxRounds {
			return nil, fmt.Errorf("still asking the client after %d rounds", maxRounds)
		}
		if in, err = ask(ctx, req, need); err != nil {
			return nil, err
		}
	}
}

// checkInput refuses requests that are not the client's to answer, and,
// since a server must not ask for what the client did not declare
// (basic/patterns/mrtr), those of a capability the client lacks.
func (s *Server) checkInput(req *Request, need *NeedInput) error {
	if len(need.Requests) == 0 && need.State == nil {
		return fmt.Errorf("a handler asked for input without asking anything")
	}
	var caps protocol.ClientCapabilities
	if req.Session != nil {
		caps = req.Session.ClientCapabilities()
	}
	var missing []string
	for key, r := range need.Requests {
		capName, err := protocol.InputCapability(r.Method)
		if err != nil {
			return fmt.Errorf("input %q: %w", key, err)
		}
		if !caps.Has(capName) && !slices.Contains(missing, capName) {
			missing = append(missing, capName)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return protocol.Errorf(protocol.CodeInvalidParams, "invalid params: the request needs the client's %v, which it did not declare", missing).
			WithData(map[string]any{"requiredCapabilities": missing})
	}
	return nil
}

// inputRequired is the answer of a round to a modern client.
func (s *Server) inputRequired(ctx context.Context, req *Request, need *NeedInput) (*protocol.InputRequiredResult, error) {
	res := &protocol.InputRequiredResult{InputRequests: need.Requests}
	if need.State != nil {
		if s.sealer == nil {
			return nil, errors.New("round state without a sealer: SetStateSealer was not called")
		}
		tok, err := s.sealer.Seal(ctx, req.Method, req.Params, need.State)
		if err != nil {
			return nil, fmt.Errorf("seal round state: %w", err)
		}
		res.RequestState = tok
	}
	return res, nil
}

// ask sends a legacy client the round's requests, in key order, and
// returns its answers as the next round's input.
func ask(ctx context.Context, req *Request, need *NeedInput) (Input, error) {
	if req.Peer == nil {
		return Input{}, errors.New("the request needs the client's input, and has no connection to ask on")
	}
	in := Input{Responses: make(map[string]json.RawMessage, len(need.Requests)), State: need.State}
	keys := make([]string, 0, len(need.Requests))
	for k := range need.Requests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		r := need.Requests[k]
		var params any
		if len(r.Params) > 0 {
			params = r.Params
		}
		raw, err := req.Peer.Request(ctx, r.Method, params)
		if err != nil {
			return Input{}, fmt.Errorf("%s for %q: %w", r.Method, k, err)
		}
		in.Responses[k] = raw
	}
	return in, nil
}
