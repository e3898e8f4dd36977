package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

var (
	// ErrUnsupported: the server does not offer what the request needs
	// (it does not advertise resource subscriptions, say).
	ErrUnsupported = errors.New("the upstream does not support it")
	// ErrSubscriptionLimit: as many URIs of the server are subscribed as
	// the gateway holds.
	ErrSubscriptionLimit = errors.New("subscription limit reached")
)

// RemoteError is a JSON-RPC error a server answered a request with
// (after initialize, so it is an MCP server's own answer). A gateway
// passes it on: a resource the server does not know is its -32002.
type RemoteError struct {
	Code int64
	// Message is the server's, cut to 200 bytes with control characters
	// removed (see peerText).
	Message string
	// Data is the server's data when it is valid JSON of at most
	// maxRemoteErrorData bytes; nil otherwise.
	Data json.RawMessage
}

// maxRemoteErrorData bounds the data of a RemoteError passed on.
const maxRemoteErrorData = 1024

// AsRemoteError reports whether err is (or wraps) a JSON-RPC error the
// server answered with, and returns it bounded.
func AsRemoteError(err error) (*RemoteError, bool) {
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code == codeRejected {
		return nil, false
	}
	re := &RemoteError{Code: wire.Code, Message: peerText(wire.Message, maxPeerText)}
	if len(wire.Data) > 0 && len(wire.Data) <= maxRemoteErrorData && json.Valid(wire.Data) {
		re.Data = compact(json.RawMessage(wire.Data))
	}
	return re, true
}

// GetPrompt gets the prompt name (its name on the server) of server
// serverID with args (prompts/get) and returns the result as the server
// sent it, compact JSON. ErrNotFound when the server lists no such
// prompt.
func (m *Manager) GetPrompt(ctx context.Context, serverID, name string, args map[string]string) (json.RawMessage, error) {
	m.mu.Lock()
	s, err := m.enabledLocked(serverID)
	if err == nil && !slices.ContainsFunc(s.surface.prompts, func(p Prompt) bool { return p.Name == name }) {
		err = fmt.Errorf("upstream %q has no prompt %q: %w", serverID, name, ErrNotFound)
	}
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var res *mcp.GetPromptResult
	err = m.request(ctx, s, "prompts/get "+name, func(ctx context.Context, c *conn) (err error) {
		res, err = c.session.GetPrompt(ctx, &mcp.GetPromptParams{Meta: c.noInputMeta(), Name: name, Arguments: args})
		return err
	})
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() {
		return nil, roundsRefused(s, "prompts/get "+name)
	}
	return encodeResult("prompts/get", res)
}

// ReadResource reads uri from server serverID (resources/read) and
// returns the result as the server sent it. The caller chose the server
// (the merged Surface says who offers a URI): a URI a template matches
// need not be listed.
func (m *Manager) ReadResource(ctx context.Context, serverID, uri string) (json.RawMessage, error) {
	m.mu.Lock()
	s, err := m.enabledLocked(serverID)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var res *mcp.ReadResourceResult
	// The operation does not name the URI: messages reach the log.
	err = m.request(ctx, s, "resources/read", func(ctx context.Context, c *conn) (err error) {
		res, err = c.session.ReadResource(ctx, &mcp.ReadResourceParams{Meta: c.noInputMeta(), URI: uri})
		return err
	})
	if err != nil {
		return nil, err
	}
	if res.NeedsInput() {
		return nil, roundsRefused(s, "resources/read")
	}
	b, err := encodeResult("resources/read", res)
	if err != nil || res.CacheScope != "" {
		return b, err
	}
	// The SDK's result type always writes a cache hint (ttlMs and
	// cacheScope, which the modern era requires together). An empty
	// scope is one the server did not send — servers that send a hint
	// send a scope, the SDK's own included — so neither member was on
	// the wire, and the result goes on as the server sent it.
	return withoutMembers(b, "ttlMs", "cacheScope"), nil
}

