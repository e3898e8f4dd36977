package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
)

// conn is one live MCP session with an upstream server, through the
// official go-sdk client. It knows nothing about state or retries; it
// bounds every operation by the server's timeouts and turns failures into
// *Error values (INV-MCP-ECO-100, INV-MCP-ECO-301).
type conn struct {
	cfg     Config
	session *mcp.ClientSession
	init    *mcp.InitializeResult
	// closed is shared by the copies withConfig makes of one session, so
	// the session is closed once and its watcher can tell a close of ours
	// from the server going away.
	closed *atomic.Bool
	// probe is what the session's transport learned (see probe).
	probe *probe
	// http is the session's HTTP client (its transport adds the server's
	// headers and bounds every answer); tool calls are sent with it
	// (callstream.go), ids numbers them, maxBody bounds one event.
	http              *http.Client
	ids               *atomic.Int64
	maxBody           int64
	propagate         bool // see dialParams
	onToolsChanged    func()
	onResourceUpdated func(uri string)
}

// withConfig is c for a server whose call settings (request timeout,
// retries, category) changed but whose connection settings did not: the
// same session under the new Config.
func (c *conn) withConfig(cfg Config) *conn {
	n := *c
	n.cfg = cfg
	return &n
}

// dialParams is what dial needs besides the server's Config.
type dialParams struct {
	base          *http.Client
	maxBody       int64 // see DefaultMaxResponseBytes
	clientName    string
	clientVersion string
	// deployment is this deployment's id, sent in HeaderVia.
	deployment string
	denied     deniedNetworks
	// propagate sends a call's trace context to the server (tracing.go):
	// only when tracing is on, so that a gateway that does not trace
	// passes on what it was sent and nothing else.
	propagate bool
	// onToolsChanged is called when the server sends
	// notifications/tools/list_changed (or the prompts' or resources',
	// see surfaceHandlers).
	onToolsChanged func()
	// onResourceUpdated is called with the URI of the server's
	// notifications/resources/updated.
	onResourceUpdated func(uri string)
	// onStreamLost is called, with the session's probe, when a request
	// of the session's event stream fails to reach the server: the SDK
	// would try again for many seconds before giving the session up,
	// while the server is most likely gone.
	onStreamLost func(*probe)
}

// DefaultMaxResponseBytes bounds the body of one upstream answer to a
// POST (a tools/list page, a tools/call result): the SDK reads a whole
// answer into memory, and a server that sends gigabytes must not take the
// gateway down with it. The guardrails truncate results far below this.
const DefaultMaxResponseBytes = 16 << 20

// errResponseTooLarge ends the read of an answer over the bound; the
// request fails like any transport failure.
var errResponseTooLarge = errors.New("the answer is larger than the gateway accepts from an upstream")

// upstreamTransport is the http.RoundTripper of one session. It adds the
// server's configured headers (credentials for it, typically) to requests
// to its own scheme and host only — a redirect elsewhere must not carry them, which
// Go's own cross-host stripping would not prevent here, since a
// RoundTripper adds them after the client decided what to forward — and
// HeaderVia to every request but tool calls; it refuses a redirect to an IP address in a
// denied network (the dialer checks every other address, but a proxy
// dials for us); it bounds the body of every answer to a POST; and it
// describes every failure in words of its own (see failure.go) for the
// operation the request belongs to (its exchange) and the session (probe).
type upstreamTransport struct {
	base       http.RoundTripper
	scheme     string // the configured URL's scheme
	host       string // the configured URL's host[:port]
	headers    map[string]string
	deployment string
	denied     deniedNetworks
	propagate  bool // see dialParams
	maxBody    int64
	probe      *probe
	streamLost func(*probe)
}

