package transport

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/cors"
	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// Options configure the transport.
type Options struct {
	// AllowedOrigins lists the origins allowed to call; empty means
	// localhost origins only, "*" allows any.
	AllowedOrigins []string
	// LoopbackOnly turns on the Host-header check against DNS rebinding;
	// set it when the server listens on a loopback address.
	LoopbackOnly       bool
	MaxBodyBytes       int64
	SessionIdleTimeout time.Duration
	KeepAliveInterval  time.Duration
	EventLogSize       int
	MaxSessions        int
	// MaxSessionsPerPrincipal caps one principal's client sessions
	// (docs/adr/0027-session-caps.md); 0 means no cap. Over it,
	// initialize gets 429.
	MaxSessionsPerPrincipal int
	// MaxSessionsPerTenant caps the client sessions of one tenant, all
	// its principals together; 0 means no cap. Over it, initialize gets
	// 429. With shared sessions (Share) both caps hold across replicas.
	MaxSessionsPerTenant int
	// MaxClientInfoBytes and MaxCapabilitiesBytes bound initialize's
	// params.clientInfo and params.capabilities (JSON bytes), and
	// MaxInitializeDepth their nesting: a client session keeps them for
	// its life, in memory and in a shared store. Over a bound,
	// initialize gets -32602 naming the member and the limit. 0 means
	// the default (DefaultMaxClientInfoBytes, …).
	MaxClientInfoBytes   int
	MaxCapabilitiesBytes int
	MaxInitializeDepth   int
	// MaxClientResponseBytes bounds a client's response to a
	// server-to-client request (JSON bytes): a larger one gets 413, and
	// the request waiting for it fails at once. 0 means
	// DefaultMaxClientResponseBytes.
	MaxClientResponseBytes int
	// MaxStreamsPerSession caps the SSE streams one client session has
	// open on a replica, so one client cannot hold connections without
	// bound: a GET that would open one more gets 429. POST responses that
	// stream count, but are bounded by the in-flight request limit rather
	// than refused. 0 means no cap.
	MaxStreamsPerSession int
	// MaxRequestsPerPrincipal caps the requests of the 2026-07-28 era
	// one principal has in flight on this replica (0: no cap), the
	// modern counterpart of the caps on sessions and their streams: a
	// modern request holds its stream for as long as it runs. Over it a
	// request gets 429.
	MaxRequestsPerPrincipal int
	// MaxListensPerPrincipal caps the subscriptions/listen streams one
	// principal has open on this replica (0: no cap); over it a listen
	// gets 429.
	MaxListensPerPrincipal int
	// ReadBodyTimeout bounds reading a request body; WriteTimeout bounds
	// each write of a response or stream event.
	ReadBodyTimeout time.Duration
	WriteTimeout    time.Duration
	Logger          zerolog.Logger
	// Auth decides who each request comes from; nil serves everyone as
	// the default tenant (tests, and embedding without auth).
	Auth Authenticator
	// Limit, if set, spends one request of the principal's HTTP request
	// budget (docs/adr/0022-rate-limits.md); refused, the request gets
	// 429 with Retry-After before anything else is read.
	Limit func(ctx context.Context, p auth.Principal) (ok bool, retryAfter time.Duration)
	// Observe, if set, is told the HTTP method and status of every
	// request to the endpoint once it is answered (metrics;
	// docs/adr/0029-metrics-at-scrape-time.md).
	Observe func(method string, status int)
	// Sessions replaces the in-memory session store when set.
	Sessions SessionStore
	// Share, when set (and Sessions is not), shares client sessions
	// between replicas (docs/adr/0015-shared-client-sessions.md): the
	// transport opens its session store there, so that any replica
	// serves any request.
	Share Sharing
	// Hints give the cache hints of the results of the 2026-07-28 era
	// that carry one (server/utilities/caching); nil: every one is
	// stale at once (ttlMs 0) and private.
	Hints CacheHints
	// Telemetry makes a span of every MCP message
	// (docs/adr/0046-opentelemetry.md); nil: none.
	Telemetry *telemetry.Telemetry
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Transport serves one handlers.Server over Streamable HTTP.
type Transport struct {
	opts     Options
	srv      *handlers.Server
	sessions SessionStore
	subs     *subscriptions // resources/subscribe, by tenant and URI
	// fanout delivers resource updates: through subs in memory, through
	// the shared store when client sessions are shared.
	fanout Fanout
	// listens are the subscriptions/listen streams open here; bus
	// carries their events between replicas (nil: one replica).
	listens *listens
	// listenKeys numbers the listens, to name them as subscribers.
	listenKeys atomic.Int64
	bus        ListenBus
	origins    originPolicy
	log        zerolog.Logger
	tel        *telemetry.Telemetry // never nil: telemetry.Off without Options.Telemetry
	now        func() time.Time
	// draining is set by CloseStreams: no new GET streams from then on.
	draining atomic.Bool
	// openStreams counts the SSE responses being served now.
	openStreams atomic.Int64
	writeBufs   writeBufs // lent to streams for each write

	// inflight counts each principal's modern requests in flight
	// (Options.MaxRequestsPerPrincipal); a principal with none has no
	// entry.
	inflightMu sync.Mutex
	inflight   map[string]int

	// serverInfo is the JSON of the server's name and version, which
	// every modern result carries in _meta (basic/index).
	serverInfo []byte

	ctx    context.Context // parent of every client session
	cancel context.CancelFunc
	wg     sync.WaitGroup // detached handlers
	// streamsMu orders the listen streams taken over from net/http
	// (detachListen) before Close's wait for them; closed: no more.
	streamsMu sync.Mutex
	closed    bool
	streams   sync.WaitGroup
}

// New returns a transport for srv.
func New(srv *handlers.Server, opts Options) (*Transport, error) {
	origins, err := newOriginPolicy(opts.AllowedOrigins)
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	if opts.MaxBodyBytes <= 0 || opts.SessionIdleTimeout <= 0 || opts.KeepAliveInterval <= 0 ||
		opts.EventLogSize <= 0 || opts.MaxSessions <= 0 {
		return nil, fmt.Errorf("transport: MaxBodyBytes, SessionIdleTimeout, KeepAliveInterval, EventLogSize and MaxSessions must be positive")
	}
	if opts.ReadBodyTimeout <= 0 {
		opts.ReadBodyTimeout = 30 * time.Second
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 30 * time.Second
	}
	opts.MaxClientInfoBytes = cmp.Or(max(opts.MaxClientInfoBytes, 0), DefaultMaxClientInfoBytes)
	opts.MaxCapabilitiesBytes = cmp.Or(max(opts.MaxCapabilitiesBytes, 0), DefaultMaxCapabilitiesBytes)
	opts.MaxInitializeDepth = cmp.Or(max(opts.MaxInitializeDepth, 0), DefaultMaxInitializeDepth)
	opts.MaxClientResponseBytes = cmp.Or(max(opts.MaxClientResponseBytes, 0), DefaultMaxClientResponseBytes)
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Transport{opts: opts, srv: srv, origins: origins, log: opts.Logger, now: now, ctx: ctx, cancel: cancel, subs: newSubscriptions(), listens: newListens(),
		serverInfo: protocol.ServerInfoJSON(srv.Info()), inflight: map[string]int{}, tel: opts.Telemetry}
	if t.tel == nil {
		t.tel = telemetry.Off()
	}
	t.sessions, t.fanout = opts.Sessions, localFanout{t.subs}
	switch {
	case t.sessions != nil:
	case opts.Share != nil:
		shared, err := opts.Share.Open(ctx, SharingConfig{
			IdleTimeout: opts.SessionIdleTimeout, MaxSessions: opts.MaxSessions,
			MaxSessionsPerPrincipal: opts.MaxSessionsPerPrincipal, MaxSessionsPerTenant: opts.MaxSessionsPerTenant,
			EventLogSize: opts.EventLogSize, Logger: opts.Logger, Now: now, Listen: t.fromBus,
		})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("transport: %w", err)
		}
		t.sessions, t.fanout, t.bus = shared, shared, shared
	default:
		t.sessions = newMemorySessions(ctx, opts.SessionIdleTimeout, opts.MaxSessions, capsOf(opts), now, t.subs, t.sessionEnded)
	}
	return t, nil
}

