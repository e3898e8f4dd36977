package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
)

// handlePost serves one JSON-RPC message (basic/transports, "Sending
// Messages to the Server").
func (t *Transport) handlePost(w http.ResponseWriter, r *http.Request) {
	start := t.now()
	rec := &requestLog{start: start}
	rec.pending.Store(1)
	defer t.finishLog(rec)

	if ct := r.Header.Get("Content-Type"); ct != "" && !mediaTypeIs(ct, "application/json") {
		rec.status = http.StatusUnsupportedMediaType
		writeError(w, rec.status, nil, protocol.Errorf(protocol.CodeInvalidRequest, "unsupported Content-Type %q: send application/json", ct))
		return
	}
	jsonOK, sseOK := accepts(r.Header.Get("Accept"))
	if !jsonOK && !sseOK {
		rec.status = http.StatusNotAcceptable
		writeError(w, rec.status, nil, protocol.Errorf(protocol.CodeInvalidRequest, "not acceptable: Accept must allow application/json or text/event-stream"))
		return
	}
	body, status, perr := t.readBody(r)
	if perr != nil {
		rec.status = status
		writeError(w, status, nil, perr)
		return
	}
	msg, id, perr := protocol.Decode(body)
	if perr != nil {
		rec.status, rec.rpcCode = http.StatusBadRequest, perr.Code
		writeError(w, rec.status, id, perr)
		return
	}
	rec.method, rec.id = msg.Method, msg.ID

	if msg.Kind == protocol.KindRequest && msg.Method == protocol.MethodInitialize {
		t.initialize(w, msg, rec)
		return
	}
	sess, ok := t.session(w, r, msg.ID, rec)
	if !ok {
		return
	}
	rec.session = sess.id
	sess.touch(start)
	switch msg.Kind {
	case protocol.KindNotification:
		t.notification(sess, msg)
		rec.status = http.StatusAccepted
		w.WriteHeader(rec.status)
	case protocol.KindResponse:
		if !sess.deliver(msg) {
			t.log.Warn().Str("session", sess.id).Str("id", msg.ID.String()).Msg("response to no pending server-to-client request")
		}
		rec.status = http.StatusAccepted
		w.WriteHeader(rec.status)
	default:
		t.request(w, r, sess, msg, sseOK, rec)
	}
}

// readBody reads at most MaxBodyBytes, refusing larger bodies before
// decoding anything (pitfalls.md: one request must not take the process
// down). The buffer is fresh per request, not pooled: the decoded message
// aliases it, and handlers may keep slices of their arguments.
func (t *Transport) readBody(r *http.Request) ([]byte, int, *protocol.Error) {
	limit := t.opts.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, bodyTooLarge(limit)
	}
	size := 512
	if r.ContentLength >= 0 {
		size = int(r.ContentLength) + 1 // +1 so io.EOF arrives without a regrow
	}
	b := make([]byte, 0, size)
	lr := io.LimitReader(r.Body, limit+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, http.StatusBadRequest, protocol.Errorf(protocol.CodeParseError, "read request body: %v", err)
		}
	}
	if int64(len(b)) > limit {
		return nil, http.StatusRequestEntityTooLarge, bodyTooLarge(limit)
	}
	return b, 0, nil
}

func bodyTooLarge(limit int64) *protocol.Error {
	return protocol.Errorf(protocol.CodeInvalidRequest, "request body exceeds the limit of %d bytes", limit)
}

// session resolves the client session of a non-initialize message and
// checks its protocol version header.
func (t *Transport) session(w http.ResponseWriter, r *http.Request, id protocol.ID, rec *requestLog) (*ClientSession, bool) {
	sid := r.Header.Get(headerSessionID)
	if sid == "" {
		rec.status = http.StatusBadRequest
		writeError(w, rec.status, id, protocol.Errorf(protocol.CodeInvalidRequest, "bad request: missing %s header; send initialize first", headerSessionID))
		return nil, false
	}
	sess, err := t.sessions.Get(r.Context(), sid)
	if err != nil {
		status := http.StatusNotFound
		if !errors.Is(err, ErrSessionNotFound) {
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "1")
			t.log.Error().Err(err).Msg("look up client session")
		}
		rec.status = status
		// 404 tells the client to start a new session (basic/transports).
		writeError(w, status, id, protocol.Errorf(protocol.CodeInvalidRequest, "client session not found or ended; initialize a new one"))
		return nil, false
	}
	if v := r.Header.Get(headerProtocolVersion); v != "" && !protocol.IsSupported(v) {
		rec.status = http.StatusBadRequest
		writeError(w, rec.status, id, protocol.Errorf(protocol.CodeInvalidRequest, "unsupported %s %q; supported: %s", headerProtocolVersion, v, strings.Join(protocol.SupportedVersions(), ", ")))
		return nil, false
	}
	return sess, true
}