func (t *upstreamTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ex := exchangeFrom(r.Context())
	ex.begin()
	// The scheme counts too: an https upstream redirecting to http on the
	// same host would otherwise have its credentials sent in clear text.
	home := strings.EqualFold(r.URL.Host, t.host) && strings.EqualFold(r.URL.Scheme, t.scheme)
	if !home {
		if err := t.denied.checkHost(r.URL.Hostname()); err != nil {
			return nil, t.fail(ex, transportFailure(err))
		}
	}
	// Only the handshake, discovery and health checks say who sends them
	// (see HeaderVia): that is where a loop shows, and a tool call is
	// spared the copy of its request.
	announce := ex != nil && !ex.call
	// Trace context to the server itself only, not to where it
	// redirects.
	traced := t.propagate && home && trace.SpanContextFromContext(r.Context()).IsValid()
	if announce || traced || home && len(t.headers) > 0 {
		// A RoundTripper must not modify the caller's request.
		r = r.Clone(r.Context())
		if announce {
			r.Header.Set(HeaderVia, t.deployment)
		}
		if traced {
			injectHeaders(r.Context(), r.Header)
		}
		if home {
			for k, v := range t.headers {
				r.Header.Set(k, v)
			}
		}
	}
	resp, err := t.base.RoundTrip(r)
	if ex != nil && ex.call && (err == nil || !beforeSend(err)) {
		ex.sent.Store(true)
	}
	if err != nil {
		if r.Context().Err() != nil {
			return nil, err // the operation gave up; that is no failure of the server's
		}
		if r.Method == http.MethodGet && t.streamLost != nil && (ex == nil || !ex.call) {
			t.streamLost(t.probe)
		}
		return nil, t.fail(ex, transportFailure(err))
	}
	if announce && t.sawSelf(resp.Header.Values(HeaderDeployments)) {
		resp.Body.Close()
		return nil, t.fail(ex, loopFailure())
	}
	if r.Method == http.MethodPost {
		if f := answerFailure(resp, r); f != nil {
			t.fail(ex, f)
		}
		resp.Body = &cappedBody{ReadCloser: resp.Body, max: t.maxBody, left: t.maxBody, ctx: r.Context(), ex: ex, probe: t.probe}
	}
	return resp, nil
}

// fail records f for the request's operation and the session, and
// returns it as the request's error.
func (t *upstreamTransport) fail(ex *exchange, f *failure) *failure {
	ex.record(f)
	t.probe.last.Store(f)
	return f
}

// sawSelf records the deployments an answer names and reports whether
// they make a loop this deployment must break (see breaksLoop). An
// unchanged header is not parsed again.
func (t *upstreamTransport) sawSelf(values []string) bool {
	if len(values) == 0 {
		if t.probe.seen.Load() != nil {
			t.probe.seen.Store(nil)
		}
		return false
	}
	raw := strings.Join(values, ",")
	d := t.probe.seen.Load()
	if d == nil || d.raw != raw {
		d = &deployments{raw: raw}
		d.from, d.ids = parseDeployments(values)
		t.probe.seen.Store(d)
	}
	return breaksLoop(t.deployment, d.from, d.ids)
}

// answerFailure classifies the head of an answer to a POST that cannot
// be an MCP answer: a status other than 2xx, or a body that is neither
// JSON nor an event stream. The SDK still reads it (a JSON-RPC error may
// come with a 4xx); this only says what went wrong should the request
// fail.
func answerFailure(resp *http.Response, r *http.Request) *failure {
	code := resp.StatusCode
	if code < 200 || code > 299 {
		return statusFailure(code, r.Header.Get("Mcp-Session-Id") != "")
	}
	if code == http.StatusAccepted || code == http.StatusNoContent {
		return nil
	}
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	ct = strings.TrimSpace(ct)
	if !strings.EqualFold(ct, "application/json") && !strings.EqualFold(ct, "text/event-stream") {
		return failed(fmt.Sprintf("not an MCP server: the answer (HTTP %d) is neither JSON nor an event stream", code), nil)
	}
	return nil
}

// cappedBody bounds an answer's body to left bytes and, when its
// operation has a budget, the operation's answers together to it.
type cappedBody struct {
	io.ReadCloser
	max   int64 // this answer's bound
	left  int64
	ctx   context.Context // the request's
	ex    *exchange       // nil outside an operation
	probe *probe
}

func (b *cappedBody) Read(p []byte) (int, error) {
	limit, shared := b.left, false
	if ex := b.ex; ex != nil && ex.budget > 0 {
		if l := ex.left.Load(); l < limit {
			limit, shared = l, true
		}
	}
	if limit <= 0 {
		// Exactly at the bound: only an answer that goes on is too large.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		switch {
		case n > 0 && shared:
			return 0, b.ex.overBudget()
		case n > 0:
			f := failed(fmt.Sprintf("the answer is larger than the %d bytes the gateway accepts from an upstream", b.max), errResponseTooLarge)
			b.ex.record(f)
			b.probe.last.Store(f)
			return 0, errResponseTooLarge
		}
		return 0, b.readErr(err)
	}
	if int64(len(p)) > limit {
		p = p[:limit]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.ex != nil && b.ex.budget > 0 {
		b.ex.left.Add(-int64(n))
	}
	return n, b.readErr(err)
}

// readErr records a failure reading the body (the connection cut midway).
func (b *cappedBody) readErr(err error) error {
	if err == nil || errors.Is(err, io.EOF) || b.ctx.Err() != nil {
		return err // the end, or the operation gave up
	}
	f := transportFailure(err)
	b.ex.record(f)
	b.probe.last.Store(f)
	return err
}

