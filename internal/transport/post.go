package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
)

// handlePost serves one JSON-RPC message (basic/transports, "Sending
// Messages to the Server").
func (t *Transport) handlePost(w http.ResponseWriter, r *http.Request) {
	start := t.now()
	rec := &requestLog{start: start, httpMethod: http.MethodPost}
	w = rec.record(w)
	rec.pending.Store(1)
	defer t.finishLog(rec)

	if ct := r.Header.Get("Content-Type"); ct != "" && !mediaTypeIs(ct, "application/json") {
		t.unwantedBody(w, r)
		writeError(w, http.StatusUnsupportedMediaType, nil, protocol.Errorf(protocol.CodeInvalidRequest, "unsupported Content-Type %q: send application/json", ct))
		return
	}
	jsonOK, sseOK := accepts(r.Header.Get("Accept"))
	if !jsonOK && !sseOK {
		t.unwantedBody(w, r)
		writeError(w, http.StatusNotAcceptable, nil, protocol.Errorf(protocol.CodeInvalidRequest, "not acceptable: Accept must allow application/json or text/event-stream"))
		return
	}
	body, status, perr := t.readBody(w, r)
	if perr != nil {
		// The rest of the body is not wanted: the connection is closed
		// after the answer. net/http reads what is left of the body
		// first (up to 256 KiB), within the body deadline readBody left
		// in place, so a client still sending reads the answer, and one
		// that stalled does not hold the connection.
		w.Header().Set("Connection", "close")
		writeError(w, status, nil, perr)
		return
	}
	msg, id, perr := protocol.Decode(body)
	if perr != nil {
		rec.rpcCode = perr.Code
		writeError(w, http.StatusBadRequest, id, perr)
		return
	}
	rec.method, rec.id = msg.Method, msg.ID

	// The era first, from the body: a modern request never reaches the
	// initialize branch or a session lookup (basic/versioning).
	if msg.Kind != protocol.KindResponse {
		if params, modern := modernParams(msg, r.Header); modern {
			t.modern(w, r, msg, params, sseOK, rec)
			return
		}
	}
	if msg.Kind == protocol.KindRequest && msg.Method == protocol.MethodInitialize {
		t.initialize(w, r, msg, rec)
		return
	}
	sess, ok := t.session(w, r, msg.ID)
	if !ok {
		return
	}
	rec.session = sess.handle
	sess.Touch(start)
	switch msg.Kind {
	case protocol.KindNotification:
		ctx, op := t.serverOp(r.Context(), r.Header, spanMethod(msg.Method), nil, msg.Params, "", sess.handle, sess.version, rec)
		err := t.notification(ctx, sess, msg)
		t.endOp(ctx, op, rec)
		if err != nil {
			retryLater(w, "cannot route the notification now: %v", err)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	case protocol.KindResponse:
		t.clientResponse(w, r, sess, msg, body)
	default:
		t.request(w, r, sess, msg, sseOK, rec)
	}
}

// readBody reads at most MaxBodyBytes, refusing larger bodies before
// decoding anything: one request must not take the process down
// (docs/adr/0032-input-bounds.md). The buffer is fresh per request, not
// pooled: the decoded message aliases it, and handlers may keep slices of
// their arguments.
func (t *Transport) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, *protocol.Error) {
	limit := t.opts.MaxBodyBytes
	if r.ContentLength > limit {
		t.unwantedBody(w, r)
		return nil, http.StatusRequestEntityTooLarge, bodyTooLarge(limit)
	}
	// A declared length sizes the buffer, but only up to 64 KiB: the
	// header alone must not make the server allocate what the client has
	// not sent. Larger bodies grow as their bytes arrive.
	size := 512
	if r.ContentLength >= 0 {
		size = int(min(r.ContentLength+1, 64<<10)) // +1: io.EOF without a regrow
	}
	b := make([]byte, 0, size)
	// The body must arrive in time; the deadline is lifted after it, since
	// the response may be a long-lived stream. (http.Server.ReadTimeout
	// would also cancel streaming requests, so it stays unset.) After an
	// error it stays: it bounds net/http's read of the rest of the body.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(t.now().Add(t.opts.ReadBodyTimeout)) // unsupported writer: no deadline
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
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if t.draining.Load() {
				// Shutdown stopped waiting (connlimit.Listener.Drain).
				w.Header().Set("Retry-After", "1")
				return nil, http.StatusServiceUnavailable, protocol.Errorf(protocol.CodeInternalError, "the server is shutting down; retry the request")
			}
			return nil, http.StatusRequestTimeout, protocol.Errorf(protocol.CodeInvalidRequest,
				"the request body did not arrive within transport.readBodyTimeoutMs (%d ms)", t.opts.ReadBodyTimeout.Milliseconds())
		}
		if err != nil {
			return nil, http.StatusBadRequest, protocol.Errorf(protocol.CodeParseError, "read request body: %v", err)
		}
	}
	if int64(len(b)) > limit {
		return nil, http.StatusRequestEntityTooLarge, bodyTooLarge(limit)
	}
	_ = rc.SetReadDeadline(time.Time{})
	return b, 0, nil
}