func (t *Transport) initialize(w http.ResponseWriter, msg *protocol.Message, rec *requestLog) {
	params, result, perr := t.srv.Initialize(msg.Params)
	if perr != nil {
		rec.status, rec.rpcCode = http.StatusOK, perr.Code
		writeError(w, rec.status, msg.ID, perr)
		return
	}
	sess, err := t.sessions.Create(context.Background(), SessionInit{
		Version:      result.ProtocolVersion,
		Client:       params.ClientInfo,
		Capabilities: params.Capabilities,
		EventLogSize: t.opts.EventLogSize,
	})
	if err != nil {
		rec.status = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "5")
		writeError(w, rec.status, msg.ID, protocol.Errorf(protocol.CodeInternalError, "cannot open a client session: %v", err))
		return
	}
	out, err := protocol.Marshal(result)
	if err != nil {
		sess.terminate()
		rec.status = http.StatusInternalServerError
		writeError(w, rec.status, msg.ID, protocol.Errorf(protocol.CodeInternalError, "internal error"))
		return
	}
	rec.session, rec.status = sess.id, http.StatusOK
	w.Header().Set(headerSessionID, sess.id)
	writeJSON(w, rec.status, protocol.AppendResult(nil, msg.ID, out))
}

func (t *Transport) notification(sess *ClientSession, msg *protocol.Message) {
	switch msg.Method {
	case protocol.NotificationCancelled:
		var p protocol.CancelledParams
		if err := decodeInto(msg.Params, &p); err != nil || p.RequestID.IsZero() {
			t.log.Debug().Str("session", sess.id).Msg("notifications/cancelled without a usable requestId")
			return
		}
		sess.cancelRequest(p.RequestID)
	case protocol.NotificationInitialized, protocol.NotificationRootsListChanged, protocol.NotificationProgress:
		// Nothing to do: requests are served as soon as the session exists.
	default:
		t.log.Debug().Str("session", sess.id).Str("method", msg.Method).Msg("ignored unknown notification")
	}
}

// request runs one request. The handler runs on this goroutine, and a
// writer goroutine starts only if the handler streams. A LongRunning tool
// whose client accepts SSE runs on its own goroutine instead, so that it may
// close its stream for polling (SEP-1699) and keep running after this
// response has ended.
func (t *Transport) request(w http.ResponseWriter, r *http.Request, sess *ClientSession, msg *protocol.Message, sseOK bool, rec *requestLog) {
	// Not r.Context(): a disconnect is not a cancellation (basic/transports).
	ctx, cancel := context.WithCancelCause(sess.ctx)
	if err := sess.begin(msg.ID, cancel); err != nil {
		cancel(nil)
		rec.status, rec.rpcCode = http.StatusOK, protocol.CodeInvalidRequest
		writeError(w, rec.status, msg.ID, protocol.Errorf(protocol.CodeInvalidRequest, "invalid request: %v", err))
		return
	}
	detached := sseOK && msg.Method == protocol.MethodToolsCall && t.srv.LongRunning(msg.Params)
	ex := newExchange(t, w, r, sess, sseOK, detached)
	req := &handlers.Request{Method: msg.Method, ID: msg.ID, Params: msg.Params, Session: sess, Peer: ex}
	run := func() {
		out := t.dispatch(ctx, req, rec)
		if sseOK && errors.Is(context.Cause(ctx), errCancelledByClient) {
			// "The receiver SHOULD NOT send a response for the cancelled
			// request" (basic/utilities/cancellation): the stream ends
			// without one. A JSON-only client still needs a body.
			out = nil
		}
		// Release the id before the response can reach the client, so the
		// client may reuse it as soon as it has its answer.
		sess.end(msg.ID)
		cancel(nil)
		ex.finish(out)
	}
	rec.status = http.StatusOK
	if detached {
		// Both sides write parts of the log line; the last one writes it.
		rec.pending.Add(1)
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			defer t.finishLog(rec)
			run()
		}()
		<-ex.ready
		if st := ex.stream(); st != nil {
			rec.streamed = true
			t.streamResponse(w, r, sess, st)
			return
		}
		t.writeFinal(w, ex.final)
		return
	}
	run()
	// ex.writer was set, if at all, under ex.mu before finish took it.
	if ex.writer == nil {
		t.writeFinal(w, ex.final)
		return
	}
	rec.streamed = true
	<-ex.writer
}