// httpClientFor returns base with the session's transport (see
// upstreamTransport). Its Timeout is left as base's: the SDK keeps
// long-lived streams open, and every request is bounded by its own
// context instead.
func httpClientFor(base *http.Client, cfg Config, p dialParams, pr *probe) *http.Client {
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	scheme, host := "", ""
	if u, err := url.Parse(cfg.URL); err == nil {
		scheme, host = u.Scheme, u.Host
	}
	c.Transport = &upstreamTransport{base: rt, scheme: scheme, host: host, headers: cfg.Headers, deployment: p.deployment,
		denied: p.denied, propagate: p.propagate, maxBody: p.maxBody, probe: pr, streamLost: p.onStreamLost}
	return &c
}

// dial connects to the server and runs the initialize handshake, both
// bounded by connectionTimeoutMs (INV-MCP-ECO-100). The session outlives
// ctx: the SDK's streamable transport detaches the connection's own
// context from the one given to Connect, so the connect deadline only
// bounds the handshake, never the session.
func dial(ctx context.Context, cfg Config, p dialParams) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectionTimeout())
	defer cancel()
	ex := &exchange{}
	ctx = withExchange(ctx, ex)

	opts := &mcp.ClientOptions{
		// The server's requests made during a tool call are relayed to the
		// client that made the call (callstream.go), which answers them or
		// refuses them for want of the capability; so the gateway declares
		// them all. Requests made outside a call belong to no client: the
		// SDK refuses them, having no handler.
		Capabilities: &mcp.ClientCapabilities{
			Elicitation: &mcp.ElicitationCapabilities{},
			//lint:ignore SA1019 sampling is part of the protocol revisions the gateway serves and relays (2025-11-25)
			Sampling: &mcp.SamplingCapabilities{},
			//lint:ignore SA1019 roots are part of the protocol revisions the gateway serves and relays (2025-11-25)
			RootsV2: &mcp.RootCapabilities{},
		},
		// A modern server asks for the same input with an
		// InputRequiredResult (basic/patterns/mrtr); the SDK would answer
		// it itself, from handlers the gateway does not have. The result
		// goes to the client instead, and its retry comes back as a
		// Round (sdkCall).
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}
	if p.onToolsChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { p.onToolsChanged() }
	}
	p.surfaceHandlers(opts)
	client := mcp.NewClient(&mcp.Implementation{Name: p.clientName, Version: p.clientVersion}, opts)
	pr := &probe{}
	hc := httpClientFor(p.base, cfg, p, pr)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   cfg.URL,
		HTTPClient: hc,
		// MaxRetries is left at the SDK's default: it only governs
		// resuming the server's SSE streams, and without it one closed
		// standalone stream (a server restarting its GET handler, a proxy
		// idle timeout) would end the whole session. A session the SDK
		// gives up on is noticed by the manager's watcher (Session.Wait)
		// and replaced with its own backoff.
	}
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		e := &Error{Kind: ErrInvocationFailed, Server: cfg.ID, Op: "connect", url: cfg.URL}
		f := ex.failure()
		switch {
		case f != nil:
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			e.Kind, e.Op, e.Timeout = ErrConnectionTimeout, "initialize", true
			f = failed(fmt.Sprintf("no answer within %v (connectionTimeoutMs)", cfg.ConnectionTimeout()), err)
		case errors.As(err, &f):
		default:
			f = otherFailure(err, false)
		}
		e.Err = f
		if f.final() {
			return nil, permanent(e)
		}
		return nil, e
	}
	if init := session.InitializeResult(); init != nil && init.Capabilities != nil &&
		//lint:ignore SA1019 logging is part of the protocol revisions the gateway serves and relays (2025-11-25)
		init.Capabilities.Logging != nil {
		// Every message the server logs during a call reaches the gateway,
		// which passes on those at or above the calling client's level.
		// A server refusing it still serves calls.
		//lint:ignore SA1019 logging is part of the protocol revisions the gateway serves and relays (2025-11-25)
		_ = session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
	}
	return &conn{cfg: cfg, session: session, init: session.InitializeResult(), closed: new(atomic.Bool), probe: pr,
		http: hc, ids: new(atomic.Int64), maxBody: p.maxBody, propagate: p.propagate, onToolsChanged: p.onToolsChanged, onResourceUpdated: p.onResourceUpdated}, nil
}

// requestError turns a failed request into an *Error of kind
// ErrInvocationFailed, described in words of ours (see failure.go). A
// server's JSON-RPC error answer is permanent (sending the same request
// again gets the same answer), and so is a loop, a denied address or a
// limit; a transport failure or a timeout may be retried.
func (c *conn) requestError(ctx context.Context, ex *exchange, op string, err error) error {
	e := &Error{Kind: ErrInvocationFailed, Server: c.cfg.ID, Op: op, url: c.cfg.URL, sent: ex != nil && ex.sent.Load()}
	f := ex.failure()
	switch {
	case f != nil:
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		e.Timeout = true
		f = failed(fmt.Sprintf("no answer within %v (requestTimeoutMs)", c.cfg.RequestTimeout()), err)
	case errors.As(err, &f):
	default:
		f = otherFailure(err, true)
	}
	e.Err = f
	if f.final() || serverAnswered(err) {
		return permanent(e)
	}
	return e
}

