package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	// onToolsChanged is called when the server sends
	// notifications/tools/list_changed.
	onToolsChanged func()
}

// headerTransport adds a server's configured headers to every request
// sent to it (credentials for that upstream, typically) — to its host
// only: a redirect elsewhere must not carry them, which Go's own
// cross-host stripping would not prevent here, since a RoundTripper adds
// them after the client decided what to forward.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	host    string // the configured URL's host[:port]
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.EqualFold(r.URL.Host, t.host) {
		return t.base.RoundTrip(r)
	}
	// A RoundTripper must not modify the caller's request.
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// DefaultMaxResponseBytes bounds the body of one upstream answer to a
// POST (a tools/list page, a tools/call result): the SDK reads a whole
// answer into memory, and a server that sends gigabytes must not take the
// gateway down with it. The guardrails truncate results far below this.
const DefaultMaxResponseBytes = 16 << 20

// errResponseTooLarge ends the read of an answer over the bound; the
// request fails like any transport failure.
var errResponseTooLarge = errors.New("the answer is larger than the gateway accepts from an upstream")

// limitTransport bounds the body of every answer to a POST. The
// standalone GET stream is left alone: it is meant to stay open and
// carries notifications only.
type limitTransport struct {
	base http.RoundTripper
	max  int64
}

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: t.max}
	}
	return resp, err
}

type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Exactly at the bound: only an answer that goes on is too large.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n > 0 {
			return 0, errResponseTooLarge
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// httpClientFor returns base with cfg's headers added to every request
// and answers bounded by maxBody. Its Timeout is left as base's: the SDK
// keeps long-lived streams open, and every request is bounded by its own
// context instead.
func httpClientFor(base *http.Client, cfg Config, maxBody int64) *http.Client {
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if len(cfg.Headers) > 0 {
		host := ""
		if u, err := url.Parse(cfg.URL); err == nil {
			host = u.Host
		}
		rt = headerTransport{base: rt, headers: cfg.Headers, host: host}
	}
	c.Transport = limitTransport{base: rt, max: maxBody}
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

	opts := &mcp.ClientOptions{
		// No roots, sampling or elicitation: mcp-runtime only consumes
		// the upstream's tools.
		Capabilities: &mcp.ClientCapabilities{},
	}
	if p.onToolsChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { p.onToolsChanged() }
	}
	client := mcp.NewClient(&mcp.Implementation{Name: p.clientName, Version: p.clientVersion}, opts)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   cfg.URL,
		HTTPClient: httpClientFor(p.base, cfg, p.maxBody),
		// MaxRetries is left at the SDK's default: it only governs
		// resuming the server's SSE streams, and without it one closed
		// standalone stream (a server restarting its GET handler, a proxy
		// idle timeout) would end the whole session. A session the SDK
		// gives up on is noticed by the manager's watcher (Session.Wait)
		// and replaced with its own backoff.
	}
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		e := &Error{Kind: ErrInvocationFailed, Server: cfg.ID, Op: "connect", Err: err, url: cfg.URL}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			e.Kind, e.Op, e.Timeout = ErrConnectionTimeout, "initialize", true
			e.Err = fmt.Errorf("no answer within %v (connectionTimeoutMs)", cfg.ConnectionTimeout())
		}
		return nil, e
	}
	return &conn{cfg: cfg, session: session, init: session.InitializeResult(), closed: new(atomic.Bool)}, nil
}

// requestError turns a failed request into an *Error of kind
// ErrInvocationFailed. A server's JSON-RPC error answer is permanent
// (sending the same request again gets the same answer); a transport
// failure or a timeout may be retried.
func (c *conn) requestError(ctx context.Context, op string, err error) error {
	e := &Error{Kind: ErrInvocationFailed, Server: c.cfg.ID, Op: op, Err: err, url: c.cfg.URL}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		e.Timeout = true
		e.Err = fmt.Errorf("no answer within %v (requestTimeoutMs)", c.cfg.RequestTimeout())
	}
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return permanent(e)
	}
	return e
}

// broken reports whether err means the session cannot be used again and
// must be replaced: a transport failure. A server's JSON-RPC error answer
// or a slow answer (a timeout) says nothing against the session; treating
// a slow tool as a dead server would mark healthy servers failed.
func broken(err error) bool {
	var wire *jsonrpc.Error
	var e *Error
	switch {
	case err == nil, errors.As(err, &wire):
		return false
	case errors.As(err, &e) && e.Timeout:
		return false
	}
	return true
}

// listTools fetches the whole tool list, following NextCursor, under one
// requestTimeoutMs deadline per page.
func (c *conn) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	cursor := ""
	for page := 0; ; page++ {
		if page > 1000 {
			// A server that keeps returning cursors would loop forever.
			return nil, permanent(&Error{Kind: ErrInvocationFailed, Server: c.cfg.ID, Op: "tools/list",
				Err: errors.New("more than 1000 pages")})
		}
		rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout())
		res, err := c.session.ListTools(rctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			err = c.requestError(rctx, "tools/list", err)
		}
		cancel()
		if err != nil {
			return nil, err
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			return tools, nil
		}
		cursor = res.NextCursor
	}
}

// countResources counts the server's resources when it advertises any;
// 0 otherwise. A failure is reported but does not fail discovery.
func (c *conn) countResources(ctx context.Context) (int, error) {
	if c.init == nil || c.init.Capabilities == nil || c.init.Capabilities.Resources == nil {
		return 0, nil
	}
	n, cursor := 0, ""
	for page := 0; page <= 1000; page++ {
		rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout())
		res, err := c.session.ListResources(rctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			err = c.requestError(rctx, "resources/list", err)
		}
		cancel()
		if err != nil {
			return n, err
		}
		n += len(res.Resources)
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	return n, nil
}

// ping checks the session answers within requestTimeoutMs.
func (c *conn) ping(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout())
	defer cancel()
	if err := c.session.Ping(rctx, nil); err != nil {
		return c.requestError(rctx, "ping", err)
	}
	return nil
}

// call sends tools/call under requestTimeoutMs. An answer with isError is
// a result, not a Go error (INV-MCP-ECO-301).
func (c *conn) call(ctx context.Context, name string, args json.RawMessage) (CallResult, error) {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout())
	defer cancel()
	params := &mcp.CallToolParams{Name: name}
	if len(args) > 0 {
		params.Arguments = args
	}
	res, err := c.session.CallTool(rctx, params)
	if err != nil {
		return CallResult{}, c.requestError(rctx, "tools/call "+name, err)
	}
	return toCallResult(res)
}

func toCallResult(res *mcp.CallToolResult) (CallResult, error) {
	out := CallResult{IsError: res.IsError, Content: json.RawMessage("[]")}
	if len(res.Content) > 0 {
		b, err := json.Marshal(res.Content)
		if err != nil {
			return CallResult{}, fmt.Errorf("encoding the result's content: %w", err)
		}
		out.Content = b
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return CallResult{}, fmt.Errorf("encoding the result's structuredContent: %w", err)
		}
		out.StructuredContent = b
	}
	return out, nil
}

// close ends the session, once; errors are of no use to the caller.
func (c *conn) close() {
	if c.closed.CompareAndSwap(false, true) {
		_ = c.session.Close()
	}
}