// writeFinal writes a response that no message preceded, as JSON; nil
// (a request the client cancelled) is an event stream with no events.
func (t *Transport) writeFinal(w http.ResponseWriter, final []byte) {
	if final == nil {
		startSSE(w)
		return
	}
	writeJSON(w, http.StatusOK, final)
}

// streamResponse serves a POST response stream to its end.
func (t *Transport) streamResponse(w http.ResponseWriter, r *http.Request, sess *ClientSession, st *stream) {
	c := st.attach()
	startSSE(w)
	t.serveStream(r.Context(), w, st, c, 0, protocol.HasPrimingEvents(sess.version))
	st.detach(c)
	sess.release(st)
}

// dispatch calls the handler, recovering a panic into -32603 for this
// request only, and encodes the response.
func (t *Transport) dispatch(ctx context.Context, req *handlers.Request, rec *requestLog) (out []byte) {
	defer func() {
		if v := recover(); v != nil {
			t.log.Error().Interface("panic", v).Str("method", req.Method).Bytes("stack", debug.Stack()).Msg("panic in handler")
			rec.rpcCode = protocol.CodeInternalError
			out = protocol.AppendError(nil, req.ID, protocol.Errorf(protocol.CodeInternalError, "internal error"))
		}
	}()
	result, err := t.srv.Handle(ctx, req)
	rec.tool, rec.toolError = req.Tool, req.ToolError
	if err != nil {
		var perr *protocol.Error
		if !errors.As(err, &perr) {
			t.log.Error().Err(err).Str("method", req.Method).Msg("handler failed")
			perr = protocol.Errorf(protocol.CodeInternalError, "internal error")
		}
		rec.rpcCode = perr.Code
		return protocol.AppendError(nil, req.ID, perr)
	}
	out, err = protocol.AppendResponse(make([]byte, 0, 512), req.ID, result)
	if err != nil {
		t.log.Error().Err(err).Str("method", req.Method).Str("tool", req.Tool).Msg("encode result")
		rec.rpcCode = protocol.CodeInternalError
		return protocol.AppendError(nil, req.ID, protocol.Errorf(protocol.CodeInternalError, "internal error: result could not be encoded"))
	}
	return out
}

// handleGet opens the session's standalone SSE stream, or resumes a stream
// after Last-Event-ID (basic/transports, "Listening for Messages" and
// "Resumability and Redelivery").
func (t *Transport) handleGet(w http.ResponseWriter, r *http.Request) {
	rec := &requestLog{start: t.now(), method: "GET"}
	rec.pending.Store(1)
	defer t.finishLog(rec)
	if _, sseOK := accepts(r.Header.Get("Accept")); !sseOK {
		rec.status = http.StatusNotAcceptable
		writeError(w, rec.status, nil, protocol.Errorf(protocol.CodeInvalidRequest, "not acceptable: GET opens an event stream; Accept must allow text/event-stream"))
		return
	}
	sess, ok := t.session(w, r, nil, rec)
	if !ok {
		return
	}
	rec.session = sess.id
	st, cursor, prime := sess.standalone, sess.standalone.position(), protocol.HasPrimingEvents(sess.version)
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		name, seq, ok := parseEventID(last)
		resumed := sess.stream(name)
		if !ok || resumed == nil {
			t.log.Info().Str("session", sess.id).Str("lastEventId", last).Msg("resume: unknown stream; opening the standalone stream")
		} else {
			st, cursor, prime = resumed, resumed.resumeAt(seq), false
		}
	}
	rec.status, rec.streamed = http.StatusOK, true
	c := st.attach()
	startSSE(w)
	t.serveStream(r.Context(), w, st, c, cursor, prime)
	st.detach(c)
	sess.release(st)
	sess.touch(t.now())
}

