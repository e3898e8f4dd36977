package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Relay is where what an upstream sends during one tools/call goes: the
// client that made the call (DESIGN.md, "Gateway fidelity"). A nil Relay
// drops notifications and refuses the server's requests.
type Relay interface {
	// Progress forwards the call's notifications/progress; total is nil
	// when the server did not give one.
	Progress(ctx context.Context, progress float64, total *float64, message string)
	// Log forwards a notifications/message the server sent on the call's
	// stream (its params as sent).
	Log(ctx context.Context, params json.RawMessage)
	// Request forwards a server-to-client request the server sent on the
	// call's stream (sampling/createMessage, elicitation/create,
	// roots/list) and returns the client's result. A *protocol.Error is
	// passed to the server as the JSON-RPC error of its request.
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Why tools/call does not go through the go-sdk's ClientSession: the SDK
// delivers the notifications and requests a server sends on a call's
// stream to session-wide handlers, which cannot tell which call (and so
// which of the gateway's many clients sharing the session) they belong
// to. Sending the call itself, on the SDK's session (its id and
// protocol version), and reading its answer here, every message on the
// call's stream is the call's: progress, log messages and the server's
// requests reach the client that made it. The result's content blocks
// are kept as the server wrote them (never decoded into Go types and
// encoded again), which is also what makes the hop cheap.

// notMCP says a message on the call's stream is not valid MCP; none of it
// is shown (it may be anything the peer sent).
const notMCP = "protocol error: the server's answer is not valid MCP"

// errSessionGone marks an answer of 404 to a request on a session: the
// server does not know the session (basic/transports, "Session
// Management"), so it did not process the request.
var errSessionGone = errors.New("session not found")

// relayedRequests bounds the server-to-client requests one call may have
// waiting at once: each holds a goroutine until the client answers.
const relayedRequests = 16

// maxRelayedRequestBytes bounds the params of a server request relayed to
// the client (a sampling request may carry an image); maxRelayedBytes
// those of a relayed notification (a log message, progress). Larger ones
// are refused or dropped: the client session keeps what it is sent in its
// streams' logs.
const (
	maxRelayedRequestBytes = 1 << 20
	maxRelayedBytes        = 64 << 10
)

// maxResumes bounds how often one call's event stream is resumed (GET
// with Last-Event-ID) after the server closed it without an answer
// (basic/transports, "Resumability and Redelivery").
const maxResumes = 10

// callState is one call in flight on a session.
type callState struct {
	c      *conn
	id     string // the request's id, also its progress token
	relay  Relay
	wg     sync.WaitGroup
	slots  chan struct{}
	lastID string        // the last event id seen, to resume from
	retry  time.Duration // the server's reconnection delay, if it sent one
}

// callStream sends one tools/call on c's session and reads its answer,
// relaying what else the server sends on the call's stream. ctx bounds
// it; when ctx ends first, the server is told (notifications/cancelled).
func (c *conn) callStream(ctx context.Context, name string, args json.RawMessage, round Round, relay Relay) (CallResult, error) {
	if c.modern() {
		return c.sdkCall(ctx, name, args, round)
	}
	op := "tools/call " + name
	cs := &callState{c: c, id: "mcp-runtime-" + strconv.FormatInt(c.ids.Add(1), 10), relay: relay,
		slots: make(chan struct{}, relayedRequests)}
	if len(args) > 0 && !json.Valid(args) {
		return CallResult{}, permanent(&Error{Kind: ErrInvocationFailed, Server: c.cfg.ID, Op: op, Err: errors.New("the arguments are not valid JSON")})
	}
	body := cs.request(ctx, name, args)
	rctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel() // ends the relayed requests still waiting for the client
		cs.wg.Wait()
	}()
	ex := &exchange{call: true}
	res, err := cs.run(withExchange(rctx, ex), body)
	if err == nil {
		return res, nil
	}
	var answered answerError
	if errors.Is(err, errSessionGone) && !errors.As(err, &answered) {
		// The server did not take the call: it no longer knows the
		// session (a restart). A new session may send it again.
		ex.sent.Store(false)
	}
	if ctx.Err() != nil && ex.sent.Load() {
		c.cancelRequest(ctx, cs.id)
	}
	rerr := c.requestError(ctx, ex, op, err)
	var e *Error
	if errors.As(err, &answered) && errors.As(rerr, &e) {
		// What went wrong is in this call's own answer (too large, not
		// MCP, cut short): the session, which other calls share, is fine.
		e.callOnly = true
	}
	return CallResult{}, rerr
}