func bodyTooLarge(limit int64) *protocol.Error {
	return protocol.Errorf(protocol.CodeInvalidRequest, "request body exceeds the limit of %d bytes", limit)
}

// session resolves the client session of a non-initialize message and
// checks its protocol version header.
func (t *Transport) session(w http.ResponseWriter, r *http.Request, id protocol.ID) (*ClientSession, bool) {
	sid := r.Header.Get(headerSessionID)
	if sid == "" {
		writeError(w, http.StatusBadRequest, id, protocol.Errorf(protocol.CodeInvalidRequest, "bad request: missing %s header; send initialize first", headerSessionID))
		return nil, false
	}
	sess, err := t.sessions.Get(r.Context(), sid)
	if err == nil && (sess.principal != principalID(r) || sess.tenant != tenant.From(r.Context())) {
		// A session is bound to the principal that created it, in the
		// tenant it created it in
		// (docs/adr/0019-authentication-and-principals.md): to anyone
		// else it does not exist, and saying more would confirm a stolen
		// id. The tenant is compared too: one subject may hold tokens for
		// several tenants, and the session's subscriptions belong to the
		// first.
		err = ErrSessionNotFound
	}
	if err != nil {
		status := http.StatusNotFound
		if !errors.Is(err, ErrSessionNotFound) {
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "1")
			// A session a shared store may be about to get back is no
			// fault here, and anyone may name one: not an error line per
			// request.
			lvl := zerolog.ErrorLevel
			if errors.Is(err, ErrSessionPending) {
				lvl = zerolog.DebugLevel
			}
			t.log.WithLevel(lvl).Err(err).Msg("look up client session")
		}
		// 404 tells the client to start a new session (basic/transports).
		writeError(w, status, id, protocol.Errorf(protocol.CodeInvalidRequest, "client session not found or ended; initialize a new one"))
		return nil, false
	}
	if v := r.Header.Get(headerProtocolVersion); v != "" && !protocol.IsSupported(v) {
		writeError(w, http.StatusBadRequest, id, protocol.Errorf(protocol.CodeInvalidRequest, "unsupported %s %q; supported: %s", headerProtocolVersion, v, strings.Join(protocol.SupportedVersions(), ", ")))
		return nil, false
	}
	return sess, true
}