// handleDelete ends a client session (basic/transports, "Session
// Management"); afterwards its id gets 404 everywhere.
func (t *Transport) handleDelete(w http.ResponseWriter, r *http.Request) {
	rec := &requestLog{start: t.now(), method: "DELETE"}
	rec.pending.Store(1)
	defer t.finishLog(rec)
	sess, ok := t.session(w, r, nil, rec)
	if !ok {
		return
	}
	rec.session = sess.id
	if err := t.sessions.Delete(r.Context(), sess.id); err != nil && !errors.Is(err, ErrSessionNotFound) {
		rec.status = http.StatusServiceUnavailable
		writeError(w, rec.status, nil, protocol.Errorf(protocol.CodeInternalError, "end client session: %v", err))
		return
	}
	rec.status = http.StatusNoContent
	w.WriteHeader(rec.status)
}

// accepts reads an Accept header. An absent header accepts both; a client
// sending application/json only never gets a stream. It runs on every POST,
// so it scans in place instead of splitting.
func accepts(h string) (jsonOK, sseOK bool) {
	if h == "" {
		return true, false
	}
	for h != "" {
		part := h
		if i := strings.IndexByte(h, ','); i >= 0 {
			part, h = h[:i], h[i+1:]
		} else {
			h = ""
		}
		if i := strings.IndexByte(part, ';'); i >= 0 {
			part = part[:i]
		}
		switch part = strings.TrimSpace(part); {
		case strings.EqualFold(part, "application/json"), strings.EqualFold(part, "application/*"):
			jsonOK = true
		case strings.EqualFold(part, "text/event-stream"), strings.EqualFold(part, "text/*"):
			sseOK = true
		case part == "*/*":
			jsonOK, sseOK = true, true
		}
	}
	return jsonOK, sseOK
}

func mediaTypeIs(h, want string) bool {
	mt, _, _ := strings.Cut(h, ";")
	return strings.EqualFold(strings.TrimSpace(mt), want)
}

func decodeInto(raw []byte, v any) error {
	if len(raw) == 0 {
		return fmt.Errorf("no params")
	}
	return json.Unmarshal(raw, v)
}

// requestLog is the one structured log line written per request. A
// detached tools/call fills it from two goroutines: the HTTP side (status,
// streaming) and the handler (tool, outcome); each calls finishLog when done
// with its fields and the last one writes the line, so the line is complete
// even when the HTTP response ends before the handler (SEP-1699 polling, a
// disconnect).
type requestLog struct {
	pending   atomic.Int32
	start     time.Time
	method    string
	id        protocol.ID
	session   string
	tool      string
	toolError bool
	status    int
	rpcCode   int
	streamed  bool
}

func (t *Transport) finishLog(rec *requestLog) {
	if rec.pending.Add(-1) == 0 {
		t.logRequest(rec)
	}
}

func (t *Transport) logRequest(rec *requestLog) {
	lvl := t.log.Info()
	if rec.status >= 500 || rec.rpcCode == protocol.CodeInternalError {
		lvl = t.log.Error()
	}
	if !lvl.Enabled() {
		return
	}
	lvl = lvl.Str("method", rec.method).Int("status", rec.status).
		Float64("durationMs", float64(t.now().Sub(rec.start).Microseconds())/1000)
	if rec.session != "" {
		lvl = lvl.Str("session", rec.session)
	}
	if !rec.id.IsZero() {
		lvl = lvl.RawJSON("id", rec.id)
	}
	if rec.tool != "" {
		lvl = lvl.Str("tool", rec.tool).Bool("toolError", rec.toolError)
	}
	if rec.rpcCode != 0 {
		lvl = lvl.Int("rpcError", rec.rpcCode)
	}
	if rec.streamed {
		lvl = lvl.Bool("sse", true)
	}
	lvl.Msg("mcp request")
}
