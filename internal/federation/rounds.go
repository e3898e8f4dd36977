package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// Rounds of a proxied call (basic/patterns/mrtr;
// docs/adr/0055-multi-round-trip-requests.md, "Upstreams"). A modern
// upstream that needs the client's input answers with an
// InputRequiredResult; its requests go to the client as they are, and its
// requestState, which the gateway cannot read, is wrapped in the state
// the gateway seals (handlers.SealedRounds): bound to the caller, the
// tenant and this tool call's params, so a client can neither read nor
// swap it, and any replica can continue the call. A legacy client is
// asked the same questions as real requests by the handlers' round loop,
// which runs this tool again with the answers.

// upstreamState marks the gateway's round state that wraps a modern
// upstream's round: the keys it asked for and its requestState.
const upstreamState = 'u'

// upstreamRound is the gateway's state of a proxied round, after the
// upstreamState byte. Server and Tool name the upstream tool that asked:
// the sealed state is bound to the request's params, whose name may be a
// bare one that, by the retry, names another server's tool; the answers
// and the state are the asking server's only (basic/patterns/mrtr).
type upstreamRound struct {
	Server string   `json:"v"`
	Tool   string   `json:"t"`
	Keys   []string `json:"k"`
	State  string   `json:"s,omitempty"`
}

// roundOf is what the call carries to the upstream: the client's
// capabilities, so that the upstream asks only for what the client
// declared, and on a retry the client's answers to what the upstream
// asked (others are ignored, basic/patterns/mrtr) and the upstream's
// state.
func roundOf(ctx context.Context, u upstream.Tool, call *handlers.ToolCall) (upstream.Round, error) {
	var round upstream.Round
	if call.Session != nil {
		caps, err := json.Marshal(call.Session.ClientCapabilities())
		if err != nil {
			return round, fmt.Errorf("encode the client's capabilities: %w", err)
		}
		round.ClientCapabilities = caps
	}
	in := handlers.InputOf(ctx)
	if len(in.State) == 0 {
		return round, nil
	}
	var prev upstreamRound
	if in.State[0] != upstreamState || json.Unmarshal(in.State[1:], &prev) != nil || prev.Server != u.Server || prev.Tool != u.Name {
		// Sealed by this deployment, for another kind of round or another
		// server's tool: not this call's.
		return round, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: requestState does not belong to this call; start it again without it")
	}
	round.RequestState = prev.State
	for _, k := range prev.Keys {
		if r, ok := in.Responses[k]; ok {
			if round.InputResponses == nil {
				round.InputResponses = make(map[string]json.RawMessage, len(prev.Keys))
			}
			round.InputResponses[k] = r
		}
	}
	return round, nil
}

// needInput is the upstream's InputRequiredResult as the round the
// handlers answer the client with.
func needInput(u upstream.Tool, in *upstream.InputRequired) (*handlers.NeedInput, error) {
	r := upstreamRound{Server: u.Server, Tool: u.Name, Keys: make([]string, 0, len(in.Requests)), State: in.State}
	for k := range in.Requests {
		r.Keys = append(r.Keys, k)
	}
	slices.Sort(r.Keys)
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode the round's state: %w", err)
	}
	return &handlers.NeedInput{Requests: in.Requests, State: append([]byte{upstreamState}, b...)}, nil
}