func (t *Transport) initialize(w http.ResponseWriter, r *http.Request, msg *protocol.Message, rec *requestLog) {
	ctx, op := t.serverOp(r.Context(), r.Header, spanMethod(msg.Method), msg.ID, msg.Params, "", "", "", rec)
	defer t.endOp(ctx, op, rec)
	perr := t.checkInitialize(msg.Params)
	var params *protocol.InitializeParams
	var result *protocol.InitializeResult
	if perr == nil {
		params, result, perr = t.srv.Initialize(msg.Params)
	}
	if perr != nil {
		rec.rpcCode = perr.Code
		writeError(w, http.StatusOK, msg.ID, perr)
		return
	}
	sess, err := t.sessions.Create(r.Context(), SessionInit{
		Version:      result.ProtocolVersion,
		Client:       params.ClientInfo,
		Capabilities: params.Capabilities,
		EventLogSize: t.opts.EventLogSize,
		Tenant:       tenant.From(r.Context()),
		Principal:    principalID(r),
		index:        t.subs,
	})
	if share := t.shareSpent(err); share != nil {
		// The caller's own share is spent: its problem, not the server's.
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, msg.ID, share)
		return
	}
	if errors.Is(err, ErrTooManySessions) {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, msg.ID, protocol.Errorf(protocol.CodeInternalError,
			"too many client sessions: this server holds %d, its limit (transport.maxSessions); retry later", t.opts.MaxSessions))
		return
	}
	if err != nil {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, msg.ID, protocol.Errorf(protocol.CodeInternalError, "cannot open a client session: %v", err))
		return
	}
	out, err := protocol.Marshal(result)
	if err != nil {
		sess.Terminate()
		writeError(w, http.StatusInternalServerError, msg.ID, protocol.Errorf(protocol.CodeInternalError, "internal error"))
		return
	}
	rec.session = sess.handle
	w.Header().Set(headerSessionID, sess.id)
	writeJSON(w, http.StatusOK, protocol.AppendResult(nil, msg.ID, out))
}

// shareSpent is the answer to a session refused because its principal or
// its tenant holds its share of sessions, naming the cap and the key that
// sets it; nil for any other error.
func (t *Transport) shareSpent(err error) *protocol.Error {
	var who, key string
	var limit int
	switch {
	case errors.Is(err, ErrPrincipalSessions):
		who, key, limit = "this principal", "transport.maxSessionsPerPrincipal", t.opts.MaxSessionsPerPrincipal
	case errors.Is(err, ErrTenantSessions):
		who, key, limit = "this principal's tenant", "transport.maxSessionsPerTenant", t.opts.MaxSessionsPerTenant
	default:
		return nil
	}
	return protocol.Errorf(protocol.CodeInvalidRequest,
		"too many client sessions: %s holds %d, its limit (%s); end one with DELETE or let one idle out", who, limit, key).
		WithData(map[string]any{"limit": limit, "key": key})
}

// maxForwardedCancelID bounds the requestId (JSON bytes) of a
// cancellation published to the other replicas.
const maxForwardedCancelID = 256

// notification handles a client notification. An error means it had to
// reach another replica and the shared store did not take it: the client
// must send it again (503 with Retry-After).
func (t *Transport) notification(ctx context.Context, sess *ClientSession, msg *protocol.Message) error {
	switch msg.Method {
	case protocol.NotificationCancelled:
		var p protocol.CancelledParams
		if err := decodeInto(msg.Params, &p); err != nil || p.RequestID.IsZero() {
			t.log.Debug().Str("session", sess.handle).Msg("notifications/cancelled without a usable requestId")
			return nil
		}
		if !sess.CancelRequest(p.RequestID) && len(p.RequestID) <= maxForwardedCancelID {
			// The request may run on another replica: without this, a
			// cancellation landing elsewhere than its request would be
			// accepted and ignored. Each one may reach every replica, so
			// its size is bounded: an id longer than any client sends is
			// not forwarded (cancellation is advisory,
			// basic/utilities/cancellation).
			return sess.rep.ForwardCancel(ctx, p.RequestID)
		}
	case protocol.NotificationInitialized, protocol.NotificationRootsListChanged, protocol.NotificationProgress:
		// Nothing to do: requests are served as soon as the session exists.
	default:
		t.log.Debug().Str("session", sess.handle).Str("method", logging.Field(msg.Method)).Msg("ignored unknown notification")
	}
	return nil
}

