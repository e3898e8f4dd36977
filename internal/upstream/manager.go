package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// Defaults of Options.
const (
	DefaultHealthInterval = 30 * time.Second
	DefaultGracePeriod    = 60 * time.Second
	DefaultSyncInterval   = 10 * time.Second
	DefaultDebounce       = 250 * time.Millisecond
	// DefaultMaxToolsPerServer is ten times the largest tool lists of
	// real servers (GitHub's server, every toolset on, has about a
	// hundred); model APIs cap a request at a few hundred tools anyway.
	DefaultMaxToolsPerServer = 1000
	// DefaultMaxToolListBytes: a thousand tools of 8 KiB each, schema
	// included; real tool lists are a few hundred KiB.
	DefaultMaxToolListBytes = 8 << 20
)

// Settings of the dialer of every upstream connection: net/http's own.
const (
	dialTimeout   = 30 * time.Second
	dialKeepAlive = 30 * time.Second
	// maxResponseHeaderBytes bounds the head of an upstream's answer
	// (net/http's default is 10 MiB).
	maxResponseHeaderBytes = 64 << 10
)

// Options configure a Manager.
type Options struct {
	// Declared are the servers of the configuration file: Source "config",
	// read-only through the admin API.
	Declared []Config
	// Store keeps the API-managed servers; required.
	Store Persistence
	// HealthInterval: how often connected servers are pinged (and their
	// tools re-listed) and failed ones reconnected, with backoff.
	HealthInterval time.Duration
	// GracePeriod: how long a failing server's last known tools (and
	// prompts, resources and templates) stay offered.
	GracePeriod time.Duration
	// MaxBackoff caps the pause between two attempts to reconnect a failed
	// server (federation.maxBackoffMs; zero: DefaultMaxBackoff), so a
	// server that comes back is in service again within about that long.
	MaxBackoff time.Duration
	// SyncInterval: how often API-managed servers are reloaded from Store
	// (other replicas change them).
	SyncInterval time.Duration
	// Debounce coalesces tool-set changes before OnToolsChanged.
	Debounce time.Duration
	// OnToolsChanged is called, never concurrently, after the merged tool
	// set really changed (names, descriptions, schemas, annotations).
	OnToolsChanged func()
	// OnPromptsChanged and OnResourcesChanged are called the same way
	// (debounced, never concurrently with each other or OnToolsChanged)
	// after the merged prompts, or the merged resources and resource
	// templates, really changed (see Surface).
	OnPromptsChanged   func()
	OnResourcesChanged func()
	// OnResourceUpdated is told a server's notifications/resources/updated
	// for a URI subscribed on it (Subscribe), with its subscribers. It is
	// called on the session's reading goroutine and must not block.
	OnResourceUpdated func(server, uri string, subscribers []string)
	ClientName        string
	ClientVersion     string
	// DeploymentID names this deployment, every replica of it, to the
	// upstreams; it is how a federation loop is recognised (see
	// HeaderVia). Empty: a random id, this process alone.
	DeploymentID string
	// MaxToolsPerServer and MaxToolListBytes bound one server's tool list
	// (zero: the defaults); over either, the server is in error.
	// MaxToolListBytes also bounds each of its prompt, resource and
	// resource-template lists.
	MaxToolsPerServer int
	MaxToolListBytes  int64
	// MaxPromptsPerServer and MaxResourcesPerServer bound one server's
	// prompt list and each of its resource and resource-template lists
	// (zero: the defaults); a list over its bound is left out whole and
	// reported in the server's status.
	MaxPromptsPerServer   int
	MaxResourcesPerServer int
	// ReservedSchemes are the URI schemes of the gateway's own resources
	// (case-insensitive): no upstream resource or template in them is
	// offered.
	ReservedSchemes []string
	// DeniedNetworks: no connection to an upstream may reach an address
	// in them, whatever its URL or a redirect names.
	DeniedNetworks []netip.Prefix
	// Metrics, when set, receives the state metrics.
	Metrics prometheus.Registerer
	// Tracer, when set, makes a client span of every tools/call sent to
	// a server under a recording span (docs/adr/0046-opentelemetry.md);
	// the call's trace context travels in its _meta and HTTP headers
	// whenever the caller's context carries one.
	Tracer trace.Tracer
	// ObserveCall, when set, is told every tools/call sent to a server:
	// how long it took and its error.type ("" for a success) — the
	// conventions' mcp.client.operation.duration. It must not block.
	ObserveCall func(ctx context.Context, server, tool string, d time.Duration, errType string)
	Log         zerolog.Logger

	// backoff replaces fullJitter (tests make retries fast with it).
	backoff backoffFunc
	// maxResponseBytes replaces DefaultMaxResponseBytes (tests lower it).
	maxResponseBytes int64
	// relistGap replaces minRelistGap (tests shorten it).
	relistGap time.Duration
	// maxSubscriptions replaces maxSubscriptionsPerServer (tests lower it).
	maxSubscriptions int
	// reconnectDelay replaces the reconnect backoff (tests that drive
	// reconnects themselves make it an hour).
	reconnectDelay func(failures int) time.Duration
}

