package transport

import (
	"errors"
	"net/http"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// handleGet opens the session's standalone SSE stream, or resumes a stream
// after Last-Event-ID (basic/transports, "Listening for Messages" and
// "Resumability and Redelivery").
func (t *Transport) handleGet(w http.ResponseWriter, r *http.Request) {
	rec := &requestLog{start: t.now(), method: "GET", httpMethod: http.MethodGet}
	w = rec.record(w)
	rec.pending.Store(1)
	defer t.finishLog(rec)
	if _, sseOK := accepts(r.Header.Get("Accept")); !sseOK {
		writeError(w, http.StatusNotAcceptable, nil, protocol.Errorf(protocol.CodeInvalidRequest, "not acceptable: GET opens an event stream; Accept must allow text/event-stream"))
		return
	}
	if t.draining.Load() {
		// Shutting down: a stream opened now would hold the server up; the
		// client retries, in a deployment on another replica.
		retryLater(w, "server is shutting down; reconnect")
		return
	}
	sess, ok := t.session(w, r, nil)
	if !ok {
		return
	}
	rec.session = sess.handle
	// The GET that opens the stream is a server span too (the stream is
	// no MCP message: it is named by the HTTP method); a stream taken
	// over by its watcher (detach.go) ends the span when it is handed on.
	_, op := t.serverOp(r.Context(), r.Header, http.MethodGet, nil, nil, "", sess.handle, sess.version, rec)
	defer t.endStreamOp(op, rec)
	if sess.Ended() {
		// Ended between lookup and now: 404, as for any ended session.
		writeError(w, http.StatusNotFound, nil, protocol.Errorf(protocol.CodeInvalidRequest, "client session not found or ended; initialize a new one"))
		return
	}
	st, resume, prime := sess.standalone, int64(-1), protocol.HasPrimingEvents(sess.version)
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		name, seq, ok := parseEventID(last)
		resumed := sess.Stream(name)
		if ok && isPostStreamName(name) && (resumed == nil || resumed.follower()) {
			// Another replica's POST stream, or a delivered one of this
			// replica's: a shared session's log outlives it here.
			var err error
			if resumed, err = sess.rep.Resume(r.Context(), name, resumed); err != nil {
				// The shared log cannot say: never a 400 that would make
				// the client give up a response that may be there.
				retryLater(w, "cannot resume %q now: %v", last, err)
				return
			}
		}
		switch {
		case ok && resumed != nil:
			st, resume, prime = resumed, int64(seq), false
		case ok && isPostStreamName(name):
			// One of ours, gone (delivered, or dropped from the bounded
			// set): say so, rather than open a stream on which the
			// client would wait forever for a response.
			writeError(w, http.StatusBadRequest, nil, protocol.Errorf(protocol.CodeInvalidRequest, "Last-Event-ID %q: that stream is no longer available", last))
			return
		default:
			// Not an id this server issues: serve the standalone stream.
			t.log.Info().Str("session", sess.handle).Str("lastEventId", logging.Field(last)).Msg("resume: unknown stream; opening the standalone stream")
		}
	}
	if st == sess.standalone {
		positioned, err := sess.rep.OpenStandalone(r.Context(), st, resume)
		if err != nil {
			// The session lives: the client retries.
			retryLater(w, "cannot open the stream now: %v", err)
			return
		}
		prime = prime && positioned
	}
	if limit := t.opts.MaxStreamsPerSession; limit > 0 && !st.Attached() && sess.openStreams() >= limit {
		// A GET that would open one more stream than the session may hold
		// (so one client cannot hold connections without bound); one that
		// reconnects a stream supersedes its old connection and opens
		// nothing new, so it always passes.
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, nil, protocol.Errorf(protocol.CodeInvalidRequest,
			"too many open streams: this client session has %d SSE streams open; close one first", limit))
		return
	}
	rec.streamed = true
	c, cursor := st.attach(resume)
	if st == sess.standalone && !sess.rep.IsHome() {
		// Another replica's GET of the session claimed it while this one
		// opened (the client sent two at once): that claim's supersession
		// may have come before this connection attached, when there was
		// none to close. One stream only (basic/transports).
		sess.Supersede()
	}
	closeAfterStream(w, r)
	startSSE(w)
	end := func(s sseSink) {
		t.serveStream(s, st, c, cursor, prime)
		st.detach(c)
		sess.release(st)
		sess.Touch(t.now())
	}
	rc := http.NewResponseController(w)
	rec.pending.Add(1) // the line is written when the stream ends
	if t.detach(rc, r, func(s *connSink) {
		// The log keeps net/http's response writer, and through it the
		// connection's buffers, which the stream no longer uses.
		rec.w = statusWriter{}
		defer t.finishLog(rec)
		end(s)
	}) {
		return
	}
	end(handlerSink{t: t, w: w, rc: rc, ctx: r.Context()})
	_ = rc.SetWriteDeadline(time.Time{}) // so that net/http can finish the response
	t.finishLog(rec)
}

// handleDelete ends a client session (basic/transports, "Session
// Management"); afterwards its id gets 404 everywhere.
func (t *Transport) handleDelete(w http.ResponseWriter, r *http.Request) {
	rec := &requestLog{start: t.now(), method: "DELETE", httpMethod: http.MethodDelete}
	w = rec.record(w)
	rec.pending.Store(1)
	defer t.finishLog(rec)
	sess, ok := t.session(w, r, nil)
	if !ok {
		return
	}
	rec.session = sess.handle
	err := t.sessions.Delete(r.Context(), sess.id)
	if err != nil && !errors.Is(err, ErrSessionNotFound) {
		// The shared store could not end it: the session lives on
		// elsewhere, so the client must try again.
		retryLater(w, "end client session: %v", err)
		return
	}
	if err == nil {
		t.sessionEnded(sess)
	}
	w.WriteHeader(http.StatusNoContent)
}
