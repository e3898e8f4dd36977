package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/requeststate"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// confirmTool asks the client to confirm, twice (two rounds, the state
// counting them), then answers: a handler in the multi-round style
// (docs/adr/0055-multi-round-trip-requests.md).
var confirmTool = handlers.Tool{Name: "confirm", Description: "Asks twice.", Handler: func(ctx context.Context, _ *handlers.ToolCall) (*protocol.CallToolResult, error) {
	in := handlers.InputOf(ctx)
	round := string(in.State)
	if _, ok := in.Responses["ok"]; ok && round == "2" {
		return &protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent("confirmed twice")}}, nil
	}
	next := "1"
	if _, ok := in.Responses["ok"]; ok && round == "1" {
		next = "2"
	}
	return nil, &handlers.NeedInput{State: []byte(next), Requests: map[string]protocol.InputRequest{
		"ok": {Method: protocol.MethodElicitationCreate, Params: json.RawMessage(`{"message":"Sure?","requestedSchema":{"type":"object"}}`)}}}
}}

// mrtrHarness is a replica serving confirmTool, sealing with key.
func mrtrHarness(t *testing.T, key string) *harness {
	sealer, err := requeststate.New(time.Now, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{}
	h.Harness = th.New(t, th.Config{Tools: []handlers.Tool{confirmTool}}, func(srv *handlers.Server) (th.Transport, error) {
		srv.SetStateSealer(handlers.NewSealedRounds(sealer, time.Minute, nil))
		tr, err := New(srv, defaultOptions())
		h.tr = tr
		return tr, err
	})
	return h
}

// A multi-round tools/call over HTTP: each round is answered
// input_required with a sealed requestState, and each retry goes to
// another replica holding the same key; a replica with another key
// refuses the state.
func TestModernRoundsAcrossReplicas(t *testing.T) {
	key := strings.Repeat("k", requeststate.MinKeyBytes)
	replicas := []*harness{mrtrHarness(t, key), mrtrHarness(t, key), mrtrHarness(t, key)}
	stranger := mrtrHarness(t, strings.Repeat("s", requeststate.MinKeyBytes))
	caps := map[string]any{protocol.MetaClientCapabilities: map[string]any{"elicitation": map[string]any{}}}
	params := map[string]any{"name": "confirm", "arguments": map[string]any{}}
	hdrs := modernHeaders("tools/call", "confirm")

	type round struct {
		ResultType    string                           `json:"resultType"`
		InputRequests map[string]protocol.InputRequest `json:"inputRequests"`
		RequestState  string                           `json:"requestState"`
		Content       []protocol.Content               `json:"content"`
		TTL           *int64                           `json:"ttlMs"`
	}
	var r round
	for i, h := range replicas {
		rr := h.Post(t, "", modernBody(i+1, "tools/call", params, caps), hdrs...)
		if err := json.Unmarshal(th.ResultOf(t, rr, strconv.Itoa(i+1)), &r); err != nil {
			t.Fatal(err)
		}
		if i < 2 && (r.ResultType != protocol.ResultInputRequired || r.RequestState == "" || r.InputRequests["ok"].Method != protocol.MethodElicitationCreate || r.TTL != nil) {
			t.Fatalf("round %d on replica %d: %+v", i+1, i+1, r)
		}
		if i == 1 {
			// The state of round 2, taken to a replica with another key.
			bad := map[string]any{"name": "confirm", "arguments": map[string]any{}, "inputResponses": map[string]any{"ok": map[string]any{"action": "accept"}}, "requestState": r.RequestState}
			th.WantRPCError(t, stranger.Post(t, "", modernBody(9, "tools/call", bad, caps), hdrs...), http.StatusOK, "9", protocol.CodeInvalidParams)
		}
		params = map[string]any{"name": "confirm", "arguments": map[string]any{}, "inputResponses": map[string]any{"ok": map[string]any{"action": "accept"}}, "requestState": r.RequestState}
	}
	if r.ResultType != protocol.ResultComplete || len(r.Content) != 1 || r.Content[0].Text != "confirmed twice" {
		t.Errorf("last round: %+v", r)
	}
}
