package federation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// Held calls (docs/adr/0055-multi-round-trip-requests.md, "Upstreams").
// A legacy upstream asks for the client's input with requests on the
// call's stream (sampling, elicitation, roots), and waits for the
// answers inside the call. A client of the 2026-07-28 era takes no
// requests: it is asked in rounds. So a modern client's call to a legacy
// upstream runs on a goroutine of its own; when the upstream asks, the
// round ends with an InputRequiredResult whose sealed state names the
// call, the call stays held on this replica with the upstream's request
// waiting, and the client's retry hands the answers to it and waits for
// what comes next: the result, or the next question.

// heldState marks the gateway's round state that names a held call.
const heldState = 'h'

// maxHeld bounds the calls one replica holds for their clients' answers:
// each is a goroutine and an upstream request waiting. Past it the
// upstream's request is refused, as it was before calls were held.
const maxHeld = 1024

// maxHeldBytes bounds the params of the upstreams' requests that held
// calls keep for their clients (a sampling request may carry an image):
// past it a request is refused.
const maxHeldBytes = 64 << 20

// heldLinger is how long a held call that ended stays to be collected by
// the client's retry: its round's state was handed out, and the answer
// must not be lost because the upstream answered before the client
// retried.
const heldLinger = time.Minute

// errNoHeld is the answer to a retry naming a call this replica no
// longer holds.
var errNoHeld = protocol.Errorf(protocol.CodeInvalidParams,
	"invalid params: the call this requestState continues is no longer held (it ended, timed out or was cancelled, or another replica holds it); start it again without requestState")

// heldToken is the round state naming call id held by replica self:
// the heldState byte, self, a dot, id.
func heldToken(self, id string) []byte {
	b := make([]byte, 0, 2+len(self)+len(id))
	b = append(b, heldState)
	b = append(b, self...)
	b = append(b, '.')
	return append(b, id...)
}

// parseHeld reads a heldToken (after its first byte).
func parseHeld(state []byte) (replica, id string, ok bool) {
	replica, id, ok = strings.Cut(string(state), ".")
	return replica, id, ok && id != ""
}

// heldCalls are this replica's held calls, by id.
type heldCalls struct {
	self  string // this replica's name in the state of its rounds (HeldRoute.Self)
	mu    sync.Mutex
	calls map[string]*heldCall
	bytes int // params kept by the asks of every call
}

func newHeldCalls(self string) *heldCalls {
	return &heldCalls{self: self, calls: map[string]*heldCall{}}
}

// heldCall is one upstream call running on its own goroutine, for a
// modern client's rounds.
type heldCall struct {
	id     string
	tool   upstream.Tool
	caps   protocol.ClientCapabilities
	cancel context.CancelFunc
	owner  *heldCalls

	mu       sync.Mutex
	asks     map[string]*ask // the upstream's requests not answered yet, by key
	next     int             // the number of the next key
	round    *handlers.ToolCall
	attached bool          // a round waits on the call now
	wake     chan struct{} // a new ask, or the end (capacity 1)
	done     chan struct{} // closed at the end; res and err are set
	res      upstream.CallResult
	err      error
}

// ask is one request of the upstream waiting for the client's answer.
type ask struct {
	req    protocol.InputRequest
	answer chan json.RawMessage // capacity 1
}

// start runs call on a goroutine of its own, under ctx's values but not
// its cancellation (the call may outlive the round that started it).
// The round that starts it (round) is attached to it.
func (h *heldCalls) start(ctx context.Context, tool upstream.Tool, round *handlers.ToolCall, caps protocol.ClientCapabilities, call func(context.Context, upstream.Relay) (upstream.CallResult, error)) *heldCall {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &heldCall{tool: tool, caps: caps, cancel: cancel, owner: h, asks: map[string]*ask{}, round: round, attached: true,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer cancel()
		res, err := call(cctx, heldRelay{c})
		c.mu.Lock()
		c.res, c.err = res, err
		c.mu.Unlock()
		close(c.done)
		// A round collects the end and drops the call; one the client
		// never comes back for goes after heldLinger.
		time.AfterFunc(heldLinger, func() { h.drop(c) })
	}()
	return c
}

// find returns the held call id, attached to the round of call; false
// when there is none, or a round already waits on it.
func (h *heldCalls) find(id string, call *handlers.ToolCall) (*heldCall, bool) {
	h.mu.Lock()
	c := h.calls[id]
	h.mu.Unlock()
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.attached {
		return nil, false
	}
	c.attached, c.round = true, call
	return c, true
}

// close cancels every held call: the replica is shutting down.
func (h *heldCalls) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.calls {
		c.cancel()
	}
}

// reserve accounts for n bytes of an ask's params; false past
// maxHeldBytes.
func (h *heldCalls) reserve(n int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bytes+n > maxHeldBytes {
		return false
	}
	h.bytes += n
	return true
}

