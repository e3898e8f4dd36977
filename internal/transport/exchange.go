package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// exchange is one POST request in flight: the handlers.Peer its handler
// talks through, and the switch from a JSON response to an SSE stream that
// happens when the handler sends its first message.
type exchange struct {
	sess  *ClientSession
	sseOK bool // the client's Accept allows text/event-stream
	// detached: the handler runs on its own goroutine and the request's
	// goroutine serves the response. Otherwise the handler runs on the
	// request's goroutine and startStream starts a writer goroutine on w.
	detached bool
	t        *Transport
	w        http.ResponseWriter
	r        *http.Request
	writer   chan struct{} // closed when the writer goroutine is done
	answered bool          // the response has been sent
	id       protocol.ID   // the request's, for an early answer

	mu    sync.Mutex
	st    *Stream       // the response stream, once the handler sent a message
	final []byte        // the response, when it came before any message
	ready chan struct{} // closed when st or final is set, whichever is first
}

func newExchange(t *Transport, w http.ResponseWriter, r *http.Request, sess *ClientSession, sseOK, detached bool) *exchange {
	return &exchange{t: t, w: w, r: r, sess: sess, sseOK: sseOK, detached: detached, ready: make(chan struct{})}
}

// startStream creates the response stream; ex.mu must be held.
func (ex *exchange) startStream() *Stream {
	st := ex.sess.newPostStream(ex.id)
	ex.st = st
	close(ex.ready)
	if !ex.detached {
		ex.writer = make(chan struct{})
		go func() {
			defer close(ex.writer)
			ex.t.streamResponse(ex.w, ex.r, ex.sess, st)
		}()
	}
	return st
}

// send delivers a message related to this request: on the request's own
// stream, or on the session's GET stream when the client cannot take SSE in
// answer to a POST.
func (ex *exchange) send(data []byte) {
	if !ex.sseOK {
		ex.sess.standalone.append(data)
		return
	}
	ex.mu.Lock()
	st := ex.st
	if st == nil && ex.final == nil {
		st = ex.startStream()
	}
	ex.mu.Unlock()
	// After the response (as JSON, or as its stream's last event), a late
	// message goes where any server-initiated message goes.
	if st == nil || !st.appendOpen(data) {
		ex.sess.standalone.append(data)
	}
}

// finish records the response: written as JSON when no message preceded
// it, otherwise appended to the stream as its last event. A response that
// comes after an early answer is dropped.
func (ex *exchange) finish(data []byte) { ex.answer(data, false) }

// answer sends data as the response unless one was sent; it may run on any
// goroutine. When the handler still holds the request's goroutine (an
// early answer for an inline call), a writer goroutine writes it.
func (ex *exchange) answer(data []byte, early bool) bool {
	ex.mu.Lock()
	if ex.answered {
		ex.mu.Unlock()
		return false
	}
	ex.answered = true
	st := ex.st
	if st == nil {
		ex.final = data
		close(ex.ready)
		if early && !ex.detached {
			ex.writer = make(chan struct{})
			go func() {
				defer close(ex.writer)
				ex.t.writeNow(ex.w, data)
			}()
		}
	}
	ex.mu.Unlock()
	if st != nil {
		st.appendFinal(data)
	}
	return true
}

// Answer implements handlers.Peer.
func (ex *exchange) Answer(result any) bool {
	out, err := protocol.AppendResponse(nil, ex.id, result)
	if err != nil {
		ex.t.log.Error().Err(err).Msg("encode early answer")
		out = protocol.AppendError(nil, ex.id, protocol.Errorf(protocol.CodeInternalError, "internal error"))
	}
	return ex.answer(out, true)
}

// Notify implements handlers.Peer.
func (ex *exchange) Notify(_ context.Context, method string, params any) error {
	data, err := protocol.MarshalNotification(method, params)
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	ex.send(data)
	return nil
}

// Request implements handlers.Peer.
func (ex *exchange) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if err := ex.clientSupports(method); err != nil {
		return nil, err
	}
	p, err := protocol.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", method, err)
	}
	ctx, p, end := ex.t.clientOp(ctx, method, p)
	result, err := ex.request(ctx, method, p)
	end(err)
	return result, err
}

// request sends a server-to-client request of method with params p and
// waits for the client's answer.
func (ex *exchange) request(ctx context.Context, method string, p []byte) (json.RawMessage, error) {
	id, answer, err := ex.sess.expect()
	if err != nil {
		return nil, fmt.Errorf("send %s: %w", method, err)
	}
	defer ex.sess.forget(id)
	ex.send(protocol.AppendRequest(nil, id, method, p))
	var poll <-chan time.Time
	if every := ex.sess.rep.AnswerPoll(); every > 0 {
		// A response another replica took while it could not hand it
		// on waits where awaitAnswer reads it: read it every poll.
		tick := time.NewTicker(every)
		defer tick.Stop()
		poll = tick.C
	}
	for {
		select {
		case m := <-answer:
			if m.Error != nil {
				// Wrapped: the client's error is the tool's problem, never the
				// JSON-RPC error of the tools/call that asked.
				return nil, fmt.Errorf("client answered %s with an error: %w", method, m.Error)
			}
			return m.Result, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %s answer: %w", method, ctx.Err())
		case <-poll:
			ex.sess.rep.AwaitAnswer(id)
		}
	}
}

// clientSupports refuses a server-to-client request the client did not
// declare a capability for (basic/lifecycle: both sides respect the
// negotiated capabilities).
func (ex *exchange) clientSupports(method string) error {
	capName, err := protocol.InputCapability(method)
	if err == nil && !ex.sess.caps.Has(capName) {
		return fmt.Errorf("the client did not declare the capability %s needs", method)
	}
	return nil
}

// CloseStream implements handlers.Peer. Called before the handler has sent
// anything, it starts the stream first, so the client gets the priming
// event it needs to resume.
func (ex *exchange) CloseStream(retryMs int) {
	// Before 2025-11-25 clients get no priming event, so a closed stream
	// would leave them no id to resume from: keep it open for them.
	if !ex.sseOK || !ex.detached || !protocol.HasPrimingEvents(ex.sess.version) {
		return
	}
	ex.mu.Lock()
	st := ex.st
	if st == nil && ex.final == nil {
		st = ex.startStream()
	}
	ex.mu.Unlock()
	if st != nil {
		st.closeSoon(retryMs)
	}
}

// stream returns the response stream, if the handler started one.
func (ex *exchange) stream() *Stream {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.st
}