// minRelistGap is the least time between two re-lists of one server
// prompted by its notifications/tools/list_changed: a server sending them
// without pause costs one tools/list a second, not one after another.
const minRelistGap = time.Second

// Persistence is what the manager needs from the store (package store
// implements it).
type Persistence interface {
	ListUpstreams(ctx context.Context) ([]store.UpstreamRecord, error)
	CreateUpstream(ctx context.Context, id string, config json.RawMessage) (store.UpstreamRecord, error)
	UpdateUpstream(ctx context.Context, id string, config json.RawMessage, ifVersion *int64) (store.UpstreamRecord, error)
	DeleteUpstream(ctx context.Context, id string) error
}

// Manager connects to the upstream servers, discovers their tools, keeps
// their state and forwards tool calls to them.
type Manager struct {
	opts    Options
	log     zerolog.Logger
	metrics *metrics
	backoff backoffFunc
	client  *http.Client // the base of every session's client
	// reach is the HeaderDeployments value: this deployment and those
	// behind the upstreams whose tools it offers (see reachHeader).
	reach atomic.Pointer[[]string]
	// listHint merges the tool-list hints of the servers whose tools
	// are offered (set with them, in recomputeLocked; read on every
	// tools/list of the modern era); nil when none gave one.
	listHint atomic.Pointer[ListHint]

	ctx    context.Context // background work; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// changed wakes the debouncer (capacity 1: a pending wake-up is
	// enough however many changes follow).
	changed chan struct{}

	mu      sync.Mutex
	servers map[string]*server
	tools   []Tool // merged tool set, sorted by Canonical
	toolsFP string // fingerprint of tools
	// surface is the merged prompts, resources and templates;
	// promptsFP and resourcesFP fingerprint its parts (see
	// mergeSurfaceLocked).
	surface                *Surface
	promptsFP, resourcesFP string
	// subs are the resource subscriptions held, by server id.
	subs map[string]*subscriptions
	// starting: Start was called; started: servers added from now on
	// are connected at once.
	starting, started bool
	closed            bool
	// changes counts the servers created, updated and deleted through the
	// API here, so a store reload can tell it read a list older than one
	// of them (see syncStore).
	changes uint64
}

// server is one upstream. A server's Config never changes: an update
// replaces the whole *server, so background work on the old one can tell
// it is stale (removed) and drop its results.
type server struct {
	cfg     Config
	source  Source
	version int64 // the store record's version (API servers)

	// opMu serializes connecting and discovery of this server.
	opMu sync.Mutex
	// busy is set while a health check runs, so checks do not pile up on
	// a slow server.
	busy atomic.Bool
	// relisting is set while a list_changed re-list runs; relist asks it
	// to list once more (see listChanged).
	relisting, relist atomic.Bool
	// lastRelist is when the last of those re-lists started; only the
	// goroutine holding relisting touches it.
	lastRelist time.Time

	// Guarded by Manager.mu.
	status Status
	conn   *conn
	tools  []Tool // last discovered tools (kept through the grace period)
	// surface is the last discovered prompts, resources and templates,
	// kept with the tools.
	surface serverSurface
	// deployments are those the server's answers named at the last
	// discovery (HeaderDeployments): where its tools come from.
	deployments []string
	// listHint is the cache hint of its last tool list; nil from a
	// legacy server.
	listHint *ListHint
	nextTry  time.Time
	// down is set when the last connection attempt failed: calls fail
	// fast (ErrUnavailable) until nextTry, when reconnect tries again.
	down       bool
	downReason string // why, in the words of failure.go
	reconnect  *time.Timer
	grace      *time.Timer
	removed    bool
}

