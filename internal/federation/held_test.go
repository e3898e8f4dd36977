package federation

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

var elicitCaps = protocol.ClientCapabilities{Elicitation: json.RawMessage(`{}`)}

// asking is an upstream call that asks once and ends with the answer,
// or with its context's error.
func asking(ended chan<- error) func(context.Context, upstream.Relay) (upstream.CallResult, error) {
	return func(ctx context.Context, r upstream.Relay) (upstream.CallResult, error) {
		ans, err := r.Request(ctx, protocol.MethodElicitationCreate, json.RawMessage(`{"message":"sure?"}`))
		if ended != nil {
			ended <- err
		}
		if err != nil {
			return upstream.CallResult{}, err
		}
		return upstream.CallResult{Content: []json.RawMessage{ans}}, nil
	}
}

// A held call ends upstream when the round waiting on it ends (the
// client went, or the tool's deadline): nothing waits for an answer that
// cannot come, and the call is no longer found.
func TestHeldCallEndsWithItsRound(t *testing.T) {
	h := newHeldCalls("r1")
	ended := make(chan error, 1)
	// Once answered, the upstream works on until it is cancelled.
	slow := func(ctx context.Context, r upstream.Relay) (upstream.CallResult, error) {
		if _, err := r.Request(ctx, protocol.MethodElicitationCreate, json.RawMessage(`{"message":"sure?"}`)); err != nil {
			return upstream.CallResult{}, err
		}
		<-ctx.Done()
		ended <- ctx.Err()
		return upstream.CallResult{}, ctx.Err()
	}
	c := h.start(context.Background(), upstream.Tool{}, nil, elicitCaps, slow)
	_, need, err := c.wait(context.Background())
	if err != nil || need == nil || need.Requests["input-0"].Method != protocol.MethodElicitationCreate {
		t.Fatalf("first round: %+v, %v", need, err)
	}
	retry, ok := h.find(c.id, nil)
	if !ok {
		t.Fatal("the held call is not found")
	}
	if _, ok := h.find(c.id, nil); ok {
		t.Fatal("a second round attached to a call a round waits on")
	}
	retry.answer(map[string]json.RawMessage{"input-0": json.RawMessage(`{"action":"accept"}`)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := retry.wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a round whose context ended: %v", err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the upstream call ended with %v, want cancelled", err)
	}
	if _, ok := h.find(c.id, nil); ok {
		t.Fatal("a cancelled call is still held")
	}
}

// Past maxHeld calls the next round is refused and its call cancelled,
// and past maxHeldBytes an upstream's request is refused at once.
func TestHeldCallsBounded(t *testing.T) {
	h := newHeldCalls("r1")
	t.Cleanup(h.close)
	for range maxHeld {
		if _, need, err := h.start(context.Background(), upstream.Tool{}, nil, elicitCaps, asking(nil)).wait(context.Background()); err != nil || need == nil {
			t.Fatalf("holding: %v", err)
		}
	}
	ended := make(chan error, 1)
	if _, _, err := h.start(context.Background(), upstream.Tool{}, nil, elicitCaps, asking(ended)).wait(context.Background()); err == nil {
		t.Fatal("a call past maxHeld was held")
	}
	if err := <-ended; err == nil {
		t.Fatal("the refused call's upstream request still waits")
	}

	h2 := newHeldCalls("r1")
	h2.bytes = maxHeldBytes - 8
	_, err := heldRelay{&heldCall{owner: h2, caps: elicitCaps, asks: map[string]*ask{}, wake: make(chan struct{}, 1)}}.
		Request(context.Background(), protocol.MethodElicitationCreate, json.RawMessage(`{"message":"too much"}`))
	var perr *protocol.Error
	if !errors.As(err, &perr) {
		t.Fatalf("a request past maxHeldBytes: %v", err)
	}
}
