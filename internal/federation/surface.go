package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
	"github.com/mcp-runtime/mcp-runtime/internal/toolname"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// Surface offers the upstreams' prompts, resources and resource
// templates through this server (handlers.Federated; DESIGN.md,
// "Federated prompts and resources"):
//
//   - a prompt is listed under its exposed name, made from its canonical
//     serverId.promptName as a tool's is (handlers.ExposedName,
//     toolNameSeparator), and prompts/get and completion/complete accept
//     either; the upstream gets its own name;
//   - a resource keeps its URI, and resources/read, subscriptions and
//     completions go to the upstream that offers it (upstream.Surface
//     says which), or whose template matches it;
//   - a subscription is held upstream for the client sessions subscribed
//     through this replica, and the upstream's
//     notifications/resources/updated is relayed to the subscribers'
//     tenants, whose subscribed sessions the transport tells;
//   - prompts/list_changed and resources/list_changed go to clients when
//     the lists they would get really changed.
type Surface struct {
	m        *upstream.Manager
	sep      string
	reserved []string // the server's own URI schemes, lower case
	notifier Notifier
	sweep    time.Duration
	log      zerolog.Logger

	view atomic.Pointer[surfaceView]

	mu sync.Mutex // serialises rebuilds and their announcements
	// promptsFP and resourcesFP identify the lists last built, so a
	// change is announced once, and only a change.
	promptsFP, resourcesFP string

	ctx     context.Context // the sweeper's; cancelled by close
	cancel  context.CancelFunc
	started bool
	done    chan struct{}
}

// Notifier is what the surface needs from the transport.
type Notifier interface {
	ListChanged(notification string) (int, error)
	ResourceUpdated(tenantID, uri string) (int, error)
	Subscribers(ctx context.Context, tenantID, uri string) ([]string, error)
}