// answerError marks a failure that came after the server accepted the
// call's request: in its answer, or in resuming its stream.
type answerError struct{ err error }

func (e answerError) Error() string { return e.err.Error() }
func (e answerError) Unwrap() error { return e.err }

// request is the JSON of the call, with its id as the progress token when
// the caller relays progress and ctx's trace context when it has one
// (tracing.go). It is written by hand, on the hot path of every proxied
// call: name and id are escaped strings, args is the client's arguments
// as they were decoded (valid JSON).
func (cs *callState) request(ctx context.Context, name string, args json.RawMessage) []byte {
	id := protocol.AppendString(make([]byte, 0, len(cs.id)+2), cs.id)
	traced := cs.c.propagate && trace.SpanContextFromContext(ctx).IsValid()
	size := 64 + len(name) + len(args) + 2*len(id)
	if traced {
		size += 96 + maxTracestate // the members appendTraceMeta writes, at most
	}
	p := make([]byte, 0, size)
	p = append(p, `{"name":`...)
	p = protocol.AppendString(p, name)
	if len(args) > 0 {
		p = append(p, `,"arguments":`...)
		p = append(p, args...)
	}
	if cs.relay != nil || traced {
		p = append(p, `,"_meta":{`...)
		if cs.relay != nil {
			p = append(p, `"progressToken":`...)
			p = append(p, id...)
		}
		if traced {
			p = appendTraceMeta(p, ctx, cs.relay != nil)
		}
		p = append(p, '}')
	}
	p = append(p, '}')
	return protocol.AppendRequest(make([]byte, 0, len(p)+len(id)+48), protocol.ID(id), protocol.MethodToolsCall, p)
}

// run posts the call and reads messages until its response.
func (cs *callState) run(ctx context.Context, body []byte) (CallResult, error) {
	resp, err := cs.c.post(ctx, body)
	if err != nil {
		return CallResult{}, err
	}
	res, err := cs.follow(ctx, resp)
	if err != nil && ctx.Err() == nil {
		err = answerError{err}
	}
	return res, err
}

// follow reads the call's answer, resuming its stream when the server
// ends it early.
func (cs *callState) follow(ctx context.Context, resp *http.Response) (CallResult, error) {
	for resumes := 0; ; resumes++ {
		res, done, err := cs.read(ctx, resp)
		resp.Body.Close()
		if done || err != nil {
			return res, err
		}
		if err := ctx.Err(); err != nil {
			return CallResult{}, err // the reader reports a cancelled read as the stream's end
		}
		// The stream ended without the response: resume it.
		if cs.lastID == "" || resumes == maxResumes {
			return CallResult{}, failed("the server ended the call's stream without answering", nil)
		}
		if err := sleepCtx(ctx, cs.retry); err != nil {
			return CallResult{}, err
		}
		if resp, err = cs.c.resume(ctx, cs.lastID); err != nil {
			return CallResult{}, err
		}
	}
}

