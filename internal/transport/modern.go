package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// The modern era (MCP 2026-07-28; docs/adr/0051-modern-era-requests.md)
// on the same endpoint as the legacy one: a request says which era it
// speaks in its params' _meta (basic/versioning, "Dual-era"), and one of
// the modern era is served on its own, without a client session — its
// Mcp-Session-Id and Last-Event-ID are ignored, and neither is minted or
// echoed.

// modernParams reports whether msg, a request or notification, is of the
// modern era, and returns what one walk of its params found for the
// era's checks: its _meta names a protocol version, or, without one, the
// MCP-Protocol-Version header names a modern version (the request is
// then modern and malformed, answered 400/-32602, rather than taken for
// a legacy one lacking its session). initialize without the _meta key
// selects the legacy era whatever its headers say.
func modernParams(msg *protocol.Message, h http.Header) (p protocol.ModernParams, modern bool) {
	if p = protocol.ScanModern(msg.Method, msg.Params); p.Modern() {
		return p, true
	}
	return p, msg.Method != protocol.MethodInitialize && protocol.IsModernVersion(h.Get(headerProtocolVersion))
}

// modern serves one modern request or notification: validated in the
// order of the specification and the conformance suite (CheckModern:
// _meta, headers, version; then the method; basic/versioning), run with
// the request's own view of the client (modernClient), answered as JSON
// or as an SSE stream of the notifications that relate to it, then its
// response. Closing that stream cancels the request
// (basic/patterns/cancellation).
func (t *Transport) modern(w http.ResponseWriter, r *http.Request, msg *protocol.Message, params protocol.ModernParams, sseOK bool, rec *requestLog) {
	if msg.Kind == protocol.KindNotification {
		// The era defines no client notification over HTTP: closing a
		// response stream is the cancellation
		// (basic/transports/streamable-http, "Sending Messages"). One
		// is accepted and goes nowhere; it never reaches a legacy
		// session.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	meta, serr := protocol.CheckModern(msg, params, r.Header)
	if serr != nil {
		rec.rpcCode = serr.Code
		writeError(w, serr.Status, msg.ID, serr.Error)
		return
	}
	if protocol.RemovedInModern(msg.Method) {
		rec.rpcCode = protocol.CodeMethodNotFound
		writeError(w, http.StatusNotFound, msg.ID, protocol.Errorf(protocol.CodeMethodNotFound,
			"method not found: %s is not part of protocol %s", logging.Field(msg.Method), meta.ProtocolVersion))
		return
	}
	if msg.Method == protocol.MethodSubscriptionsListen {
		// Its span is the request that opens the stream, handed on as
		// the GET's is.
		ctx, op := t.serverOp(r.Context(), r.Header, msg.Method, msg.ID, msg.Params, "", "", meta.ProtocolVersion, rec)
		defer t.endStreamOp(op, rec)
		if ctx != r.Context() {
			r = r.WithContext(ctx) // traced: the stream's work is the span's
		}
		t.listen(w, r, msg, sseOK, rec)
		return
	}
	req := &handlers.Request{Method: msg.Method, ID: msg.ID, Params: msg.Params, Session: newModernClient(meta), Retry: meta.Round}
	prep := t.srv.Prepare(req)
	ctx, op := t.serverOp(r.Context(), r.Header, spanMethod(msg.Method), msg.ID, msg.Params, prep.ToolName(), "", meta.ProtocolVersion, rec)
	defer t.endOp(ctx, op, rec)
	var missing []string
	for _, name := range prep.ClientCapabilities() {
		if !meta.HasCapability(name) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		serr := protocol.MissingCapability(missing...)
		rec.rpcCode = serr.Code
		writeError(w, serr.Status, msg.ID, serr.Error)
		return
	}
	if specs, args := prep.ParamHeaders(); specs != nil {
		if serr := protocol.CheckParamHeaders(specs, args, r.Header); serr != nil {
			rec.rpcCode = serr.Code
			writeError(w, serr.Status, msg.ID, serr.Error)
			return
		}
	}
	// Only the run counts against the principal's requests in flight:
	// it is what holds the stream. It is counted out before the answer
	// is written, so a client that has its answer has its place back.
	principal := principalID(r)
	if !t.admitModern(principal) {
		rec.rpcCode = protocol.CodeInvalidRequest
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, msg.ID, protocol.Errorf(protocol.CodeInvalidRequest,
			"too many requests in flight: at most %d at once per principal; retry when one has ended", t.opts.MaxRequestsPerPrincipal))
		return
	}
	ex := &modernExchange{t: t, w: w, r: r, id: msg.ID, sseOK: sseOK, logs: meta.LogLevel != ""}
	req.Peer = ex
	reply := t.dispatchModern(ctx, req, &prep, rec)
	t.releaseModern(principal)
	ex.finish(reply)
}