// NewManager validates the options. Declared configurations are checked
// one by one; an error names the entry (upstreams[2].url: ...).
func NewManager(opts Options) (*Manager, error) {
	if opts.Store == nil {
		return nil, errors.New("upstream: Options.Store is required")
	}
	opts.HealthInterval = orDefault(opts.HealthInterval, DefaultHealthInterval)
	opts.GracePeriod = orDefault(opts.GracePeriod, DefaultGracePeriod)
	opts.SyncInterval = orDefault(opts.SyncInterval, DefaultSyncInterval)
	opts.Debounce = orDefault(opts.Debounce, DefaultDebounce)
	if opts.DeploymentID == "" {
		opts.DeploymentID = RandomDeploymentID()
	}
	if !ValidDeploymentID(opts.DeploymentID) {
		return nil, fmt.Errorf("upstream: deployment id %q: use 1 to %d characters of [A-Za-z0-9._-]", opts.DeploymentID, maxDeploymentIDLen)
	}
	if opts.MaxToolsPerServer <= 0 {
		opts.MaxToolsPerServer = DefaultMaxToolsPerServer
	}
	if opts.MaxToolListBytes <= 0 {
		opts.MaxToolListBytes = DefaultMaxToolListBytes
	}
	if opts.MaxPromptsPerServer <= 0 {
		opts.MaxPromptsPerServer = DefaultMaxPromptsPerServer
	}
	if opts.MaxResourcesPerServer <= 0 {
		opts.MaxResourcesPerServer = DefaultMaxResourcesPerServer
	}
	reserved := make([]string, 0, len(opts.ReservedSchemes))
	for _, sch := range opts.ReservedSchemes {
		reserved = append(reserved, strings.ToLower(sch))
	}
	opts.ReservedSchemes = reserved
	if opts.ClientName == "" {
		opts.ClientName = "mcp-runtime"
	}
	if opts.backoff == nil {
		opts.backoff = fullJitter
	}
	if opts.maxResponseBytes <= 0 {
		opts.maxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.relistGap <= 0 {
		opts.relistGap = minRelistGap
	}
	if opts.maxSubscriptions <= 0 {
		opts.maxSubscriptions = maxSubscriptionsPerServer
	}
	met, err := newMetrics(opts.Metrics)
	if err != nil {
		return nil, fmt.Errorf("upstream: registering metrics: %w", err)
	}
	m := &Manager{
		opts: opts, log: opts.Log, metrics: met, backoff: opts.backoff,
		changed: make(chan struct{}, 1),
		servers: make(map[string]*server),
		subs:    make(map[string]*subscriptions),
		client:  &http.Client{Transport: pooledTransport(opts.DeniedNetworks)},
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	seen := map[string]int{}
	for i, c := range opts.Declared {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("upstreams[%d].%w", i, err)
		}
		if err := c.CheckNetworks(opts.DeniedNetworks); err != nil {
			return nil, fmt.Errorf("upstreams[%d].%w", i, err)
		}
		if j, dup := seen[c.ID]; dup {
			return nil, fmt.Errorf("upstreams[%d].%w", i, invalid("id", "%q is already the id of upstreams[%d]", c.ID, j))
		}
		seen[c.ID] = i
		m.servers[c.ID] = newServer(c, SourceConfig, 0)
	}
	m.toolsFP = fingerprint(nil)
	m.mergeSurfaceLocked(nil, nil)
	m.reach.Store(&[]string{opts.DeploymentID})
	return m, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func newServer(c Config, src Source, version int64) *server {
	c = c.Normalized()
	c.Headers = maps.Clone(c.Headers)
	s := &server{cfg: c, source: src, version: version}
	s.status = Status{Config: c, Source: src, State: StateConnecting}
	if !c.IsEnabled() {
		s.status.State = StateDisabled
	}
	return s
}

// Start loads the API-managed servers, starts connecting every enabled
// server in the background (it does not wait for them) and starts the
// health, store-sync and debounce loops.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.starting || m.closed {
		m.mu.Unlock()
		return errors.New("upstream: Start called twice or after Close")
	}
	m.starting = true
	m.mu.Unlock()
	if err := m.syncStore(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	m.started = true
	for _, s := range m.servers {
		m.metrics.setState(s.cfg.ID, s.status.State, true)
		if s.cfg.IsEnabled() {
			m.connectLocked(s)
		}
	}
	m.mu.Unlock()
	m.goBackground(m.debounceLoop)
	m.goBackground(m.healthLoop)
	m.goBackground(m.storeLoop)
	return nil
}

// Close stops the loops, closes every session and waits for background
// work: no goroutine is left behind. Sessions are closed first, so calls
// and discoveries in flight fail at once instead of holding Close for a
// request timeout; they are closed in parallel, since each close may wait
// for the server (the SDK's DELETE, bounded at 5 s). When ctx ends first,
// the sessions are closed all the same and only the wait is cut short.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	var conns []*conn
	for _, s := range m.servers {
		m.stopGraceLocked(s)
		stopReconnectLocked(s)
		if s.conn != nil {
			conns = append(conns, s.conn)
			s.conn = nil
		}
	}
	m.mu.Unlock()
	m.cancel()
	var closing sync.WaitGroup
	for _, c := range conns {
		closing.Go(c.close)
	}
	done := make(chan struct{})
	go func() { closing.Wait(); m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("upstream: waiting for background work: %w", ctx.Err())
	}
}