// read reads one answer to the call (JSON or an event stream); done
// reports that the call's response was in it.
func (cs *callState) read(ctx context.Context, resp *http.Response) (CallResult, bool, error) {
	ct := resp.Header.Get("Content-Type")
	if ct != "application/json" { // the common spelling needs no parsing
		ct, _, _ = mime.ParseMediaType(ct)
	}
	if ct == "application/json" {
		b, err := readAnswer(resp)
		if err != nil {
			return CallResult{}, false, err
		}
		return cs.handle(ctx, b)
	}
	events := &eventReader{r: bufio.NewReaderSize(resp.Body, 4<<10), max: int(cs.c.maxBody)}
	for {
		if err := ctx.Err(); err != nil {
			return CallResult{}, false, err // nothing more is acted on once the call is over
		}
		data, err := events.next(cs)
		if errors.Is(err, io.EOF) {
			return CallResult{}, false, nil
		}
		if err != nil {
			return CallResult{}, false, err
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue // a priming event, or a comment
		}
		if res, done, err := cs.handle(ctx, data); done || err != nil {
			return res, done, err
		}
	}
}

// maxAnswerPrealloc bounds what a JSON answer's announced length may
// reserve before its bytes arrive: an upstream announcing 16 MiB and
// sending one byte must not make the gateway hold 16 MiB per call.
const maxAnswerPrealloc = 64 << 10

// readAnswer reads a JSON answer whole, into a buffer sized from the
// length it announced (up to maxAnswerPrealloc; it grows with the data
// beyond that). The body's reader enforces the transport's bound.
func readAnswer(resp *http.Response) ([]byte, error) {
	if resp.ContentLength <= 0 {
		return io.ReadAll(resp.Body)
	}
	var b bytes.Buffer
	b.Grow(int(min(resp.ContentLength, maxAnswerPrealloc)) + 1) // +1: ReadFrom sees EOF without growing
	_, err := b.ReadFrom(resp.Body)
	return b.Bytes(), err
}

// eventReader reads a text/event-stream one line at a time, in time
// linear in its length whatever the chunks it arrives in (a reader that
// searches the whole pending buffer for an event's end on every read is
// quadratic in a large event trickled in small chunks). An event's data
// is bounded by max.
type eventReader struct {
	r    *bufio.Reader
	max  int
	data []byte
}