// admitModern counts a modern request of principal in, unless it would
// have more than MaxRequestsPerPrincipal in flight.
func (t *Transport) admitModern(principal string) bool {
	limit := t.opts.MaxRequestsPerPrincipal
	if limit <= 0 {
		return true
	}
	t.inflightMu.Lock()
	defer t.inflightMu.Unlock()
	if t.inflight[principal] >= limit {
		return false
	}
	t.inflight[principal]++
	return true
}

// releaseModern counts a request admitModern let in out.
func (t *Transport) releaseModern(principal string) {
	if t.opts.MaxRequestsPerPrincipal <= 0 {
		return
	}
	t.inflightMu.Lock()
	defer t.inflightMu.Unlock()
	if t.inflight[principal]--; t.inflight[principal] <= 0 {
		delete(t.inflight, principal)
	}
}

// modernReply is a modern request's response and the HTTP status it is
// sent with when it is the whole answer (not the last event of a stream).
type modernReply struct {
	body   []byte
	status int
}

// dispatchModern runs the handler as dispatch does, and encodes its
// result as a modern one: resultType, serverInfo in _meta, and the cache
// hint of the methods whose results a client may cache
// (server/utilities/caching).
func (t *Transport) dispatchModern(ctx context.Context, req *handlers.Request, prep *handlers.Prepared, rec *requestLog) (out modernReply) {
	defer func() {
		if v := recover(); v != nil {
			t.log.Error().Str("panic", logging.Field(fmt.Sprint(v))).Str("method", logging.Field(req.Method)).Bytes("stack", debug.Stack()).Msg("panic in handler")
			out = t.modernError(req, rec, protocol.Errorf(protocol.CodeInternalError, "internal error"))
		}
	}()
	result, perr := t.run(ctx, req, prep, rec)
	if perr != nil {
		return t.modernError(req, rec, perr)
	}
	body, err := t.appendModernResponse(req.ID, req.Method, req.Params, result)
	if err != nil {
		t.log.Error().Err(err).Str("method", logging.Field(req.Method)).Str("tool", rec.tool).Msg("encode result")
		return t.modernError(req, rec, protocol.Errorf(protocol.CodeInternalError, "internal error: result could not be encoded"))
	}
	return modernReply{body: body, status: http.StatusOK}
}

// CacheHints say how long, and for whom, the result of a request of
// method with params may be cached (server/utilities/caching). Hint is
// asked only for the methods whose results carry a hint, after the
// handler answered them.
type CacheHints interface {
	Hint(method string, params json.RawMessage) protocol.CacheHint
}

// appendModernResponse encodes result as the response to request id of
// method with params.
func (t *Transport) appendModernResponse(id protocol.ID, method string, params json.RawMessage, result any) ([]byte, error) {
	var raw []byte
	var err error
	if r, ok := result.(*protocol.CallToolResult); ok {
		if len(r.Meta) == 0 && len(t.serverInfo) > 0 {
			return protocol.AppendModernToolResponse(make([]byte, 0, 512), id, r, t.serverInfo)
		}
		raw, err = protocol.AppendToolResult(make([]byte, 0, 256), r)
	} else {
		raw, err = protocol.Marshal(result)
	}
	if err != nil {
		return nil, err
	}
	resultType := protocol.ResultComplete
	var hint *protocol.CacheHint
	if _, ok := result.(*protocol.InputRequiredResult); ok {
		// A round, not the result: nothing to cache (basic/patterns/mrtr).
		resultType = protocol.ResultInputRequired
	} else if cacheable(method) {
		hint = &protocol.CacheHint{}
		if t.opts.Hints != nil {
			*hint = t.opts.Hints.Hint(method, params)
		}
	}
	res, err := protocol.AppendModernResult(make([]byte, 0, len(raw)+160), raw, resultType, hint, t.serverInfo)
	if err != nil {
		return nil, err
	}
	return protocol.AppendResult(make([]byte, 0, len(res)+48), id, res), nil
}