// Mount adds the MCP endpoint to r at path (conventionally "/mcp").
func (t *Transport) Mount(r chi.Router, path string) {
	r.Group(func(r chi.Router) {
		r.Use(t.recoverer, t.cors(), t.checkOrigin, t.authenticate)
		r.Post(path, t.handlePost)
		r.Get(path, t.handleGet)
		r.Delete(path, t.handleDelete)
		r.Options(path, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
		r.MethodFunc(http.MethodPut, path, t.methodNotAllowed)
		r.MethodFunc(http.MethodPatch, path, t.methodNotAllowed)
	})
}

// cors lets browser clients on allowed origins call the endpoint: the
// preflight, and the MCP headers a browser script must be allowed to send
// and to read (Mcp-Session-Id above all). A modern tools/call also sends
// an Mcp-Param-{Name} header for each argument its tool's schema marks
// x-mcp-header (basic/transports/streamable-http, "Custom Headers"),
// whose names no static list holds; go-chi/cors matches names exactly,
// so a preflight that asks for such headers, and otherwise only for the
// listed ones, is answered by a second handler that allows what it asks.
func (t *Transport) cors() func(http.Handler) http.Handler {
	headers := []string{"Accept", "Authorization", "Content-Type", "Last-Event-ID",
		headerSessionID, headerProtocolVersion, protocol.HeaderMethod, protocol.HeaderName}
	opts := cors.Options{
		AllowOriginFunc: func(_ *http.Request, origin string) bool { return t.origins.allows(origin) },
		AllowedMethods:  []string{http.MethodGet, http.MethodPost, http.MethodDelete},
		AllowedHeaders:  headers,
		ExposedHeaders:  []string{headerSessionID, headerProtocolVersion, "WWW-Authenticate"},
		MaxAge:          600,
	}
	listed := cors.Handler(opts)
	opts.AllowedHeaders = []string{"*"}
	withParams := cors.Handler(opts)
	return func(next http.Handler) http.Handler {
		l, p := listed(next), withParams(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodOptions && asksParamHeaders(r.Header.Values("Access-Control-Request-Headers"), headers) {
				p.ServeHTTP(w, r)
				return
			}
			l.ServeHTTP(w, r)
		})
	}
}

