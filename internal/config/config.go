// Package config builds the one typed [Config] that the rest of mcp-runtime
// is wired from.
//
// A value is looked up in four layers, each overriding the one before it:
//
//	defaults < YAML file < environment < command-line flags
//
// Defaults make a bare `go run ./cmd/api` work. The YAML file (path from the
// -config flag, else MCP_CONFIG; none if both are empty) holds what an
// operator keeps in version control. The environment carries the few values a
// deployment sets per environment (a Kubernetes Deployment sets env, not
// files), and flags win because they are what a person types while debugging.
//
// Start-up stops on the first layer that cannot be read and, after all layers
// are merged, on any invalid value. Every error names the key as its
// camelCase dotted YAML path (transport.keepAliveIntervalMs), because that is
// the one name the operator can grep for whichever layer set it. Unknown YAML
// keys are errors too: a misspelt key silently falling back to its default is
// the failure mode this package exists to prevent.
//
// The package reads no process state of its own: [Load] takes the arguments
// and an environment lookup function, so tests run in parallel without
// touching os.Args or os.Setenv.
package config

import (
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// Config is the complete runtime configuration. The YAML keys are the yaml
// tags below. Durations are stored as integer milliseconds, exactly as they
// are written in YAML (the Ms suffix says so), and exposed as
// [time.Duration] through methods so callers cannot get the unit wrong.
type Config struct {
	// Listen is the host:port the HTTP server binds.
	Listen string `yaml:"listen"`
	// AllowedOrigins lists the browser origins (scheme://host[:port]) the
	// transport accepts, or the single value "*" for any. Empty means
	// localhost origins only; the transport gives the empty list that meaning.
	// Load returns the entries lower-cased with any trailing "/" removed, the
	// form in which browsers send the Origin header.
	AllowedOrigins []string `yaml:"allowedOrigins"`
	// LogLevel is one of trace, debug, info, warn, error.
	LogLevel string `yaml:"logLevel"`
	// LogFormat is json (for log collectors) or console (for people).
	LogFormat string `yaml:"logFormat"`
	// ToolNameSeparator joins the segments of a canonical dotted tool name
	// (memory.store) into the exposed name (memory_store).
	ToolNameSeparator string `yaml:"toolNameSeparator"`
	// Transport tunes the Streamable HTTP transport.
	Transport Transport `yaml:"transport"`
	// ShutdownGraceMs is how long in-flight requests get to finish after
	// SIGTERM; see [Config.ShutdownGrace].
	ShutdownGraceMs int64 `yaml:"shutdownGraceMs"`
	// DatabaseURL selects PostgreSQL for the durable state; empty means the
	// embedded in-memory store, whose data does not survive a restart.
	DatabaseURL string `yaml:"databaseURL"`
	// RedisURL enables Redis as the second cache tier and the bus between
	// replicas; empty means one process with no second tier.
	RedisURL string `yaml:"redisURL"`
	// Cache is the in-process cache tier.
	Cache Cache `yaml:"cache"`
	// Store, Redis and Traces tune the durable state.
	Store  Store  `yaml:"store"`
	Redis  Redis  `yaml:"redis"`
	Traces Traces `yaml:"traces"`
	// StateSync is the cache-control and causal-invalidation layer.
	StateSync StateSync `yaml:"stateSync"`
	// Timeouts, Limits and Response are the runtime guardrails.
	Timeouts Timeouts `yaml:"timeouts"`
	Limits   Limits   `yaml:"limits"`
	Response Response `yaml:"response"`
	// Upstreams are the upstream MCP servers declared in the file; more
	// can be registered at run time through the admin API.
	Upstreams  []upstream.Config `yaml:"upstreams"`
	Federation Federation        `yaml:"federation"`
	// Admin configures the admin REST API.
	Admin Admin `yaml:"admin"`
	// Auth decides who a request comes from: none, API keys or OAuth.
	Auth auth.Config `yaml:"auth"`
	// RateLimits are per-principal request budgets.
	RateLimits RateLimits `yaml:"rateLimits"`
	// TLS serves HTTPS directly when its files are set.
	TLS TLS `yaml:"tls"`
	// RequestState seals the state of multi-round-trip requests.
	RequestState RequestState `yaml:"requestState"`
	// Telemetry exports OpenTelemetry traces and metrics; off without an
	// endpoint here or in the environment.
	Telemetry Telemetry `yaml:"telemetry"`
}

// Transport holds the settings of the Streamable HTTP transport.
type Transport struct {
	// MaxBodyBytes caps a request body; larger bodies get 413.
	MaxBodyBytes int64 `yaml:"maxBodyBytes"`
	// SessionIdleTimeoutMs ends a client session that has seen no request for
	// this long; see [Transport.SessionIdleTimeout].
	SessionIdleTimeoutMs int64 `yaml:"sessionIdleTimeoutMs"`
	// KeepAliveIntervalMs is the period of the SSE comment keep-alive, which
	// stops proxies from closing idle streams; see [Transport.KeepAliveInterval].
	KeepAliveIntervalMs int64 `yaml:"keepAliveIntervalMs"`
	// EventLogSize is how many events each SSE stream keeps so a client can
	// resume with Last-Event-ID.
	EventLogSize int `yaml:"eventLogSize"`
	// ReadHeaderTimeoutMs bounds reading request headers (slowloris
	// protection); see [Transport.ReadHeaderTimeout].
	ReadHeaderTimeoutMs int64 `yaml:"readHeaderTimeoutMs"`
	// ReadBodyTimeoutMs bounds reading a request body, so a client cannot
	// hold a connection and its buffer by sending slowly; see
	// [Transport.ReadBodyTimeout].
	ReadBodyTimeoutMs int64 `yaml:"readBodyTimeoutMs"`
	// WriteTimeoutMs bounds each write of a response or SSE event, so a
	// client that stops reading is dropped; see [Transport.WriteTimeout].
	WriteTimeoutMs int64 `yaml:"writeTimeoutMs"`
	// PageSize is the number of items per page for tools/list,
	// resources/list and prompts/list.
	PageSize int `yaml:"pageSize"`
	// MaxSessions caps the client sessions held at once, so a client that
	// never ends its sessions cannot exhaust memory.
	MaxSessions int `yaml:"maxSessions"`
	// MaxSessionsPerPrincipal caps one principal's client sessions; over
	// it initialize gets 429. 0, the default, means a tenth of
	// MaxSessions when requests are authenticated and no cap in auth mode
	// none; see [Config.SessionsPerPrincipal].
	MaxSessionsPerPrincipal int `yaml:"maxSessionsPerPrincipal"`
	// MaxSessionsPerTenant caps the client sessions of one tenant, all its
	// principals together (0: no cap, the default); over it initialize
	// gets 429.
	MaxSessionsPerTenant int `yaml:"maxSessionsPerTenant"`
	// MaxClientInfoBytes and MaxCapabilitiesBytes bound initialize's
	// params.clientInfo and params.capabilities (JSON bytes), and
	// MaxInitializeDepth how deeply either nests: a client session keeps
	// them for its life, in memory and in Redis. Over a bound, initialize
	// gets -32602 naming the member and the limit.
	MaxClientInfoBytes   int `yaml:"maxClientInfoBytes"`
	MaxCapabilitiesBytes int `yaml:"maxCapabilitiesBytes"`
	MaxInitializeDepth   int `yaml:"maxInitializeDepth"`
	// MaxClientResponseBytes bounds a client's response to a
	// server-to-client request (sampling, elicitation, roots/list); a
	// larger one gets 413 and the request waiting for it fails.
	MaxClientResponseBytes int `yaml:"maxClientResponseBytes"`
	// MaxStreamsPerSession caps the SSE streams one client session has
	// open on a replica; a GET that would open one more gets 429.
	MaxStreamsPerSession int `yaml:"maxStreamsPerSession"`
	// MaxRequestsPerPrincipal caps the requests of the 2026-07-28 era
	// one principal has in flight on a replica, each holding its stream
	// (the modern counterpart of the session caps); over it a request
	// gets 429. 0, the default, means 64 when requests are authenticated
	// and no cap in auth mode none, where every client is one principal;
	// see [Config.RequestsPerPrincipal].
	MaxRequestsPerPrincipal int `yaml:"maxRequestsPerPrincipal"`
	// MaxListensPerPrincipal caps the subscriptions/listen streams one
	// principal has open on a replica; one more gets 429. 0, the
	// default, means 64 when requests are authenticated and no cap in
	// auth mode none; see [Config.ListensPerPrincipal].
	MaxListensPerPrincipal int `yaml:"maxListensPerPrincipal"`
	// MaxConnections caps the connections held open at once. At the cap
	// a new connection takes the place of one that has waited at least a
	// second for its client to send (stalled requests first, then idle
	// keep-alives); if none has, it is answered 503 and closed
	// (internal/connlimit).
	MaxConnections int `yaml:"maxConnections"`
}

// Default returns the configuration used when nothing overrides it. It is
// valid: Default().Validate() returns nil.
func Default() Config {
	return Config{
		// Loopback, not all interfaces: a development server must not be
		// reachable from the network by accident.
		Listen:            "127.0.0.1:8080",
		AllowedOrigins:    []string{},
		LogLevel:          "info",
		LogFormat:         "json",
		ToolNameSeparator: "_",
		Transport: Transport{
			MaxBodyBytes:         4 << 20,
			SessionIdleTimeoutMs: 30 * 60 * 1000,
			KeepAliveIntervalMs:  15_000,
			EventLogSize:         1024,
			ReadHeaderTimeoutMs:  10_000,
			ReadBodyTimeoutMs:    30_000,
			WriteTimeoutMs:       30_000,
			PageSize:             100,
			MaxSessions:          10_000,
			MaxStreamsPerSession: 32,
			// From the transport, which knows what real clients send.
			MaxClientInfoBytes:     transport.DefaultMaxClientInfoBytes,
			MaxCapabilitiesBytes:   transport.DefaultMaxCapabilitiesBytes,
			MaxInitializeDepth:     transport.DefaultMaxInitializeDepth,
			MaxClientResponseBytes: transport.DefaultMaxClientResponseBytes,
			MaxConnections:         4096,
		},
		// Below the 30 s Kubernetes terminationGracePeriodSeconds default, so
		// the process exits on its own before the kubelet sends SIGKILL.
		ShutdownGraceMs: 25_000,
		Timeouts:        defaultTimeouts(),
		Limits:          defaultLimits(),
		Response:        defaultResponse(),
		Cache:           defaultCache(),
		Store:           defaultStore(),
		Redis:           defaultRedis(),
		Traces:          defaultTraces(),
		StateSync:       defaultStateSync(),
		Federation:      defaultFederation(),
		Auth:            auth.Default(),
		RateLimits:      defaultRateLimits(),
		TLS:             defaultTLS(),
		RequestState:    RequestState{TTLMs: 600_000},
		Telemetry:       defaultTelemetry(),
	}
}

// defaultRequestsPerPrincipal is RequestsPerPrincipal's cap when requests
// are authenticated and none is set: twice a session's streams.
const defaultRequestsPerPrincipal = 64

// RequestsPerPrincipal is the cap on one principal's modern requests in
// flight that the transport enforces: the configured one, or, unset,
// defaultRequestsPerPrincipal when requests are authenticated and none
// in auth mode none.
func (c Config) RequestsPerPrincipal() int {
	if n := c.Transport.MaxRequestsPerPrincipal; n > 0 || c.Auth.Mode == auth.ModeNone {
		return max(n, 0)
	}
	return defaultRequestsPerPrincipal
}

// defaultListensPerPrincipal is ListensPerPrincipal's cap when requests
// are authenticated and none is set: the go-sdk client opens a listen
// per subscribed resource, so a client watching a few dozen URIs fits.
const defaultListensPerPrincipal = 64

// ListensPerPrincipal is the cap on one principal's open listen streams
// that the transport enforces: the configured one, or, unset,
// defaultListensPerPrincipal when requests are authenticated and none in
// auth mode none, where every client is one principal.
func (c Config) ListensPerPrincipal() int {
	if n := c.Transport.MaxListensPerPrincipal; n > 0 || c.Auth.Mode == auth.ModeNone {
		return max(n, 0)
	}
	return defaultListensPerPrincipal
}

// SessionsPerPrincipal is the per-principal cap of client sessions the
// transport enforces: transport.maxSessionsPerPrincipal when set, and
// otherwise a tenth of transport.maxSessions (at least 1) when requests
// are authenticated, so that no one caller can take every session while
// a deployment still serves many callers each running many agents. In
// auth mode none every caller is the one anonymous principal, and a cap
// would be the whole deployment's: there is none by default (README,
// Limits).
func (c Config) SessionsPerPrincipal() int {
	if n := c.Transport.MaxSessionsPerPrincipal; n > 0 || c.Auth.Mode == auth.ModeNone {
		return n
	}
	return max(c.Transport.MaxSessions/10, 1)
}

// ShutdownGrace returns ShutdownGraceMs as a duration.
func (c Config) ShutdownGrace() time.Duration { return ms(c.ShutdownGraceMs) }

// SessionIdleTimeout returns SessionIdleTimeoutMs as a duration.
func (t Transport) SessionIdleTimeout() time.Duration { return ms(t.SessionIdleTimeoutMs) }

// KeepAliveInterval returns KeepAliveIntervalMs as a duration.
func (t Transport) KeepAliveInterval() time.Duration { return ms(t.KeepAliveIntervalMs) }

// ReadBodyTimeout returns ReadBodyTimeoutMs as a duration.
func (t Transport) ReadBodyTimeout() time.Duration { return ms(t.ReadBodyTimeoutMs) }

// WriteTimeout returns WriteTimeoutMs as a duration.
func (t Transport) WriteTimeout() time.Duration { return ms(t.WriteTimeoutMs) }

// ReadHeaderTimeout returns ReadHeaderTimeoutMs as a duration.
func (t Transport) ReadHeaderTimeout() time.Duration { return ms(t.ReadHeaderTimeoutMs) }

// ms converts milliseconds to a duration. Validate bounds every duration key
// by maxDurationMs, so for a valid Config the product cannot overflow.
func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