// clientResponse takes a client's response to a server-to-client request
// (sampling, elicitation, roots/list) to the handler waiting for it: on
// this replica, or, for a shared session, through the replicator to the
// replica whose mailbox for the id waits. A response nothing waits
// for is accepted (202, as basic/transports has it for a response the
// server takes) and dropped, as the official SDKs' servers do: it may be
// a late answer to a request the server stopped waiting for, which is no
// fault of the client's, and some clients end the whole connection on an
// error status to a POST that is not a call. Nothing of it is kept or
// published, so sending them costs the server nothing. A response over
// MaxClientResponseBytes is refused with 413 naming the limit, and the
// request waiting for it, if any, fails at once with that reason instead
// of waiting until its timeout.
func (t *Transport) clientResponse(w http.ResponseWriter, r *http.Request, sess *ClientSession, msg *protocol.Message, body []byte) {
	size, limit := len(body), t.opts.MaxClientResponseBytes
	var refused *protocol.Error
	if size > limit {
		refused = protocol.Errorf(protocol.CodeInvalidRequest,
			"the client's response is %d bytes, over the limit of %d (transport.maxClientResponseBytes)", size, limit)
		// What reaches the waiting request is the reason, not the response.
		msg = &protocol.Message{Kind: protocol.KindResponse, ID: msg.ID, Error: refused}
		body = protocol.AppendError(nil, msg.ID, refused)
	}
	var err error
	if !sess.Deliver(msg) {
		var routed bool
		if routed, err = sess.rep.ForwardAnswer(r.Context(), msg, body); !routed && err == nil {
			t.log.Debug().Str("session", sess.handle).Str("id", logging.Field(msg.ID.String())).Msg("response to no pending server-to-client request; dropped")
		}
	}
	switch {
	case refused != nil:
		writeError(w, http.StatusRequestEntityTooLarge, nil, refused.WithData(map[string]any{"limit": limit, "actual": size}))
	case err != nil:
		retryLater(w, "cannot route the response now: %v", err)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// request runs one request. The handler runs on this goroutine, and a
// writer goroutine starts only if the handler streams. A LongRunning tool
// whose client accepts SSE runs on its own goroutine instead, so that it may
// close its stream for polling (SEP-1699) and keep running after this
// response has ended.
func (t *Transport) request(w http.ResponseWriter, r *http.Request, sess *ClientSession, msg *protocol.Message, sseOK bool, rec *requestLog) {
	// The request's values (the principal, and so the tenant every store
	// call reads; a tracing span) without its cancellation: a disconnect
	// is not a cancellation (basic/transports). The end of the session
	// is: begin registers cancel, which the session calls when it ends
	// (ClientSession.cancelInflight, through context.AfterFunc).
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(r.Context()))
	if err := sess.begin(msg.ID, r.Context(), cancel); err != nil {
		cancel(nil)
		status := http.StatusOK
		if errors.Is(err, errSessionEnded) {
			// Ended between lookup and now: the same 404 as any ended
			// session (basic/transports).
			status = http.StatusNotFound
		}
		rec.rpcCode = protocol.CodeInvalidRequest
		writeError(w, status, msg.ID, protocol.Errorf(protocol.CodeInvalidRequest, "invalid request: %v", err))
		return
	}
	// The request is read once: Prepare scans a tools/call's params and
	// finds its tool, which says whether it is long-running, and Run
	// answers from the same reading.
	req := &handlers.Request{Method: msg.Method, ID: msg.ID, Params: msg.Params, Session: sess}
	prep := t.srv.Prepare(req)
	ctx, op := t.serverOp(ctx, r.Header, spanMethod(msg.Method), msg.ID, msg.Params, prep.ToolName(), sess.handle, sess.version, rec)
	detached := sseOK && prep.LongRunning()
	ex := newExchange(t, w, r, sess, sseOK, detached)
	ex.id = msg.ID
	req.Peer = ex

	run := func() {
		out := t.dispatch(ctx, req, &prep, rec)
		t.endOp(ctx, op, rec)
		if sseOK && (errors.Is(context.Cause(ctx), errCancelledByClient) || sess.Ended()) {
			// "The receiver SHOULD NOT send a response for the cancelled
			// request" (basic/utilities/cancellation): the stream ends
			// without one. The same when the session ended under the
			// handler (DELETE, idle timeout, shutdown): its streams are
			// ending, and an answer the handler gave because it was
			// cancelled ("context canceled") must not race onto one that
			// is still attached. A JSON-only client still needs a body.
			out = nil
		}
		// Release the id before the response can reach the client, so the
		// client may reuse it as soon as it has its answer.
		sess.end(msg.ID)
		cancel(nil)
		ex.finish(out)
	}
	if detached {
		// The stream starts at once: a long-running tool may stay silent
		// for longer than a proxy's idle timeout, and the priming event and
		// keep-alives let the client hold on, or resume.
		ex.mu.Lock()
		ex.startStream()
		ex.mu.Unlock()
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
	rec.streamed = ex.stream() != nil
	<-ex.writer
}

// smallAnswer is the largest answer written without a write deadline: it
// fits the socket's buffers, so writing it never waits for the client.
const smallAnswer = 64 << 10

// writeFinal writes a response that no message preceded, as JSON; nil
// (a request the client cancelled) is an event stream with no events.
func (t *Transport) writeFinal(w http.ResponseWriter, final []byte) {
	if final == nil {
		startSSE(w)
		return
	}
	if len(final) > smallAnswer {
		// A body that may not fit the socket buffers gets a write deadline,
		// so a client that stops reading is dropped; small ones never block.
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(t.now().Add(t.opts.WriteTimeout))
		defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	}
	writeJSON(w, http.StatusOK, final)
}

// writeNow writes an early answer completely while the handler still holds
// the request: a Content-Length, so the client knows it has it all, and a
// flush, since net/http would otherwise hold a small body until the
// handler returns.
func (t *Transport) writeNow(w http.ResponseWriter, final []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(final)))
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(t.now().Add(t.opts.WriteTimeout))
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	writeJSON(w, http.StatusOK, final)
	_ = rc.Flush()
}