// cacheable reports whether results of method carry a cache hint
// (server/utilities/caching): these must; no other may need one.
func cacheable(method string) bool {
	switch method {
	case protocol.MethodToolsList, protocol.MethodPromptsList, protocol.MethodResourcesList,
		protocol.MethodResourcesTemplatesList, protocol.MethodResourcesRead, protocol.MethodServerDiscover:
		return true
	}
	return false
}

// modernError is the response carrying perr, with the HTTP status the
// era gives it: 404 for a method the server does not serve
// (basic/transports/streamable-http, "Protocol Version"), 200 for the
// errors of a method it serves. A resource that does not exist is
// -32602 with data.uri, never -32002 (server/resources, "Error
// Handling"). The codes the era gives the transport (-32020, -32021,
// -32022: the client's headers, capabilities or version, checked before
// a handler runs) and -32042, which a modern server must not send
// (basic/versioning), are -32603 when a handler answers with them, an
// upstream's error passed on say: they would have the client correct
// its own request, or wait for an elicitation, for another server's
// reason.
func (t *Transport) modernError(req *handlers.Request, rec *requestLog, perr *protocol.Error) modernReply {
	status := http.StatusOK
	switch perr.Code {
	case protocol.CodeMethodNotFound:
		status = http.StatusNotFound
	case protocol.CodeHeaderMismatch, protocol.CodeMissingClientCapability, protocol.CodeUnsupportedProtocolVersion, protocol.CodeURLElicitation:
		perr = &protocol.Error{Code: protocol.CodeInternalError, Message: perr.Message, Data: perr.Data}
	case protocol.CodeResourceNotFound:
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(req.Params, &p) // read before: it decoded
		data, _ := json.Marshal(p)         // a string: cannot fail
		perr = &protocol.Error{Code: protocol.CodeInvalidParams, Message: perr.Message, Data: data}
	}
	rec.rpcCode = perr.Code
	return modernReply{body: protocol.AppendError(nil, req.ID, perr), status: status}
}

// modernExchange is a modern request in flight: the handlers.Peer its
// handler talks through. Notifications that relate to the request go on
// its own SSE stream, opened by the first one; there is no other stream
// to send anything on, and no event ids, since the era has no resumption
// (basic/transports/streamable-http, "Receiving Messages").
type modernExchange struct {
	t     *Transport
	w     http.ResponseWriter
	r     *http.Request
	id    protocol.ID
	sseOK bool
	// logs: the request's _meta set a log level; without one no
	// notifications/message is sent (basic/index, "Logging").
	logs bool

	mu        sync.Mutex
	streaming bool // the SSE stream has started
	answered  bool // the response has been sent
}

// Notify implements handlers.Peer. A client that takes only JSON gets
// none: its answer is one JSON object.
func (ex *modernExchange) Notify(_ context.Context, method string, params any) error {
	if !ex.sseOK || (method == protocol.NotificationMessage && !ex.logs) {
		return nil
	}
	n, err := protocol.MarshalNotification(method, params)
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.answered {
		return nil // after the response the stream is done
	}
	ex.event(n)
	return nil
}

// Request implements handlers.Peer: in this era a server sends the
// client no request of its own; what it needs from the client travels as
// the input requests of an InputRequiredResult (basic/patterns/mrtr),
// which this server does not make.
func (ex *modernExchange) Request(_ context.Context, method string, _ any) (json.RawMessage, error) {
	return nil, protocol.Errorf(protocol.CodeInvalidRequest,
		"cannot send %s to a client of protocol %s: the server sends the client no requests in that era", method, protocol.Version20260728)
}

// CloseStream implements handlers.Peer: the era has no polling (no
// resumption), so the stream stays until the response.
func (ex *modernExchange) CloseStream(int) {}

// Answer implements handlers.Peer: the response now, before the handler
// returns (a call that overran its timeout, INV-MCP-TIMEOUT-001).
func (ex *modernExchange) Answer(result any) bool {
	out, err := ex.t.appendModernResponse(ex.id, protocol.MethodToolsCall, nil, result)
	reply := modernReply{body: out, status: http.StatusOK}
	if err != nil {
		ex.t.log.Error().Err(err).Msg("encode early answer")
		reply = modernReply{body: protocol.AppendError(nil, ex.id, protocol.Errorf(protocol.CodeInternalError, "internal error")), status: http.StatusOK}
	}
	return ex.answer(reply, true)
}