// NewSurface builds the surface of srv's upstreams, whose own resources
// must be registered already (their URI schemes stay srv's): sep is the
// exposed-name separator and sweep the interval between sweeps of ended
// subscriptions. Configure adds its callbacks to the manager's options,
// Attach gives it the manager before the manager starts, Start takes in
// the first lists.
func NewSurface(srv *handlers.Server, n Notifier, sep string, sweep time.Duration, log zerolog.Logger) *Surface {
	s := &Surface{sep: sep, notifier: n, sweep: sweep, log: log,
		// stale:// names State Sync's pattern subscriptions.
		reserved: append(srv.ResourceSchemes(), "stale"), done: make(chan struct{})}
	s.view.Store(&surfaceView{})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Configure sets the manager's reserved schemes and the surface's
// callbacks in o.
func (s *Surface) Configure(o *upstream.Options) {
	o.ReservedSchemes = s.reserved
	o.OnPromptsChanged = s.rebuild
	o.OnResourcesChanged = s.rebuild
	o.OnResourceUpdated = s.relay
}

// Attach gives the surface its manager, before the manager starts
// calling it back.
func (s *Surface) Attach(m *upstream.Manager) { s.m = m }

// Start builds the first view and starts the sweeper.
func (s *Surface) Start() {
	s.rebuild()
	s.started = true
	go s.sweeper()
}

// Close stops the sweeper.
func (s *Surface) Close() {
	s.cancel()
	if s.started {
		<-s.done
	}
}

// surfaceView is one build of the merged lists and their routes.
type surfaceView struct {
	prompts   []protocol.Prompt
	resources []protocol.Resource
	templates []protocol.ResourceTemplate
	// byName finds a prompt by its listed and its canonical name.
	byName map[string]upstream.Prompt
	// owner is the server of each listed URI; tmpls are the templates in
	// listing order, tmplByURI by their text.
	owner     map[string]string
	tmpls     []upstream.ResourceTemplate
	tmplByURI map[string]upstream.ResourceTemplate
	reserved  []string
}

// buildView renders the manager's merged surface as clients see it.
func (s *Surface) buildView(sf *upstream.Surface) *surfaceView {
	v := &surfaceView{byName: map[string]upstream.Prompt{}, owner: map[string]string{},
		tmplByURI: map[string]upstream.ResourceTemplate{}, reserved: s.reserved}
	for _, p := range sf.Prompts {
		exposed := toolname.Exposed(p.Canonical, s.sep)
		if other, taken := v.byName[exposed]; taken {
			s.log.Warn().Str("server", p.Server).Str("prompt", p.Name).Str("takenBy", other.Canonical).
				Msg("upstream prompt left out: its exposed name is another prompt's")
			continue
		}
		raw, err := renamed(p.Listed, exposed)
		if err != nil {
			s.log.Warn().Err(err).Str("server", p.Server).Str("prompt", p.Name).Msg("upstream prompt left out")
			continue
		}
		v.byName[exposed], v.byName[p.Canonical] = p, p
		v.prompts = append(v.prompts, protocol.Prompt{Name: exposed, Raw: raw})
	}
	for _, r := range sf.Resources {
		v.owner[r.URI] = r.Server
		v.resources = append(v.resources, protocol.Resource{URI: r.URI, Raw: r.Listed})
	}
	for _, t := range sf.Templates {
		v.tmplByURI[t.URITemplate] = t
		v.tmpls = append(v.tmpls, t)
		v.templates = append(v.templates, protocol.ResourceTemplate{URITemplate: t.URITemplate, Raw: t.Listed})
	}
	// Listed by name, URI and URI template, the order handlers serves
	// (docs/adr/0052-list-order-and-cursors.md), so that it need not sort
	// them for every request. Only the lists: a URI still goes to the
	// first template in tmpls, server id order, that matches it.
	slices.SortFunc(v.prompts, func(a, b protocol.Prompt) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(v.resources, func(a, b protocol.Resource) int { return strings.Compare(a.URI, b.URI) })
	slices.SortFunc(v.templates, func(a, b protocol.ResourceTemplate) int { return strings.Compare(a.URITemplate, b.URITemplate) })
	return v
}

// renamed is a prompts/list entry with its name replaced.
func renamed(listed json.RawMessage, name string) (json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(listed, &members); err != nil {
		return nil, fmt.Errorf("decoding the listed prompt: %w", err)
	}
	members["name"], _ = json.Marshal(name)
	b, err := protocol.Marshal(members)
	if err != nil {
		return nil, fmt.Errorf("encoding the listed prompt: %w", err)
	}
	return b, nil
}

// ownerOf is the server that offers uri: the one that lists it, or the
// first whose template matches it. A URI in one of the server's own
// schemes is never an upstream's.
func (v *surfaceView) ownerOf(uri string) (string, bool) {
	if slices.Contains(v.reserved, upstream.URIScheme(uri)) {
		return "", false
	}
	if server, ok := v.owner[uri]; ok {
		return server, true
	}
	for _, t := range v.tmpls {
		if t.Matches(uri) {
			return t.Server, true
		}
	}
	return "", false
}

// rebuild takes in the manager's merged surface and tells clients about
// the lists that changed since the last build. It is the manager's
// OnPromptsChanged and OnResourcesChanged: whichever fires first
// announces both kinds if both changed, and the other finds nothing new.
func (s *Surface) rebuild() {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.buildView(s.m.Surface())
	pfp, rfp := listFingerprint(v.prompts), listFingerprint(v.resources, v.templates)
	first := s.promptsFP == "" // the first build: nobody has listed yet
	promptsChanged, resourcesChanged := pfp != s.promptsFP, rfp != s.resourcesFP
	s.promptsFP, s.resourcesFP = pfp, rfp
	s.view.Store(v)
	if first {
		return
	}
	if promptsChanged {
		s.announce(protocol.NotificationPromptsListChanged, len(v.prompts))
	}
	if resourcesChanged {
		s.announce(protocol.NotificationResourcesListChange, len(v.resources)+len(v.templates))
	}
}

func (s *Surface) announce(notification string, items int) {
	n, err := s.notifier.ListChanged(notification)
	if err != nil {
		s.log.Error().Err(err).Str("notification", notification).Msg("announcing an upstream list change")
		return
	}
	s.log.Info().Str("notification", notification).Int("items", items).Int("sessions", n).Msg("upstream list changed; clients notified")
}

// listFingerprint identifies lists by what clients get of them.
func listFingerprint(lists ...any) string {
	b, err := json.Marshal(lists)
	if err != nil {
		return fmt.Sprintf("unencodable:%p", &lists)
	}
	return string(b)
}

// Prompts implements handlers.Federated.
func (s *Surface) Prompts() []protocol.Prompt { return s.view.Load().prompts }

// Resources implements handlers.Federated.
func (s *Surface) Resources() []protocol.Resource { return s.view.Load().resources }

// ResourceTemplates implements handlers.Federated.
func (s *Surface) ResourceTemplates() []protocol.ResourceTemplate { return s.view.Load().templates }

// GetPrompt implements handlers.Federated.
func (s *Surface) GetPrompt(ctx context.Context, _ handlers.Session, name string, args map[string]string) (any, bool, error) {
	p, ok := s.view.Load().byName[name]
	if !ok {
		return nil, false, nil
	}
	res, err := s.m.GetPrompt(ctx, p.Server, p.Name, args)
	if err != nil {
		return nil, true, surfaceError(err, func() *protocol.Error {
			return protocol.Errorf(protocol.CodeInvalidParams, "unknown prompt: %q", name)
		})
	}
	return res, true, nil
}

// ReadResource implements handlers.Federated.
func (s *Surface) ReadResource(ctx context.Context, _ handlers.Session, uri string) (any, bool, error) {
	server, ok := s.view.Load().ownerOf(uri)
	if !ok {
		return nil, false, nil
	}
	res, err := s.m.ReadResource(ctx, server, uri)
	if err != nil {
		return nil, true, surfaceError(err, func() *protocol.Error {
			return protocol.Errorf(protocol.CodeResourceNotFound, "resource not found: %s", uri).WithData(map[string]string{"uri": uri})
		})
	}
	return res, true, nil
}

// Complete implements handlers.Federated: a prompt's completion goes to
// its server under the prompt's own name, a template's (or a
// resource's) to the server that offers it, the URI unchanged.
func (s *Surface) Complete(ctx context.Context, _ handlers.Session, p *protocol.CompleteParams) (any, bool, error) {
	v := s.view.Load()
	var (
		server string
		ref    upstream.CompletionRef
	)
	switch p.Ref.Type {
	case protocol.RefPrompt:
		pr, ok := v.byName[p.Ref.Name]
		if !ok {
			return nil, false, nil
		}
		server, ref.Prompt = pr.Server, pr.Name
	case protocol.RefResource:
		if t, ok := v.tmplByURI[p.Ref.URI]; ok {
			server = t.Server
		} else if server, ok = v.ownerOf(p.Ref.URI); !ok {
			return nil, false, nil
		}
		ref.URI = p.Ref.URI
	default:
		return nil, false, nil
	}
	var given map[string]string
	if p.Context != nil {
		given = p.Context.Arguments
	}
	res, err := s.m.Complete(ctx, server, ref, p.Argument.Name, p.Argument.Value, given)
	if err != nil {
		return nil, true, surfaceError(err, func() *protocol.Error {
			return protocol.Errorf(protocol.CodeInvalidParams, "unknown reference")
		})
	}
	return res, true, nil
}

// subscriber is the key a client session's upstream subscriptions are
// held under: its tenant, to relay to, and its id.
func subscriber(tenantID, sessionID string) string { return tenantID + "\x00" + sessionID }

func splitSubscriber(key string) (tenantID, sessionID string) {
	tenantID, sessionID, _ = strings.Cut(key, "\x00")
	return tenantID, sessionID
}

// Subscribe implements handlers.Federated.
func (s *Surface) Subscribe(ctx context.Context, subscriberID, uri string) (bool, error) {
	server, ok := s.view.Load().ownerOf(uri)
	if !ok {
		return false, nil
	}
	if err := s.m.Subscribe(ctx, server, uri, subscriber(tenant.From(ctx), subscriberID)); err != nil {
		return true, surfaceError(err, nil)
	}
	return true, nil
}

// Unsubscribe implements handlers.Federated. The URI's server is looked
// up among the subscriptions held, since the lists may have changed
// since the subscription was made.
func (s *Surface) Unsubscribe(ctx context.Context, subscriberID, uri string) {
	if slices.Contains(s.reserved, upstream.URIScheme(uri)) {
		return // the server's own
	}
	key := subscriber(tenant.From(ctx), subscriberID)
	for _, sub := range s.m.Subscriptions() {
		if sub.URI == uri && slices.Contains(sub.Subscribers, key) {
			s.m.Unsubscribe(ctx, sub.Server, uri, key)
		}
	}
}

// relay is the manager's OnResourceUpdated: the update goes to every
// tenant with a subscriber here, and the transport tells that tenant's
// sessions subscribed to the URI (on any replica, with shared sessions).
// It does not block.
func (s *Surface) relay(_, uri string, subscribers []string) {
	var tenants []string
	for _, key := range subscribers {
		if t, _ := splitSubscriber(key); !slices.Contains(tenants, t) {
			tenants = append(tenants, t)
		}
	}
	for _, t := range tenants {
		if _, err := s.notifier.ResourceUpdated(t, uri); err != nil {
			s.log.Error().Err(err).Msg("relaying an upstream resource update")
		}
	}
}

// sweeper drops, every health interval, the upstream subscriptions of
// client sessions that are no longer subscribed: they ended, or
// unsubscribed through another replica. The transport says who is
// subscribed (from Redis with shared sessions); when it cannot say, the
// subscriptions stay until the next round.
func (s *Surface) sweeper() {
	defer close(s.done)
	t := time.NewTicker(s.sweep)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		s.sweepOnce(s.ctx)
	}
}

func (s *Surface) sweepOnce(ctx context.Context) {
	for _, sub := range s.m.Subscriptions() {
		live := map[string][]string{} // tenant -> subscribed session ids
		for _, key := range sub.Subscribers {
			t, id := splitSubscriber(key)
			ids, seen := live[t]
			if !seen {
				var err error
				if ids, err = s.notifier.Subscribers(ctx, t, sub.URI); err != nil {
					if ctx.Err() == nil {
						s.log.Warn().Err(err).Msg("checking upstream subscriptions; they stay until the next round")
					}
					return
				}
				live[t] = ids
			}
			if !slices.Contains(ids, id) {
				s.m.Unsubscribe(ctx, sub.Server, sub.URI, key)
			}
		}
	}
}

// surfaceError is the JSON-RPC error for a failed prompt, resource,
// completion or subscription request. The upstream's own error answer
// is passed on, as the upstream wrote it (bounded); a prompt or
// resource the upstream no longer offers is notFound's; the gateway's
// own failures (the upstream is down, timed out, unreachable) are
// -32603 with the classified message, never the peer's bytes, and data
// saying whether and when to retry.
func surfaceError(err error, notFound func() *protocol.Error) error {
	if re, ok := upstream.AsRemoteError(err); ok {
		return &protocol.Error{Code: int(re.Code), Message: re.Message, Data: re.Data}
	}
	switch {
	case errors.Is(err, upstream.ErrNotFound) && notFound != nil:
		return notFound()
	case errors.Is(err, upstream.ErrUnsupported), errors.Is(err, upstream.ErrSubscriptionLimit):
		return protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %v", err)
	}
	data := map[string]any{"retryable": !errors.Is(err, upstream.ErrDisabled)}
	var ue *upstream.Error
	if errors.As(err, &ue) {
		data["server"] = ue.Server
		if ue.RetryAfter > 0 {
			data["retryAfterMs"] = ue.RetryAfter.Milliseconds()
		}
	}
	return protocol.Errorf(protocol.CodeInternalError, "%s", err.Error()).WithData(data)
}