// asksParamHeaders reports whether a preflight's requested headers
// include an Mcp-Param-{Name} and are otherwise all listed. Names end at
// a comma or a space, as go-chi/cors reads them: the names checked are
// those the permissive handler then allows.
func asksParamHeaders(requested, listed []string) bool {
	params := false
	for _, line := range requested {
		for _, h := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' }) {
			h = strings.TrimSpace(h)
			switch {
			case h == "":
			case len(h) > len(protocol.HeaderParamPrefix) && strings.EqualFold(h[:len(protocol.HeaderParamPrefix)], protocol.HeaderParamPrefix):
				params = true
			case !slices.ContainsFunc(listed, func(l string) bool { return strings.EqualFold(l, h) }) && !strings.EqualFold(h, "Origin"):
				return false
			}
		}
	}
	return params
}

func (t *Transport) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	t.unwantedBody(w, r)
	w.Header().Set("Allow", "GET, POST, DELETE")
	writeError(w, http.StatusMethodNotAllowed, nil, protocol.Errorf(protocol.CodeInvalidRequest, "method not allowed: use POST, GET or DELETE"))
}

// OpenStreams is the number of SSE responses being served now (GET
// streams and streamed POST responses), for metrics.
func (t *Transport) OpenStreams() int64 { return t.openStreams.Load() }

// Sessions returns the client-session store.
func (t *Transport) Sessions() SessionStore { return t.sessions }

// ResourceUpdated sends notifications/resources/updated for uri to every
// client session of tenantID subscribed to exactly that URI, on the
// session's GET stream; a session without a connected stream finds it in
// the stream's log when it reconnects (Last-Event-ID). With in-memory
// sessions it reports how many sessions it notified.
//
// With shared client sessions it must be called on the replica where the
// change happened, and only there: that replica delivers the
// notification to every subscribed session, wherever its stream is
// (docs/adr/0016-resource-updates-logged-by-origin.md; SharedStore). A
// shared store may queue the work and return at once, reporting 0;
// SharingStats counts the outcome.
//
// The listen streams of the 2026-07-28 era whose filter names uri hear of
// it too, on this replica at once and on the others through the
// ListenBus; the count includes this replica's.
func (t *Transport) ResourceUpdated(tenantID, uri string) (int, error) {
	return t.ResourceUpdatedContext(context.Background(), tenantID, uri)
}