// next returns the data of the next event (data lines joined with
// newlines, as the SSE specification says), taking its id and retry
// fields into cs; io.EOF at the stream's end.
func (er *eventReader) next(cs *callState) ([]byte, error) {
	er.data = er.data[:0]
	seen := false
	for {
		line, err := er.line()
		if err != nil {
			if errors.Is(err, io.EOF) && seen {
				return er.data, nil // an event the stream ended without a blank line after
			}
			return nil, err
		}
		if len(line) == 0 {
			if seen {
				return er.data, nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if seen {
				er.data = append(er.data, '\n')
			}
			er.data = append(er.data, value...)
			seen = true
		case "id":
			cs.lastID = string(value)
		case "retry":
			if ms, err := strconv.Atoi(string(value)); err == nil && ms >= 0 {
				cs.retry = min(time.Duration(ms)*time.Millisecond, 10*time.Second)
			}
		}
	}
}

// line returns the next line without its end (LF, CR LF), bounded by max.
func (er *eventReader) line() ([]byte, error) {
	line, err := er.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(er.data) > er.max {
				return nil, failed(fmt.Sprintf("an event of the call's stream is larger than %d bytes", er.max), errResponseTooLarge)
			}
			line, err = er.r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return nil, err
	}
	if len(er.data)+len(line) > er.max {
		return nil, failed(fmt.Sprintf("an event of the call's stream is larger than %d bytes", er.max), errResponseTooLarge)
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// handle acts on one message; done reports the call's response.
func (cs *callState) handle(ctx context.Context, data []byte) (CallResult, bool, error) {
	m, err := decodeCallMessage(data)
	if err != nil {
		return CallResult{}, false, failed(notMCP, err)
	}
	if m.Method != "" {
		// What is relayed may outlive data, which an event stream's
		// reader reuses for its next event.
		m.ID, m.Params = bytes.Clone(m.ID), bytes.Clone(m.Params)
	}
	switch {
	case m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null":
		cs.serverRequest(ctx, m)
	case m.Method != "":
		if len(m.Params) <= maxRelayedBytes {
			cs.notification(ctx, m)
		}
	case string(m.ID) == strconv.Quote(cs.id):
		if m.Error != nil {
			return CallResult{}, true, m.Error
		}
		res, err := decodeCallResult(m.Result)
		return res, true, err
	}
	return CallResult{}, false, nil
}

// notification relays the call's progress and log messages; a list
// change or a resource update the server announces here is taken in as
// on its event stream.
func (cs *callState) notification(ctx context.Context, m callMessage) {
	switch m.Method {
	case protocol.NotificationProgress:
		var p struct {
			Token    json.RawMessage `json:"progressToken"`
			Progress float64         `json:"progress"`
			Total    *float64        `json:"total"`
			Message  string          `json:"message"`
		}
		if json.Unmarshal(m.Params, &p) == nil && string(p.Token) == strconv.Quote(cs.id) && cs.relay != nil {
			cs.relay.Progress(ctx, p.Progress, p.Total, p.Message)
		}
	case protocol.NotificationMessage:
		if cs.relay != nil {
			cs.relay.Log(ctx, m.Params)
		}
	case protocol.NotificationToolsListChanged, protocol.NotificationPromptsListChanged, protocol.NotificationResourcesListChange:
		if cs.c.onToolsChanged != nil {
			cs.c.onToolsChanged()
		}
	case protocol.NotificationResourcesUpdated:
		var p struct {
			URI string `json:"uri"`
		}
		if cs.c.onResourceUpdated != nil && json.Unmarshal(m.Params, &p) == nil && p.URI != "" {
			cs.c.onResourceUpdated(p.URI)
		}
	}
}

// serverRequest relays a request the server made during the call to the
// client, on a goroutine of its own (the server may go on sending
// progress meanwhile), and posts the client's answer back.
func (cs *callState) serverRequest(ctx context.Context, m callMessage) {
	// Every answer, a refusal included, takes a slot and goes on a
	// goroutine bounded by the call's context: an upstream sending
	// requests faster than they are answered loses the extra ones (it
	// times them out), and none outlives the call.
	select {
	case cs.slots <- struct{}{}:
	default:
		return
	}
	answer := func(result json.RawMessage, perr *protocol.Error) {
		var out []byte
		if perr != nil {
			out = protocol.AppendError(nil, protocol.ID(m.ID), perr)
		} else {
			out, _ = protocol.AppendResponse(nil, protocol.ID(m.ID), result)
		}
		// An exchange of its own: a failed answer is not the call's failure.
		cs.c.notify(withExchange(ctx, &exchange{call: true}), out)
	}
	cs.wg.Add(1)
	go func() {
		defer func() { <-cs.slots; cs.wg.Done() }()
		switch {
		case m.Method == protocol.MethodPing:
			answer(json.RawMessage(`{}`), nil)
			return
		case cs.relay == nil:
			answer(nil, protocol.Errorf(protocol.CodeMethodNotFound, "%s is not relayed outside a client's call", m.Method))
			return
		case len(m.Params) > maxRelayedRequestBytes:
			answer(nil, protocol.Errorf(protocol.CodeInvalidParams, "%s params are %d bytes; the gateway relays at most %d", m.Method, len(m.Params), maxRelayedRequestBytes))
			return
		}
		result, err := cs.relay.Request(ctx, m.Method, m.Params)
		var perr *protocol.Error
		switch {
		case errors.As(err, &perr):
			answer(nil, perr)
		case err != nil:
			answer(nil, protocol.Errorf(protocol.CodeInternalError, "the client did not answer %s: %v", m.Method, err))
		default:
			answer(result, nil)
		}
	}()
}

// post sends body on the session and returns the answer to read; an
// answer that is not 2xx is an error (the transport recorded why).
func (c *conn) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	// Keys in their canonical form, assigned without Header.Set's
	// canonicalisation: this is every proxied call's request.
	req.Header = make(http.Header, 4)
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["Accept"] = []string{"application/json, text/event-stream"}
	c.sessionHeaders(req)
	return c.do(req)
}

// resume asks for the rest of the call's stream after lastID.
func (c *conn) resume(ctx context.Context, lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.URL, nil)
	if err != nil {
		return nil, err
	}
	c.sessionHeaders(req)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	// The transport bounds answers to POSTs; the rest of a call's stream
	// gets the same bound.
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.LimitReader(resp.Body, c.maxBody), resp.Body}
	return resp, nil
}