// goBackground runs f in a goroutine Close waits for; after Close it does
// nothing.
func (m *Manager) goBackground(f func()) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.goBackgroundLocked(f)
}

func (m *Manager) goBackgroundLocked(f func()) bool {
	if m.closed {
		return false
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
	return true
}

// connectLocked starts connecting s (and discovering its tools) in the
// background.
func (m *Manager) connectLocked(s *server) {
	m.goBackgroundLocked(func() { m.syncServer(m.ctx, s, true, s.cfg.Retries()+1) })
}

// Tools returns the merged tool set, sorted by Canonical. It is a
// snapshot: cheap, and never changed afterwards.
func (m *Manager) Tools() []Tool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tools
}

// ToolListHint is how long, and for whom, the upstream servers whose
// tools are offered let their tool lists be cached: the shortest TTL,
// private if any says so. ok is false when none of them gave a hint
// (legacy servers, or none).
func (m *Manager) ToolListHint() (hint ListHint, ok bool) {
	if h := m.listHint.Load(); h != nil {
		return *h, true
	}
	return ListHint{}, false
}

// offeredLocked reports whether s's tools are in the merged set: it is
// connected, or failing but still within its grace period.
func (m *Manager) offeredLocked(s *server, now time.Time) bool {
	if s.removed || !s.cfg.IsEnabled() {
		return false
	}
	if s.status.State == StateConnected {
		return true
	}
	return s.status.StaleToolsUntil != nil && now.Before(*s.status.StaleToolsUntil)
}

// recomputeLocked rebuilds the merged tool set and surface and wakes
// the debouncer when either changed.
func (m *Manager) recomputeLocked() {
	now := time.Now()
	var tools []Tool
	var behind [][]string
	var hint *ListHint
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
		if m.offeredLocked(s, now) {
			tools = append(tools, s.tools...)
			behind = append(behind, s.deployments)
			hint = hint.merge(s.listHint)
		}
	}
	m.listHint.Store(hint)
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.Canonical, b.Canonical) })
	m.reach.Store(ptr(reachHeader(m.opts.DeploymentID, behind)))
	// In id order: the first server to list a URI offers it.
	slices.SortFunc(servers, func(a, b *server) int { return strings.Compare(a.cfg.ID, b.cfg.ID) })
	promptsChanged, resourcesChanged := m.mergeSurfaceLocked(servers, func(s *server) bool { return m.offeredLocked(s, now) })
	fp := fingerprint(tools)
	if fp == m.toolsFP && !promptsChanged && !resourcesChanged {
		return
	}
	m.tools, m.toolsFP = tools, fp
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// setStateLocked moves s to state to, logging and exporting the change
// (INV-MCP-ECO-200: the status follows the connection immediately).
func (m *Manager) setStateLocked(s *server, to State, errMsg string) {
	from := s.status.State
	s.status.State = to
	if from == to {
		return
	}
	ev := m.log.Info()
	if to == StateError {
		ev = m.log.Warn()
	}
	ev.Str("server", s.cfg.ID).Str("from", string(from)).Str("to", string(to)).Str("error", errMsg).
		Msg("upstream state changed")
	m.metrics.setState(s.cfg.ID, to, true)
}