// ResourceUpdatedContext is ResourceUpdated by a delivery whose span ctx
// carries: the other replicas' deliveries to their listen streams link
// to it.
func (t *Transport) ResourceUpdatedContext(ctx context.Context, tenantID, uri string) (int, error) {
	if tenantID == "" {
		tenantID = tenant.Default
	}
	listening := t.listenEvent(ListenEvent{Tenant: tenantID, Method: protocol.NotificationResourcesUpdated, URI: uri, Cause: t.cause(ctx)})
	n, err := t.fanout.ResourceUpdated(tenantID, uri)
	return n + listening, err
}

// ToolsListChanged sends notifications/tools/list_changed to every client
// session, on its GET stream or into the stream's log for when it
// reconnects, and reports how many sessions it told. Every session sees
// the same tools, so there is no filter.
//
// A shared session is told once however many replicas saw the change: by
// its home, or by one that takes over from a dead home
// (ClientSession.broadcast).
func (t *Transport) ToolsListChanged() (int, error) {
	return t.ListChanged(protocol.NotificationToolsListChanged)
}

// Close ends every client session, which cancels running handlers and
// closes every stream, then waits for detached handlers until ctx is done.
func (t *Transport) Close(ctx context.Context) error {
	t.streamsMu.Lock()
	t.closed = true
	t.streamsMu.Unlock()
	t.listens.stopAll()
	t.sessions.Close()
	t.cancel()
	done := make(chan struct{})
	go func() { t.wg.Wait(); t.streams.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close transport: handlers still running: %w", ctx.Err())
	}
}

// CloseStreams ends every standalone GET stream with a retry hint, so that
// clients reconnect (to another replica) instead of holding a connection
// that keeps a shutting-down server alive. Streamed POST responses finish.
func (t *Transport) CloseStreams(retryMs int) {
	t.draining.Store(true)
	t.listens.stopAll()
	t.sessions.Each(func(s *ClientSession) bool {
		s.standalone.closeConn(retryMs)
		return true
	})
}

// Sharing shares client sessions between the replicas of a deployment
// (DESIGN.md, Scale-out; docs/adr/0015-shared-client-sessions.md). A
// transport given one (Options.Share) opens its session store there.
type Sharing interface {
	// Open returns the session store of one transport: its sessions end
	// when ctx does (the transport's Close), and cfg is what the
	// transport's Options say of them.
	Open(ctx context.Context, cfg SharingConfig) (SharedStore, error)
}

// SharingConfig is what a shared session store takes from Options.
type SharingConfig struct {
	IdleTimeout             time.Duration // Options.SessionIdleTimeout
	MaxSessions             int
	MaxSessionsPerPrincipal int
	MaxSessionsPerTenant    int
	EventLogSize            int
	Logger                  zerolog.Logger
	Now                     func() time.Time
	// Listen delivers to this replica's listen streams an event another
	// replica published (ListenBus).
	Listen func(ListenEvent)
}

// SharedStore is the session store of a Sharing: its sessions are copies
// of sessions other replicas serve too (ClientSession.Share), and it
// delivers resource updates to the subscribers on every replica, and the
// events of listen streams to every replica's listeners.
type SharedStore interface {
	SessionStore
	Fanout
	ListenBus
}

// SharingStats counts what a shared store's log writer did.
type SharingStats struct {
	// Updates: resource updates queued for the subscribers' logs.
	Updates int64
	// Notified: notifications appended to subscribers' logs.
	Notified int64
	// Dropped: log writes (resource updates and other GET-stream
	// messages) dropped on a full queue.
	Dropped int64
	// ListenPublished: listen events published to the other replicas;
	// ListenDropped: those lost (a full queue, Redis down or failing).
	ListenPublished, ListenDropped int64
}

// SharingStats returns the counters of the shared client sessions; zero
// when they are not shared. Each is read atomically, the set is not one
// snapshot.
func (t *Transport) SharingStats() SharingStats { return t.fanout.Stats() }