func (c *conn) do(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body.Close()
		f := statusFailure(resp.StatusCode, true)
		if resp.StatusCode == http.StatusNotFound {
			f.cause = errSessionGone
		}
		return nil, f
	}
	return resp, nil
}

func (c *conn) sessionHeaders(req *http.Request) {
	if id := c.session.ID(); id != "" {
		req.Header["Mcp-Session-Id"] = []string{id}
	}
	if c.init != nil && c.init.ProtocolVersion != "" {
		req.Header["Mcp-Protocol-Version"] = []string{c.init.ProtocolVersion}
	}
}

// notify posts a notification or a response to the server, best effort:
// the server answers 202 and nothing is read.
func (c *conn) notify(ctx context.Context, msg []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(msg))
	if err != nil {
		return
	}
	c.sessionHeaders(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := c.http.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}

// cancelRequest tells the server the call was given up
// (notifications/cancelled), bounded by a second of its own: ctx has
// ended already.
func (c *conn) cancelRequest(ctx context.Context, id string) {
	params, _ := json.Marshal(map[string]string{"requestId": id, "reason": "the client cancelled the call or its deadline passed"})
	msg, err := protocol.MarshalNotification(protocol.NotificationCancelled, json.RawMessage(params))
	if err != nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	c.notify(cctx, msg)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// modernEra is the first protocol revision without sessions, whose
// requests each carry their own _meta and headers (2026-07-28).
const modernEra = "2026-07-28"

// modern reports whether the session negotiated the modern era (the
// go-sdk probes server/discover first). Its requests are the SDK's to
// build; such a server sends no requests on a call's stream (it asks with
// multi-round-trip results instead), so only progress and log messages
// are lost to the relay there.
func (c *conn) modern() bool {
	return c.init != nil && c.init.ProtocolVersion >= modernEra
}

// discover sends server/discover, the modern era's check that a server
// answers: the go-sdk has no method for it after Connect. An answer
// that is a JSON-RPC error, or no answer (another media type, a result
// that is not an object), is a failure, as it is to the go-sdk's ping;
// one on an SSE stream is taken as an answer, as the server sent a 2xx
// for it.
func (c *conn) discover(ctx context.Context) error {
	meta, err := json.Marshal(map[string]any{
		protocol.MetaProtocolVersion:    c.init.ProtocolVersion,
		protocol.MetaClientCapabilities: struct{}{},
	})
	if err != nil {
		return err
	}
	body := []byte(`{"jsonrpc":"2.0","id":"mcp-runtime-discover","method":"server/discover","params":{"_meta":` + string(meta) + `}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(protocol.HeaderMethod, protocol.MethodServerDiscover)
	c.sessionHeaders(req)
	resp, err := c.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt {
	case "text/event-stream":
		return nil
	case "application/json":
	default:
		return failed("the answer to server/discover is neither JSON nor an event stream", nil)
	}
	answer, err := readAnswer(resp)
	if err != nil {
		return err
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *protocol.Error `json:"error"`
	}
	switch {
	case json.Unmarshal(answer, &msg) != nil:
		return failed("the answer to server/discover is not JSON-RPC", nil)
	case msg.Error != nil:
		return failed(fmt.Sprintf("server/discover answered with error %d: %s", msg.Error.Code, msg.Error.Message), nil)
	case len(msg.Result) == 0 || msg.Result[0] != '{':
		return failed("the answer to server/discover has no result", nil)
	}
	return nil
}

// sdkCall sends one round of tools/call through the go-sdk session
// (modern era). The SDK's own answering of a server's input requests is
// off (dial): the requests go to the client the call is for, as an
// InputRequiredResult (res.Input), and its retry comes back as round.
func (c *conn) sdkCall(ctx context.Context, name string, args json.RawMessage, round Round) (CallResult, error) {
	op := "tools/call " + name
	params := &mcp.CallToolParams{Name: name, RequestState: round.RequestState}
	if len(args) > 0 {
		params.Arguments = args
	}
	if len(round.ClientCapabilities) > 0 {
		// The SDK keeps a _meta key the caller set: the server sees the
		// capabilities of the client it would ask, not the gateway's.
		params.Meta = mcp.Meta{mcp.MetaKeyClientCapabilities: round.ClientCapabilities}
	}
	if c.propagate {
		tp, ts := traceContext(ctx)
		if tp != "" && params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		if tp != "" {
			params.Meta[metaTraceparent] = tp
		}
		if ts != "" {
			params.Meta[metaTracestate] = ts
		}
	}
	if len(round.InputResponses) > 0 {
		// The SDK takes typed answers: each is decoded as the result its
		// members say it is (an elicitation's action, a sampling's role,
		// roots), and sent as the client wrote it (verbatimAnswer).
		params.InputResponses = make(mcp.InputResponseMap, len(round.InputResponses))
		for k, raw := range round.InputResponses {
			var one mcp.InputResponseMap
			if err := json.Unmarshal([]byte(`{"r":`+string(raw)+`}`), &one); err != nil {
				return CallResult{}, permanent(&Error{Kind: ErrInvocationFailed, Server: c.cfg.ID, Op: op,
					Err: fmt.Errorf("the client's answer %q is not the result of an elicitation, a sampling or roots/list", k)})
			}
			params.InputResponses[k] = verbatimAnswer{one["r"], raw}
		}
	}
	ex := &exchange{call: true}
	res, err := c.session.CallTool(withExchange(ctx, ex), params)
	if err != nil {
		return CallResult{}, c.requestError(ctx, ex, op, err)
	}
	if res.NeedsInput() {
		return inputRequired(res)
	}
	out := CallResult{IsError: res.IsError, Content: make([]json.RawMessage, 0, len(res.Content))}
	for i, block := range res.Content {
		b, err := json.Marshal(block)
		if err != nil {
			return CallResult{}, fmt.Errorf("encoding the result's content block %d: %w", i, err)
		}
		out.Content = append(out.Content, b)
	}
	if res.StructuredContent != nil {
		if out.StructuredContent, err = json.Marshal(res.StructuredContent); err != nil {
			return CallResult{}, fmt.Errorf("encoding the result's structuredContent: %w", err)
		}
	}
	if len(res.Meta) > 0 {
		if out.Meta, err = json.Marshal(res.Meta); err != nil {
			return CallResult{}, fmt.Errorf("encoding the result's _meta: %w", err)
		}
	}
	return out, nil
}

// verbatimAnswer is a client's answer as the SDK typed it, encoded as the
// client wrote it: the typed form would turn an elicitation's integers
// into float64s (losing digits beyond 53 bits) and drop members its type
// lacks, and the answer is the client's, for the server that asked
// (basic/patterns/mrtr).
type verbatimAnswer struct {
	mcp.InputResponse
	raw json.RawMessage
}

func (a verbatimAnswer) MarshalJSON() ([]byte, error) { return a.raw, nil }

// inputRequired is the CallResult of a server's InputRequiredResult.
func inputRequired(res *mcp.CallToolResult) (CallResult, error) {
	in := &InputRequired{State: res.RequestState}
	if len(res.InputRequests) > 0 {
		raw, err := json.Marshal(res.InputRequests)
		if err == nil {
			err = json.Unmarshal(raw, &in.Requests)
		}
		if err != nil {
			return CallResult{}, fmt.Errorf("encoding the server's inputRequests: %w", err)
		}
	}
	return CallResult{Input: in}, nil
}