func (h *heldCalls) release(n int) {
	h.mu.Lock()
	h.bytes -= n
	h.mu.Unlock()
}

func (h *heldCalls) drop(c *heldCall) {
	h.mu.Lock()
	if h.calls[c.id] == c {
		delete(h.calls, c.id)
	}
	h.mu.Unlock()
}

// hold keeps c for the client's retry; false when the replica holds
// maxHeld calls already.
func (h *heldCalls) hold(c *heldCall) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.id != "" {
		return true
	}
	if len(h.calls) >= maxHeld {
		return false
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	c.id = hex.EncodeToString(b[:])
	h.calls[c.id] = c
	return true
}

// answer hands the client's answers to the asks they are for; answers
// to nothing asked are ignored (basic/patterns/mrtr).
func (c *heldCall) answer(responses map[string]json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, r := range responses {
		if a := c.asks[k]; a != nil {
			a.answer <- r
			delete(c.asks, k)
		}
	}
}

// wait waits for the call's next step, within the round's ctx: its end
// (the result, or its error), or questions for the client (need). A
// round that ends first (the client went, or the tool's deadline)
// cancels the call upstream.
func (c *heldCall) wait(ctx context.Context) (upstream.CallResult, *handlers.NeedInput, error) {
	for {
		c.mu.Lock()
		pending := len(c.asks)
		c.mu.Unlock()
		if pending > 0 {
			return c.suspend()
		}
		select {
		case <-c.done:
			c.owner.drop(c)
			return c.res, nil, c.err
		case <-c.wake:
		case <-ctx.Done():
			c.cancel()
			c.owner.drop(c)
			return upstream.CallResult{}, nil, ctx.Err()
		}
	}
}

// suspend ends the round with the questions pending, keeping the call
// held for the retry.
func (c *heldCall) suspend() (upstream.CallResult, *handlers.NeedInput, error) {
	if !c.owner.hold(c) {
		c.cancel()
		return upstream.CallResult{}, nil, errors.New("the gateway holds too many calls waiting for their clients' answers; try again later")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attached, c.round = false, nil
	need := &handlers.NeedInput{Requests: make(map[string]protocol.InputRequest, len(c.asks)),
		State: heldToken(c.owner.self, c.id)}
	for k, a := range c.asks {
		need.Requests[k] = a.req
	}
	return upstream.CallResult{}, need, nil
}

// resume runs a retry's round of the held call id, for call (nil when
// another replica's client made it): the answers go to the call, and the
// round waits for its next step.
func (h *heldCalls) resume(ctx context.Context, id string, call *handlers.ToolCall, answers map[string]json.RawMessage) (any, error) {
	c, ok := h.find(id, call)
	if !ok {
		return nil, errNoHeld
	}
	c.answer(answers)
	return step(ctx, c)
}

// step waits for a held call's next step, and returns it as Run does:
// the result, or the next round.
func step(ctx context.Context, c *heldCall) (any, error) {
	res, need, err := c.wait(ctx)
	if need != nil {
		return nil, need
	}
	return result(c.tool, res, err)
}

// heldRelay is the upstream.Relay of a held call: progress and log
// messages go to the round that waits, if one does; requests become asks.
type heldRelay struct{ c *heldCall }

func (r heldRelay) attached() *handlers.ToolCall {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.c.round
}

func (r heldRelay) Progress(ctx context.Context, progress float64, total *float64, message string) {
	if call := r.attached(); call != nil {
		callRelay{call}.Progress(ctx, progress, total, message)
	}
}

func (r heldRelay) Log(ctx context.Context, params json.RawMessage) {
	if call := r.attached(); call != nil {
		callRelay{call}.Log(ctx, params)
	}
}

// Request asks the client in the next round and waits for its answer, as
// long as the call lasts (the upstream's request timeout bounds it).
func (r heldRelay) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if err := askable(r.c.caps, method); err != nil {
		return nil, err
	}
	if !r.c.owner.reserve(len(params)) {
		return nil, protocol.Errorf(protocol.CodeInternalError, "the gateway holds too many requests for its clients' answers; try again later")
	}
	defer r.c.owner.release(len(params))
	a := &ask{req: protocol.InputRequest{Method: method, Params: params}, answer: make(chan json.RawMessage, 1)}
	r.c.mu.Lock()
	key := "input-" + strconv.Itoa(r.c.next)
	r.c.next++
	r.c.asks[key] = a
	r.c.mu.Unlock()
	select {
	case r.c.wake <- struct{}{}:
	default:
	}
	select {
	case res := <-a.answer:
		return res, nil
	case <-ctx.Done():
		r.c.mu.Lock()
		delete(r.c.asks, key)
		r.c.mu.Unlock()
		return nil, ctx.Err()
	}
}