// streamResponse serves a POST response stream to its end.
func (t *Transport) streamResponse(w http.ResponseWriter, r *http.Request, sess *ClientSession, st *Stream) {
	st.log.Open() // a shared log has the stream before the client learns its name
	c, cursor := st.attach(0)
	startSSE(w)
	rc := http.NewResponseController(w)
	t.serveStream(handlerSink{t: t, w: w, rc: rc, ctx: r.Context()}, st, c, cursor, protocol.HasPrimingEvents(sess.version))
	_ = rc.SetWriteDeadline(time.Time{}) // so that net/http can finish the response
	st.detach(c)
	sess.release(st)
}

// dispatch calls the handler, recovering a panic into -32603 for this
// request only, and encodes the response.
func (t *Transport) dispatch(ctx context.Context, req *handlers.Request, prep *handlers.Prepared, rec *requestLog) (out []byte) {
	defer func() {
		if v := recover(); v != nil {
			t.log.Error().Str("panic", logging.Field(fmt.Sprint(v))).Str("method", logging.Field(req.Method)).Bytes("stack", debug.Stack()).Msg("panic in handler")
			rec.rpcCode = protocol.CodeInternalError
			out = protocol.AppendError(nil, req.ID, protocol.Errorf(protocol.CodeInternalError, "internal error"))
		}
	}()
	result, perr := t.run(ctx, req, prep, rec)
	if perr != nil {
		rec.rpcCode = perr.Code
		return protocol.AppendError(nil, req.ID, perr)
	}
	out, err := protocol.AppendResponse(make([]byte, 0, 512), req.ID, result)
	if err != nil {
		t.log.Error().Err(err).Str("method", logging.Field(req.Method)).Str("tool", rec.tool).Msg("encode result")
		rec.rpcCode = protocol.CodeInternalError
		return protocol.AppendError(nil, req.ID, protocol.Errorf(protocol.CodeInternalError, "internal error: result could not be encoded"))
	}
	return out
}

// run calls the handler and records the tool it ran; an error that is
// not a *protocol.Error is logged and becomes -32603.
func (t *Transport) run(ctx context.Context, req *handlers.Request, prep *handlers.Prepared, rec *requestLog) (any, *protocol.Error) {
	result, outcome, err := t.srv.Run(ctx, req, prep)
	rec.tool, rec.toolError = outcome.Tool, outcome.ToolError
	if err == nil {
		return result, nil
	}
	var perr *protocol.Error
	if !errors.As(err, &perr) {
		t.log.Error().Err(err).Str("method", logging.Field(req.Method)).Msg("handler failed")
		perr = protocol.Errorf(protocol.CodeInternalError, "internal error")
	}
	return nil, perr
}

func decodeInto(raw []byte, v any) error {
	if len(raw) == 0 {
		return errors.New("no params")
	}
	return json.Unmarshal(raw, v)
}
