package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/requeststate"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// roundsClient is a client session of either era declaring caps.
type roundsClient struct {
	fakeSession
	version string
	caps    protocol.ClientCapabilities
}

func (c *roundsClient) ProtocolVersion() string                         { return c.version }
func (c *roundsClient) ClientCapabilities() protocol.ClientCapabilities { return c.caps }

// askName is a tool written once in the multi-round style: it asks for a
// name with state "asked", and greets once it has both.
var askName = Tool{Name: "greet", Description: "Asks for a name.", InputSchema: json.RawMessage(`{"type":"object"}`), Handler: func(ctx context.Context, _ *ToolCall) (*protocol.CallToolResult, error) {
	in := InputOf(ctx)
	var r struct {
		Content struct{ Name string } `json:"content"`
	}
	if raw, ok := in.Responses["who"]; ok && string(in.State) == "asked" && json.Unmarshal(raw, &r) == nil && r.Content.Name != "" {
		return &protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent("Hello, " + r.Content.Name)}}, nil
	}
	return nil, &NeedInput{State: []byte("asked"), Requests: map[string]protocol.InputRequest{
		"who": {Method: protocol.MethodElicitationCreate, Params: json.RawMessage(`{"message":"Your name?","requestedSchema":{"type":"object"}}`)}}}
}}

// roundsServer is a server with askName, sealing with key (and opening
// with old keys too), on clock now.
func roundsServer(t *testing.T, now func() time.Time, key []byte, old ...[]byte) *Server {
	t.Helper()
	sealer, err := requeststate.New(now, key, old...)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewToolRegistry("_")
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Add(askName); err != nil {
		t.Fatal(err)
	}
	s := NewServer(Options{Name: "rounds", Version: "1"}, reg)
	s.SetStateSealer(NewSealedRounds(sealer, time.Minute, func(ctx context.Context) string {
		p, _ := ctx.Value(principalKey{}).(string)
		return p
	}))
	return s
}

type principalKey struct{}

func call(t *testing.T, s *Server, ctx context.Context, sess Session, peer Peer, params string) (any, error) {
	t.Helper()
	req := &Request{Method: protocol.MethodToolsCall, ID: protocol.IntID(1), Session: sess, Peer: peer, Params: json.RawMessage(params),
		Retry: strings.Contains(params, "inputResponses") || strings.Contains(params, "requestState")}
	p := s.Prepare(req)
	res, _, err := s.Run(ctx, req, &p)
	return res, err
}

func key(b byte) []byte { return []byte(strings.Repeat(string(rune('a'+b)), requeststate.MinKeyBytes)) }

// A round continues on any server that holds the key (a replica), also
// after the key was rotated there; each retry lands on another one. The
// state is bound to its request: another principal, tenant or set of
// arguments, an altered or expired state, is refused.
func TestRoundsAcrossServers(t *testing.T) {
	clock := time.Unix(1_800_000_000, 0)
	now := func() time.Time { return clock }
	a := roundsServer(t, now, key(0))
	b := roundsServer(t, now, key(1), key(0)) // rotated: seals with the new key, opens the old
	modern := &roundsClient{version: protocol.Version20260728, caps: protocol.ClientCapabilities{Elicitation: json.RawMessage(`{}`)}}
	ctx := context.WithValue(tenant.With(context.Background(), "acme"), principalKey{}, "alice")

	res, err := call(t, a, ctx, modern, nil, `{"name":"greet","arguments":{}}`)
	ir, ok := res.(*protocol.InputRequiredResult)
	if err != nil || !ok || ir.RequestState == "" || ir.InputRequests["who"].Method != protocol.MethodElicitationCreate {
		t.Fatalf("first round: %#v %v", res, err)
	}
	retry := func(state, args string) string {
		return `{"name":"greet","arguments":` + args + `,"inputResponses":{"who":{"action":"accept","content":{"name":"Ann"}},"extra":{"ignored":true}},"requestState":"` + state + `","_meta":{"any":"thing"}}`
	}
	// On the other server, re-encoded with other _meta and an extra key.
	res, err = call(t, b, ctx, modern, nil, retry(ir.RequestState, `{ }`))
	if done, ok := res.(*protocol.CallToolResult); err != nil || !ok || done.Content[0].Text != "Hello, Ann" {
		t.Fatalf("retry on the other server: %#v %v", res, err)
	}

	refused := []struct {
		name  string
		ctx   context.Context
		state string
		args  string
		says  string
	}{
		{"tampered", ctx, ir.RequestState + "x", `{}`, "requestState"},
		{"another principal", context.WithValue(tenant.With(context.Background(), "acme"), principalKey{}, "mallory"), ir.RequestState, `{}`, "does not belong"},
		{"another tenant", context.WithValue(tenant.With(context.Background(), "other"), principalKey{}, "alice"), ir.RequestState, `{}`, "does not belong"},
		{"other arguments", ctx, ir.RequestState, `{"x":1}`, "does not belong"},
		{"not this server's", ctx, "v1.AAAA", `{}`, "requestState"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(t, b, tc.ctx, modern, nil, retry(tc.state, tc.args))
			perr, ok := err.(*protocol.Error)
			if !ok || perr.Code != protocol.CodeInvalidParams || !strings.Contains(perr.Message, tc.says) {
				t.Errorf("got %v, want -32602 saying %q", err, tc.says)
			}
		})
	}
	clock = clock.Add(2 * time.Minute)
	_, err = call(t, b, ctx, modern, nil, retry(ir.RequestState, `{}`))
	if perr, ok := err.(*protocol.Error); !ok || !strings.Contains(perr.Message, "expired") {
		t.Errorf("an expired state: %v", err)
	}
	// A retry without the answer is asked again, not failed.
	res, err = call(t, b, ctx, modern, nil, `{"name":"greet","arguments":{}}`)
	if _, ok := res.(*protocol.InputRequiredResult); err != nil || !ok {
		t.Errorf("a retry without answers: %#v %v", res, err)
	}
}