// withoutMembers is the JSON object b (valid, as encoded) without the
// named members.
func withoutMembers(b []byte, names ...string) []byte {
	out := make([]byte, 0, len(b))
	out = append(out, '{')
	_ = protocol.EachMember(b, func(k string, v []byte) bool {
		if slices.Contains(names, k) {
			return true
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = protocol.AppendString(out, k)
		out = append(out, ':')
		out = append(out, v...)
		return true
	})
	return append(out, '}')
}

// CompletionRef names what completion/complete completes: a prompt by
// its name on the server, or a resource template (or resource) by URI.
type CompletionRef struct {
	Prompt string
	URI    string
}

// Complete asks server serverID for completions of argument (with its
// value so far and the other arguments already given) of ref, and
// returns the result as the server sent it, its values cut to
// MaxCompletionValues. A server that does not advertise completions is
// not asked: the answer is no values.
func (m *Manager) Complete(ctx context.Context, serverID string, ref CompletionRef, argument, value string, given map[string]string) (json.RawMessage, error) {
	m.mu.Lock()
	s, err := m.enabledLocked(serverID)
	supported := err == nil && s.surface.complete
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if !supported {
		return json.RawMessage(`{"completion":{"values":[]}}`), nil
	}
	p := &mcp.CompleteParams{Argument: mcp.CompleteParamsArgument{Name: argument, Value: value}}
	if ref.Prompt != "" {
		p.Ref = &mcp.CompleteReference{Type: "ref/prompt", Name: ref.Prompt}
	} else {
		p.Ref = &mcp.CompleteReference{Type: "ref/resource", URI: ref.URI}
	}
	if len(given) > 0 {
		p.Context = &mcp.CompleteContext{Arguments: given}
	}
	var res *mcp.CompleteResult
	err = m.request(ctx, s, "completion/complete", func(ctx context.Context, c *conn) (err error) {
		res, err = c.session.Complete(ctx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	if c := &res.Completion; len(c.Values) > MaxCompletionValues {
		c.Total = max(c.Total, len(c.Values))
		c.Values, c.HasMore = c.Values[:MaxCompletionValues], true
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return encodeResult("completion/complete", res)
}

// enabledLocked returns the server serverID if it exists and is enabled.
func (m *Manager) enabledLocked(serverID string) (*server, error) {
	s := m.servers[serverID]
	switch {
	case s == nil:
		return nil, fmt.Errorf("upstream %q: %w", serverID, ErrNotFound)
	case !s.cfg.IsEnabled():
		return nil, fmt.Errorf("upstream %q: %w", serverID, ErrDisabled)
	}
	return s, nil
}

// request runs one request of a prompt, a resource or a completion on
// s's session under one deadline (requestTimeoutMs, or ctx's if sooner).
// These requests only read (server/prompts, server/resources,
// server/utilities/completion), so a transport failure is retried on a
// new session within the deadline, up to maxRetries; a server's answer,
// error or not, is final. While the server is down, it fails at once
// with ErrUnavailable, as a tool call does.
func (m *Manager) request(ctx context.Context, s *server, op string, do func(ctx context.Context, c *conn) error) error {
	if err := m.unavailable(s, op); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout())
	defer cancel()
	_, err := retry(ctx, s.cfg.Retries()+1, m.backoff, func(ctx context.Context) error {
		c, err := m.connFor(ctx, s)
		if err != nil {
			return err
		}
		ex := &exchange{}
		if err := do(withExchange(ctx, ex), c); err != nil {
			err = c.requestError(ctx, ex, op, err)
			if broken(err) && ctx.Err() == nil {
				m.dropConn(s, c, err)
			}
			return err
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrConnectionTimeout) {
		if _, answered := AsRemoteError(err); !answered {
			if u := m.unavailable(s, op); u != nil {
				return u
			}
		}
	}
	return err
}

// encodeResult is a result as compact JSON.
func encodeResult(op string, res any) (json.RawMessage, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("upstream: encoding the %s result: %w", op, err)
	}
	return b, nil
}

// subscriptions are the resource subscriptions held on one server, by
// URI, each with the subscribers (keys the caller chooses: a client
// session, say) that asked for it. They are kept by server id, so they
// survive a reconnect, a reconfiguration and a removal followed by a new
// server of the same id: every new session subscribes to them again.
type subscriptions struct {
	// op serializes the requests that change them (the first subscriber
	// of a URI subscribes, the last unsubscribes, a new session
	// resubscribes), so they reach the server in the order they were
	// decided.
	op sync.Mutex
	// mu guards byURI; it is never held across a request, so a
	// notification is relayed while a subscription is under way.
	mu    sync.Mutex
	byURI map[string]map[string]struct{}
}

func (m *Manager) subscriptionsOf(serverID string) *subscriptions {
	m.mu.Lock()
	defer m.mu.Unlock()
	x := m.subs[serverID]
	if x == nil {
		x = &subscriptions{byURI: map[string]map[string]struct{}{}}
		m.subs[serverID] = x
	}
	return x
}

// Subscribe subscribes subscriber to uri on server serverID: the first
// subscriber of a URI sends resources/subscribe, and the server's
// notifications/resources/updated for it reach Options.OnResourceUpdated
// from then on; later subscribers are only counted. The subscription
// holds across reconnects until its last subscriber unsubscribes.
// ErrUnsupported when the server does not advertise subscriptions.
func (m *Manager) Subscribe(ctx context.Context, serverID, uri, subscriber string) error {
	m.mu.Lock()
	s, err := m.enabledLocked(serverID)
	if err == nil && !s.surface.subscribe {
		err = fmt.Errorf("upstream %q does not offer resource subscriptions: %w", serverID, ErrUnsupported)
	}
	m.mu.Unlock()
	if err != nil {
		return err
	}
	x := m.subscriptionsOf(serverID)
	x.op.Lock()
	defer x.op.Unlock()
	x.mu.Lock()
	set, held := x.byURI[uri]
	switch {
	case held:
		set[subscriber] = struct{}{}
	case len(x.byURI) >= m.opts.maxSubscriptions:
		err = fmt.Errorf("upstream %q: %d of its URIs are subscribed, the most the gateway holds: %w", serverID, m.opts.maxSubscriptions, ErrSubscriptionLimit)
	}
	x.mu.Unlock()
	if held || err != nil {
		return err
	}
	err = m.request(ctx, s, "resources/subscribe", func(ctx context.Context, c *conn) error {
		return c.session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	if err != nil {
		return err
	}
	x.mu.Lock()
	x.byURI[uri] = map[string]struct{}{subscriber: {}}
	x.mu.Unlock()
	return nil
}

// Unsubscribe removes subscriber from uri's subscribers on server
// serverID; the last one sends resources/unsubscribe. A failure to reach
// the server is of no use to the caller: the session that held the
// subscription ends sooner or later, and a notification nobody holds
// is dropped.
func (m *Manager) Unsubscribe(ctx context.Context, serverID, uri, subscriber string) {
	x := m.subscriptionsOf(serverID)
	x.op.Lock()
	defer x.op.Unlock()
	x.mu.Lock()
	set := x.byURI[uri]
	delete(set, subscriber)
	last := set != nil && len(set) == 0
	if last {
		delete(x.byURI, uri)
	}
	x.mu.Unlock()
	if !last {
		return
	}
	m.mu.Lock()
	s, err := m.enabledLocked(serverID)
	connected := err == nil && s.conn != nil
	m.mu.Unlock()
	if !connected {
		return // a later session will not subscribe it again
	}
	err = m.request(ctx, s, "resources/unsubscribe", func(ctx context.Context, c *conn) error {
		return c.session.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	if err != nil {
		m.log.Debug().Str("server", serverID).Err(err).Msg("upstream resources/unsubscribe failed")
	}
}

// Subscription is one URI subscribed on a server, and its subscribers.
type Subscription struct {
	Server      string
	URI         string
	Subscribers []string
}

// Subscriptions lists the subscriptions held, for a caller that checks
// its subscribers are still there.
func (m *Manager) Subscriptions() []Subscription {
	m.mu.Lock()
	all := make(map[string]*subscriptions, len(m.subs))
	for id, x := range m.subs {
		all[id] = x
	}
	m.mu.Unlock()
	var out []Subscription
	for id, x := range all {
		x.mu.Lock()
		for uri, set := range x.byURI {
			out = append(out, Subscription{Server: id, URI: uri, Subscribers: keysOf(set)})
		}
		x.mu.Unlock()
	}
	return out
}

func keysOf(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// resourceUpdated handles a server's notifications/resources/updated: it
// reaches Options.OnResourceUpdated with the URI's subscribers, only for
// a URI subscribed on that server, so a server can neither make clients
// re-read what they did not subscribe to nor speak for another server's
// resources. It runs on the session's reading goroutine and must not
// block.
func (m *Manager) resourceUpdated(serverID, uri string) {
	if m.opts.OnResourceUpdated == nil {
		return
	}
	m.mu.Lock()
	x := m.subs[serverID]
	m.mu.Unlock()
	if x == nil {
		return
	}
	x.mu.Lock()
	var subscribers []string
	if set := x.byURI[uri]; set != nil {
		subscribers = keysOf(set)
	}
	x.mu.Unlock()
	if len(subscribers) > 0 {
		m.opts.OnResourceUpdated(serverID, uri, subscribers)
	}
}

// resubscribe subscribes c, a new session of server id, to every URI
// subscribed on the server. It runs in the background once the session
// is in service; a URI that fails is logged by count, not by name, and
// stays held (the next session tries again).
func (m *Manager) resubscribe(id string, c *conn) {
	m.mu.Lock()
	x := m.subs[id]
	m.mu.Unlock()
	if x == nil {
		return
	}
	x.op.Lock()
	defer x.op.Unlock()
	x.mu.Lock()
	uris := make([]string, 0, len(x.byURI))
	for uri := range x.byURI {
		uris = append(uris, uri)
	}
	x.mu.Unlock()
	failed := 0
	for _, uri := range uris {
		ctx, cancel := context.WithTimeout(m.ctx, c.cfg.RequestTimeout())
		err := c.session.Subscribe(withExchange(ctx, &exchange{}), &mcp.SubscribeParams{URI: uri})
		cancel()
		if err != nil {
			if m.ctx.Err() != nil || c.closed.Load() {
				return
			}
			failed++
		}
	}
	if failed > 0 {
		m.log.Warn().Str("server", id).Int("failed", failed).Int("subscriptions", len(uris)).
			Msg("upstream resource subscriptions not renewed on the new session")
	}
}

// surfaceHandlers adds to opts the handlers of a server's notifications
// about its prompts and resources. A list_changed of either kind is a
// re-list like the tools' (one discovery lists every kind), folded and
// spaced the same way.
func (p dialParams) surfaceHandlers(opts *mcp.ClientOptions) {
	if p.onToolsChanged != nil {
		opts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { p.onToolsChanged() }
		opts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { p.onToolsChanged() }
	}
	if p.onResourceUpdated != nil {
		opts.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req != nil && req.Params != nil {
				p.onResourceUpdated(req.Params.URI)
			}
		}
	}
}

// noInputMeta is the _meta of a prompts/get or resources/read sent to a
// modern server: a client that declared no capability, since the gateway
// passes on no round of these (roundsRefused) and a server must not ask
// for what the client did not declare (basic/patterns/mrtr). Without it
// the go-sdk would send the gateway's own capabilities. Nil for a legacy
// server, whose capabilities are the session's.
func (c *conn) noInputMeta() mcp.Meta {
	if !c.modern() {
		return nil
	}
	return mcp.Meta{mcp.MetaKeyClientCapabilities: json.RawMessage(`{}`)}
}

// roundsRefused is the failure of a prompts/get or resources/read that a
// modern server answered with an InputRequiredResult: the gateway carries
// rounds of tools/call only (docs/adr/0055-multi-round-trip-requests.md).
func roundsRefused(s *server, op string) error {
	return &Error{Kind: ErrInvocationFailed, Server: s.cfg.ID, Op: op, url: s.cfg.URL,
		Err: errors.New("the server asks the client for input (an InputRequiredResult); the gateway passes such rounds on for tools/call only")}
}