// finish sends the handler's response unless one was sent.
func (ex *modernExchange) finish(reply modernReply) { ex.answer(reply, false) }

// answer sends reply unless a response was sent; early says the handler
// still holds the request.
func (ex *modernExchange) answer(reply modernReply, early bool) bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.answered {
		return false
	}
	ex.answered = true
	if ex.streaming {
		ex.event(reply.body)
		return true
	}
	ex.whole(reply, early)
	return true
}

// whole writes reply as the whole JSON answer; under mu. It carries its
// Content-Length. An early answer (from the timeout guard,
// INV-MCP-TIMEOUT-001) is flushed, so that the client has all of it
// while the handler still holds the request (net/http would otherwise
// end the body only when the handler returns), and it closes the
// connection: the handler keeps it until it returns, and a client that
// sent its next request on it would wait that long. An early answer, and
// one larger than smallAnswer, is written under a write deadline, so that
// a client that stops reading is cut off rather than holding the handler
// and its connection; a smaller one fits the socket's buffers and is
// left to net/http, which sends it as the handler returns (as writeFinal
// and writeNow do for the legacy era).
func (ex *modernExchange) whole(reply modernReply, early bool) {
	h := ex.w.Header()
	h.Set("Content-Length", strconv.Itoa(len(reply.body)))
	if !early && len(reply.body) <= smallAnswer {
		writeJSON(ex.w, reply.status, reply.body)
		return
	}
	if early {
		h.Set("Connection", "close")
	}
	rc := http.NewResponseController(ex.w)
	_ = rc.SetWriteDeadline(ex.t.now().Add(ex.t.opts.WriteTimeout))
	writeJSON(ex.w, reply.status, reply.body)
	_ = rc.Flush()
	_ = rc.SetWriteDeadline(time.Time{})
}

// event writes one SSE event, starting the stream if need be; under mu.
// A client that stops reading is cut off by the write deadline; one that
// went away has cancelled the request, whose handler ends with its
// context.
func (ex *modernExchange) event(data []byte) {
	if !ex.streaming {
		ex.streaming = true
		startSSE(ex.w)
	}
	rc := http.NewResponseController(ex.w)
	_ = rc.SetWriteDeadline(ex.t.now().Add(ex.t.opts.WriteTimeout))
	buf := make([]byte, 0, len(data)+16)
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	_, _ = ex.w.Write(buf)
	_ = rc.Flush()
	_ = rc.SetWriteDeadline(time.Time{})
}

// modernClient is what a modern request says of its client, in its _meta
// (basic/index): the handlers.Session of that request alone. It names no
// session, and the methods that changed one are not of this era.
//
// The capabilities and client info are decoded when a handler first asks
// for them (most never do), from _meta members CheckModern found to be
// objects; one that does not decode into its type reads as empty, as an
// absent one would.
type modernClient struct {
	version string
	level   protocol.LoggingLevel
	raw     protocol.ModernMeta

	once sync.Once
	info protocol.Implementation
	caps protocol.ClientCapabilities
}

func newModernClient(m protocol.ModernMeta) *modernClient {
	return &modernClient{version: m.ProtocolVersion, level: m.LogLevel, raw: m}
}

func (c *modernClient) decode() {
	c.once.Do(func() {
		if json.Unmarshal(c.raw.ClientCapabilities, &c.caps) != nil {
			c.caps = protocol.ClientCapabilities{}
		}
		if c.raw.ClientInfo != nil && json.Unmarshal(c.raw.ClientInfo, &c.info) != nil {
			c.info = protocol.Implementation{}
		}
	})
}

func (c *modernClient) ID() string                      { return "" }
func (c *modernClient) ProtocolVersion() string         { return c.version }
func (c *modernClient) LogLevel() protocol.LoggingLevel { return c.level }

func (c *modernClient) ClientInfo() protocol.Implementation {
	c.decode()
	return c.info
}

func (c *modernClient) ClientCapabilities() protocol.ClientCapabilities {
	c.decode()
	return c.caps
}

// SetLogLevel, Subscribe and Unsubscribe change a client session; a
// modern request has none (logging/setLevel and resources/subscribe are
// answered 404 before a handler runs).
func (c *modernClient) SetLogLevel(protocol.LoggingLevel) {}

func (c *modernClient) Subscribe(string) error {
	return errors.New("a request of protocol 2026-07-28 has no client session to subscribe")
}

func (c *modernClient) Unsubscribe(string) {}