// A client that did not declare elicitation is never asked for one; the
// request fails naming the capability.
func TestRoundsRespectDeclaredCapabilities(t *testing.T) {
	s := roundsServer(t, time.Now, key(0))
	bare := &roundsClient{version: protocol.Version20260728}
	_, err := call(t, s, context.Background(), bare, nil, `{"name":"greet","arguments":{}}`)
	perr, ok := err.(*protocol.Error)
	if !ok || perr.Code != protocol.CodeInvalidParams || !strings.Contains(string(perr.Data), `"requiredCapabilities":["elicitation"]`) {
		t.Errorf("got %v (data %s), want -32602 naming elicitation", err, perr.Data)
	}
}

// The same handler serves a legacy client session in one call: the
// server asks the client through real server-to-client requests and runs
// the handler again with the answers.
func TestRoundsServeLegacySessions(t *testing.T) {
	s := roundsServer(t, time.Now, key(0))
	legacy := &roundsClient{version: "2025-11-25", caps: protocol.ClientCapabilities{Elicitation: json.RawMessage(`{}`)}}
	peer := &fakePeer{answer: json.RawMessage(`{"action":"accept","content":{"name":"Lee"}}`)}
	res, err := call(t, s, context.Background(), legacy, peer, `{"name":"greet","arguments":{}}`)
	if done, ok := res.(*protocol.CallToolResult); err != nil || !ok || done.Content[0].Text != "Hello, Lee" {
		t.Fatalf("legacy call: %#v %v", res, err)
	}
	if len(peer.requests) != 1 || peer.requests[0].method != protocol.MethodElicitationCreate {
		t.Errorf("requests to the client: %+v", peer.requests)
	}
	// A client whose answers never satisfy the handler is asked a
	// bounded number of times.
	peer = &fakePeer{answer: json.RawMessage(`{"action":"decline"}`)}
	res, _ = call(t, s, context.Background(), legacy, peer, `{"name":"greet","arguments":{}}`)
	if done, ok := res.(*protocol.CallToolResult); !ok || !done.IsError || len(peer.requests) != maxRounds-1 {
		t.Errorf("a client that always declines: %#v after %d requests", res, len(peer.requests))
	}
}

// A retry's round members are checked: answers must be objects, the
// state a string.
func TestRoundsMalformedRetry(t *testing.T) {
	s := roundsServer(t, time.Now, key(0))
	modern := &roundsClient{version: protocol.Version20260728, caps: protocol.ClientCapabilities{Elicitation: json.RawMessage(`{}`)}}
	for _, params := range []string{
		`{"name":"greet","arguments":{},"inputResponses":[1]}`,
		`{"name":"greet","arguments":{},"inputResponses":{"who":"Ann"}}`,
		`{"name":"greet","arguments":{},"requestState":42}`,
	} {
		if _, err := call(t, s, context.Background(), modern, nil, params); err == nil {
			t.Errorf("%s accepted", params)
		} else if perr, ok := err.(*protocol.Error); !ok || perr.Code != protocol.CodeInvalidParams {
			t.Errorf("%s: %v, want -32602", params, err)
		}
	}
}