// replaceLocked puts next in service in place of cur (nil: none) and
// returns the session the caller must close outside the lock, if any.
// When only call settings changed (request timeout, retries, category)
// and cur is connected, next takes over cur's session, tools and state:
// an edit of the category must not take a server's tools away until it
// has reconnected.
func (m *Manager) replaceLocked(cur, next *server) *conn {
	if cur == nil {
		m.addLocked(next)
		return nil
	}
	if cur.conn == nil || cur.status.State != StateConnected || !sameConnection(cur.cfg, next.cfg) {
		old := m.removeLocked(cur)
		m.addLocked(next)
		return old
	}
	next.conn = cur.conn.withConfig(next.cfg)
	next.tools = withCategory(cur.tools, next.cfg.TimeoutCategory())
	next.listHint = cur.listHint // the tools' own cache hint goes with them
	next.surface = cur.surface
	cfg := next.status.Config
	next.status = statusLocked(cur)
	next.status.Config, next.status.Source = cfg, next.source
	cur.conn = nil // handed over: not closed
	m.removeLocked(cur)
	m.servers[next.cfg.ID] = next
	return nil
}

// sameConnection reports whether a and b connect to the same server the
// same way, so a session opened under a serves b.
func sameConnection(a, b Config) bool {
	return a.URL == b.URL && maps.Equal(a.Headers, b.Headers) &&
		a.ConnectionTimeout() == b.ConnectionTimeout() && a.IsEnabled() && b.IsEnabled()
}

// removeLocked takes s out of service (deleted, disabled or replaced by a
// new configuration) and returns its session for the caller to close
// outside the lock.
func (m *Manager) removeLocked(s *server) *conn {
	s.removed = true
	m.stopGraceLocked(s)
	stopReconnectLocked(s)
	c := s.conn
	s.conn, s.tools, s.surface = nil, nil, serverSurface{}
	return c
}

func (m *Manager) stopGraceLocked(s *server) {
	if s.grace != nil && s.grace.Stop() {
		m.wg.Done() // the timer's function will not run
	}
	s.grace = nil
}

func (m *Manager) lookup(id string) (*server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.servers[id]
	if s == nil {
		return nil, fmt.Errorf("upstream %q: %w", id, ErrNotFound)
	}
	return s, nil
}

// statusLocked is a copy of s's status sharing nothing with it.
func statusLocked(s *server) Status {
	st := s.status
	st.Config.Headers = maps.Clone(st.Config.Headers)
	st.InvalidTools = slices.Clone(st.InvalidTools)
	st.SurfaceProblems = slices.Clone(st.SurfaceProblems)
	st.ResourceConflicts = slices.Clone(st.ResourceConflicts)
	st.LastSuccessAt = clonePtr(st.LastSuccessAt)
	st.LastDiscoveryAt = clonePtr(st.LastDiscoveryAt)
	st.StaleToolsUntil = clonePtr(st.StaleToolsUntil)
	return st
}

func ptr[T any](v T) *T { return &v }

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// pooledTransport is http.DefaultTransport with room to keep a connection
// per concurrent call open, and a dialer that refuses the denied
// networks. The default keeps two idle connections per host, so under 16
// concurrent proxied calls most requests opened a new TCP connection and
// the gateway ran at a sixth of the upstream's throughput (BENCHMARKS.md,
// "Gateway hop").
//
// Through an HTTP proxy (HTTPS_PROXY and friends) the proxy dials, not
// us: then only URLs and redirects naming a denied IP address are
// refused, and the proxy's own egress rules must do the rest.
func pooledTransport(denied deniedNetworks) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	t.DialContext = dialClientFirst(newDialer(denied).DialContext)
	t.MaxResponseHeaderBytes = maxResponseHeaderBytes
	return t
}

// DeploymentID is this deployment's id (Options.DeploymentID).
func (m *Manager) DeploymentID() string { return m.opts.DeploymentID }

// Deployments is the HeaderDeployments value for an answer to another
// deployment: this one and those behind the upstreams whose tools it
// offers. The slice is shared and must not be modified; it is shaped for
// http.Header.
func (m *Manager) Deployments() []string { return *m.reach.Load() }