// codeRejected is the code of the go-sdk's jsonrpc2.ErrRejected, which
// wraps every failure of the HTTP request itself ("rejected by
// transport"): an error with it is no answer of the server's.
const codeRejected = -32005

// serverAnswered reports whether err is a JSON-RPC error the server sent.
func serverAnswered(err error) bool {
	var wire *jsonrpc.Error
	return errors.As(err, &wire) && wire.Code != codeRejected
}

// broken reports whether err means the session cannot be used again and
// must be replaced: a transport failure. A server's JSON-RPC error answer
// or a slow answer (a timeout) says nothing against the session; treating
// a slow tool as a dead server would mark healthy servers failed.
func broken(err error) bool {
	var e *Error
	switch {
	case err == nil, serverAnswered(err):
		return false
	case errors.As(err, &e) && (e.Timeout || e.callOnly):
		return false
	}
	return true
}

// listLimits bound one server's tool list (federation.maxToolsPerUpstream,
// federation.maxToolListBytes).
type listLimits struct {
	maxTools int
	maxBytes int64
}

// maxListPages bounds the pages of one list: a server that keeps
// returning cursors for empty pages would loop forever.
const maxListPages = 1000

// listTools fetches the whole tool list, following NextCursor, under one
// requestTimeoutMs deadline per page. The limits are checked while
// paging: the bytes as they are read, so an answer over the budget is not
// read to its end, and the tools after each page. Over either, the list
// is refused whole rather than cut: a subset would depend on the server's
// order, change without notice, and hide the problem from the operator.
//
// A server of the modern era says, on each page, how long and for whom
// the list may be cached (server/utilities/caching): the hint returned
// is the shortest TTL of its pages, private if any page is. A legacy
// server says nothing: nil.
func (c *conn) listTools(ctx context.Context, lim listLimits) ([]*mcp.Tool, *ListHint, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ex := (&exchange{}).withBudget(lim.maxBytes, "tool list", cancel)
	ctx = withExchange(ctx, ex)
	var tools []*mcp.Tool
	var hint *ListHint
	cursor := ""
	for page := 0; ; page++ {
		if page > maxListPages {
			return nil, nil, permanent(&Error{Kind: ErrInvocationFailed, Server: c.cfg.ID, Op: "tools/list",
				Err: &failure{kind: errLimit, msg: fmt.Sprintf("more than %d pages", maxListPages)}})
		}
		rctx, rcancel := context.WithTimeout(ctx, c.cfg.RequestTimeout())
		res, err := c.session.ListTools(rctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			err = c.requestError(rctx, ex, "tools/list", err)
		}
		rcancel()
		if err != nil {
			return nil, nil, err
		}
		if c.modern() {
			// Any scope but "public" is taken for private, an absent one
			// too (the schema requires it): the cautious reading.
			hint = hint.merge(&ListHint{TTL: ttlOf(res.TTLMs), Private: res.CacheScope != "public"})
		}
		tools = append(tools, res.Tools...)
		if len(tools) > lim.maxTools {
			return nil, nil, permanent(&Error{Kind: ErrInvocationFailed, Server: c.cfg.ID, Op: "tools/list",
				Err: &failure{kind: errLimit, msg: fmt.Sprintf("the server lists more than %d tools (federation.maxToolsPerUpstream)", lim.maxTools)}})
		}
		if res.NextCursor == "" {
			return tools, hint, nil
		}
		cursor = res.NextCursor
	}
}

// ttlOf is a result's ttlMs as a duration: 0 for a negative one, and
// the longest duration for one longer than that (some 292 years), which
// would otherwise wrap around into a negative one.
func ttlOf(ms int) time.Duration {
	switch {
	case ms <= 0:
		return 0
	case int64(ms) > math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// ping checks the server answers within requestTimeoutMs: with ping in
// the legacy era, with server/discover in the modern one, which has no
// ping (basic/versioning) and whose servers all answer discover.
func (c *conn) ping(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout())
	defer cancel()
	ex := &exchange{}
	var err error
	if c.modern() {
		err = c.discover(withExchange(rctx, ex))
	} else {
		err = c.session.Ping(withExchange(rctx, ex), nil)
	}
	if err != nil {
		return c.requestError(rctx, ex, "ping", err)
	}
	return nil
}

// close ends the session, once; errors are of no use to the caller.
func (c *conn) close() {
	if c.closed.CompareAndSwap(false, true) {
		_ = c.session.Close()
	}
}
