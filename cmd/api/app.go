package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/admin"
	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/connlimit"
	"github.com/mcp-runtime/mcp-runtime/internal/federation"
	"github.com/mcp-runtime/mcp-runtime/internal/federation/heldroute"
	"github.com/mcp-runtime/mcp-runtime/internal/guarded"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/ratelimit"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/guard"
	"github.com/mcp-runtime/mcp-runtime/internal/runtimetools"
	"github.com/mcp-runtime/mcp-runtime/internal/statesync"
	"github.com/mcp-runtime/mcp-runtime/internal/statetools"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry"
	"github.com/mcp-runtime/mcp-runtime/internal/tlscert"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	"github.com/mcp-runtime/mcp-runtime/internal/transport/redisshare"
)

// version is stamped by the build (-ldflags "-X main.version=...").
var version = "dev"

type app struct {
	cfg       config.Config
	log       zerolog.Logger
	logs      io.Closer // closed after everything else, which may log
	transport *transport.Transport
	router    chi.Router
	// stack stops every component newApp started, State Sync's notifier and
	// then the transport first, the store last (closeStack).
	stack *closeStack
	state *state
	certs *tlscert.Reloader // nil: plain HTTP
	// conns caps the open connections; set by serveOn before it serves.
	conns *connlimit.Listener
}

// newApp builds the server from cfg; getenv is the environment, of which
// it reads only OpenTelemetry's standard variables (config.Telemetry).
func newApp(ctx context.Context, cfg config.Config, logOut io.Writer, getenv func(string) string) (a *app, err error) {
	logger, logs, err := logging.New(logOut, logging.Options{Level: cfg.LogLevel, Format: cfg.LogFormat})
	if err != nil {
		return nil, fmt.Errorf("logLevel: %w", err)
	}
	// Whatever started before a failure is stopped again: a caller that
	// gets an error must not inherit goroutines.
	stack := &closeStack{}
	defer func() {
		if err != nil {
			_ = stack.close(context.Background())
			_ = logs.Close()
		}
	}()
	// First in, last out: spans of the shutdown itself are exported.
	tel, err := telemetry.Setup(ctx, cfg.Telemetry.TelemetryConfig(version), getenv)
	if err != nil {
		return nil, err
	}
	stack.push("telemetry", tel.Shutdown)
	tools, err := handlers.NewToolRegistry(cfg.ToolNameSeparator)
	if err != nil {
		return nil, fmt.Errorf("toolNameSeparator: %w", err)
	}
	srv := handlers.NewServer(handlers.Options{
		Name: "mcp-runtime", Title: "mcp-runtime", Version: version,
		Instructions: "mcp-runtime gives agents durable shared state: memory (memory_*), multi-agent collaboration sessions (session_*), " +
			"an agent registry (agent_*) and a trace of every tool call (trace_*). Every entity is also a resource " +
			"(memory://{namespace}/{key}, session://{id}, agent://{id}, trace://{id}). Call runtime_info to see what this server offers.",
		PageSize: cfg.Transport.PageSize,
	}, tools)
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w", cfg.Listen, err)
	}
	met := newMetrics()
	st, err := openState(ctx, cfg, tel, logger)
	if err != nil {
		return nil, err
	}
	stack.push("state", st.close)
	authOpts := auth.Options{Log: logger.With().Str("component", "auth").Logger()}
	if !cfg.RateLimits.Unauthenticated.Off() {
		authOpts.Failures = ratelimit.NewAddresses(cfg.RateLimits.Unauthenticated, 0, nil)
		if proxies, _ := ratelimit.ParseProxies(cfg.RateLimits.TrustedProxies); len(proxies) > 0 { // validated
			authOpts.ClientAddress = func(r *http.Request) string {
				return proxies.Client(r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
			}
		}
	}
	if cfg.Auth.Mode == auth.ModeAPIKey {
		authOpts.Keys = storedKeys(st.backend)
		if len(cfg.Auth.APIKeys) == 0 && cfg.Admin.Token == "" {
			logger.Warn().Msg("auth.mode is apikey with no configured key and no admin token: no key can be created, so nobody can connect")
		}
	}
	authn, err := auth.New(cfg.Auth, authOpts)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	stack.pushFunc("auth", authn.Close)
	var certs *tlscert.Reloader
	if cfg.TLS.Enabled() {
		if certs, err = tlscert.New(cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ReloadInterval(), logger); err != nil {
			return nil, err
		}
	}
	limits := newLimits(cfg, st, logger)
	stack.pushFunc("rate limits", limits.close)
	// The gate closes when the process nears GOMEMLIMIT or the in-process
	// cache cannot get below its high-water mark (PRD, memory-pressure check).
	pressure := guard.NewMonitor(time.Second, func() guard.Pressure {
		return guard.Pressure(st.backend.Stats().L1.PressureLevel)
	})
	stack.pushFunc("memory-pressure monitor", pressure.Close)
	// The federation and its surface are built after the transport, which
	// they notify, but the transport calls into them: their places in the
	// stack are taken here, below the transport's, so they stop after it.
	var (
		fed   *federation.Federation
		surf  *federation.Surface
		route *heldroute.Route
	)
	stack.push("held-call route", func(context.Context) error {
		if route == nil {
			return nil
		}
		return route.Close()
	})
	stack.push("federation", func(ctx context.Context) error {
		if fed == nil {
			return nil
		}
		return fed.Close(ctx)
	})
	stack.pushFunc("upstream surface", func() {
		if surf != nil {
			surf.Close()
		}
	})
	if cfg.Auth.Mode == auth.ModeNone && !isLoopback(host) {
		logger.Warn().Str("listen", cfg.Listen).Msg("auth.mode is none and the server listens beyond loopback: anyone who reaches it acts on the default tenant; set auth.mode to apikey or oauth")
	}
	// With REDIS_URL, client sessions are shared by the replicas, through
	// the connection the cache tier and rate limits use.
	var share transport.Sharing
	if rdb := st.redisClient(); rdb != nil {
		shared, err := redisshare.New(rdb, redisshare.Options{
			KeyPrefix: cfg.Redis.KeyPrefix, Timeout: cfg.Redis.Timeouts().Hot, Conn: st.redis,
		})
		if err != nil {
			return nil, fmt.Errorf("build transport: %w", err)
		}
		share = shared
	}
	syncEngine, err := newSyncEngine(cfg.StateSync)
	if err != nil {
		return nil, err
	}
	var hints *statesync.Hints
	if syncEngine != nil {
		hints = statesync.NewHints(syncEngine, cfg.StateSync.Hints.ImmutableTTL())
	}
	listHints := &cacheHints{sync: hints, lists: cfg.Federation.SyncInterval()}
	tr, err := transport.New(srv, transport.Options{
		AllowedOrigins:          cfg.AllowedOrigins,
		LoopbackOnly:            isLoopback(host),
		MaxBodyBytes:            cfg.Transport.MaxBodyBytes,
		SessionIdleTimeout:      cfg.Transport.SessionIdleTimeout(),
		KeepAliveInterval:       cfg.Transport.KeepAliveInterval(),
		EventLogSize:            cfg.Transport.EventLogSize,
		MaxSessions:             cfg.Transport.MaxSessions,
		MaxSessionsPerPrincipal: cfg.SessionsPerPrincipal(),
		MaxSessionsPerTenant:    cfg.Transport.MaxSessionsPerTenant,
		MaxStreamsPerSession:    cfg.Transport.MaxStreamsPerSession,
		MaxRequestsPerPrincipal: cfg.RequestsPerPrincipal(),
		MaxListensPerPrincipal:  cfg.ListensPerPrincipal(),
		MaxClientInfoBytes:      cfg.Transport.MaxClientInfoBytes,
		MaxCapabilitiesBytes:    cfg.Transport.MaxCapabilitiesBytes,
		MaxInitializeDepth:      cfg.Transport.MaxInitializeDepth,
		MaxClientResponseBytes:  cfg.Transport.MaxClientResponseBytes,
		ReadBodyTimeout:         cfg.Transport.ReadBodyTimeout(),
		WriteTimeout:            cfg.Transport.WriteTimeout(),
		Logger:                  logger,
		Auth:                    authn,
		Limit:                   limits.request,
		Observe:                 met.observeHTTP,
		Share:                   share,
		Hints:                   listHints,
		Telemetry:               tel,
	})
	if err != nil {
		return nil, fmt.Errorf("build transport: %w", err)
	}
	stack.push("transport", tr.Close)
	policy := guard.NewPolicy(logger, cfg.Limits.MaxRequestBytes, pressure.Level)
	pipe, err := guarded.New(pipeline.Config{
		Limits: cfg.Limits.LimitsConfig(), Timeouts: cfg.Timeouts.TimeoutConfig(),
		Response: cfg.Response.ResponseLimits(), Separator: cfg.ToolNameSeparator,
		Record: func(c pipeline.CallRecord) { st.record(c); met.observeCall(c) }, Admit: limits.toolCall,
		Tracer: tel.Tracer(),
	}, policy, logger)
	if err != nil {
		return nil, fmt.Errorf("build guardrails: %w", err)
	}
	err = runtimetools.Register(srv, pipe, runtimetools.Info{
		Name: "mcp-runtime", Version: version, Started: time.Now(),
		Sessions: func() int { return tr.Sessions().Len() },
	})
	if err != nil {
		return nil, fmt.Errorf("register built-in tools: %w", err)
	}
	sealer, err := roundSealer(cfg, logger)
	if err != nil {
		return nil, err
	}
	srv.SetStateSealer(sealer)
	var deliveries trace.Tracer // nil: deliveries are not traced
	if tel.Enabled() {
		deliveries = tel.Tracer()
	}
	notifier, err := wireStateSync(cfg.StateSync, syncEngine, srv, tr, deliveries, logger)
	if err != nil {
		return nil, err
	}
	// Closed before the transport it delivers to: what is queued is
	// delivered while the streams are still there.
	stack.push("state sync notifier", notifier.Close)
	err = statetools.Register(srv, pipe, st.backend, statetools.Options{
		ParticipantLimit: cfg.Store.ParticipantLimit, Log: logger, Changed: notifier.Changed, Listed: notifier.Listed,
		TraceSampleRate: &cfg.Traces.SampleRate,
	})
	if err != nil {
		return nil, fmt.Errorf("register state tools: %w", err)
	}
	if err := met.components(tr, st, notifier); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	// The upstreams' prompts, resources and templates, served beside the
	// server's own (registered above, so their schemes are known).
	surf = federation.NewSurface(srv, tr, cfg.ToolNameSeparator, cfg.Federation.HealthInterval(), logger)
	var held federation.HeldRoute
	if rdb := st.redisClient(); rdb != nil {
		// A modern client's retry of a call held for its answers may land
		// on any replica: the route takes it to the one holding the call.
		route = heldroute.New(rdb, cfg.Redis.KeyPrefix, logger)
		held = route
	}
	fed, err = newFederation(cfg, st.backend, pipe, tools, tr.ToolsListChanged, met.reg, surf, held, tel, logger)
	if err != nil {
		return nil, err
	}
	fed.ServeHeld()
	listHints.upstreams = fed.Manager() // before the listener serves a request
	srv.SetFederated(surf)
	srv.SetAmbiguousTool(federation.AmbiguousTool(cfg.Response.ResponseLimits()))
	if err := fed.Start(ctx); err != nil {
		return nil, err
	}
	surf.Start()
	r := chi.NewRouter()
	// First, so that no route, not even a 404, waits for ever for a body.
	r.Use(transport.BodyDeadline(cfg.Transport.ReadBodyTimeout()))
	r.Use(securityHeaders(cfg.TLS.Enabled()))
	r.Group(func(r chi.Router) {
		r.Use(fed.LoopGuard) // before the transport: a looping request creates no session
		tr.Mount(r, "/mcp")
	})
	adminOpts := admin.Options{Token: cfg.Admin.Token, Log: logger}
	if cfg.Auth.Mode != auth.ModeNone {
		adminOpts.Principals = authn
	}
	if cfg.Auth.Mode == auth.ModeAPIKey {
		adminOpts.Keys = st.backend // /admin/apikeys
	}
	admin.New(fed.Manager(), adminOpts).Mount(r)
	// Protected Resource Metadata (RFC 9728), in oauth mode: public, it
	// tells a client where to get a token.
	if paths := auth.MetadataPaths(cfg.Auth); len(paths) > 0 {
		prm := auth.MetadataHandler(cfg.Auth)
		for _, path := range paths {
			r.Method(http.MethodGet, path, prm)
		}
	}
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(met.reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	a = &app{cfg: cfg, log: logger, logs: logs, transport: tr, router: r, stack: stack, state: st, certs: certs}
	r.Get("/healthz", healthz)
	r.Get("/readyz", a.readyz)
	if err := met.connections(a.connStats); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	if err := met.auth(authn.Stats); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	return a, nil
}

// connStats are the connection cap's counters (zero until serveOn).
func (a *app) connStats() connlimit.Stats {
	if a.conns == nil {
		return connlimit.Stats{}
	}
	return a.conns.Stats()
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serve listens and serves until ctx ends, then shuts down: it stops
// accepting, ends the standalone SSE streams with a retry hint so clients
// reconnect (to another replica, in a deployment), lets in-flight requests
// finish within the grace period, and ends every client session.
func (a *app) serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		a.abandon()
		return fmt.Errorf("listen on %s: %w", a.cfg.Listen, err)
	}
	return a.serveOn(ctx, ln)
}

// abandon stops what newApp started, for an app that will not serve.
func (a *app) abandon() {
	_ = a.stack.close(context.Background())
	_ = a.logs.Close()
}

// serveOn serves on ln until ctx ends; see serve.
func (a *app) serveOn(ctx context.Context, ln net.Listener) error {
	// The connection cap (transport.maxConnections). Over TLS a refused
	// connection is closed without an answer: plain bytes would mean
	// nothing to a client expecting a handshake.
	var refusal []byte
	if a.certs == nil {
		refusal = connlimit.ServiceUnavailable(string(protocol.AppendError(nil, nil, protocol.Errorf(protocol.CodeInvalidRequest,
			"server busy: %d connections are open, the limit of transport.maxConnections; retry shortly", a.cfg.Transport.MaxConnections))))
	}
	conns, err := connlimit.New(ln, connlimit.Options{Max: a.cfg.Transport.MaxConnections, Refusal: refusal})
	if err != nil {
		ln.Close()
		a.abandon()
		return fmt.Errorf("transport.maxConnections: %w", err)
	}
	defer a.logs.Close()
	a.conns, ln = conns, conns
	hs := &http.Server{
		Handler:           a.router,
		ReadHeaderTimeout: a.cfg.Transport.ReadHeaderTimeout(),
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ConnState:         conns.ConnState,
		// No WriteTimeout: it would cut long-lived SSE streams, each one long response.
		// No ReadTimeout either, for the same reason: the body deadline
		// (transport.BodyDeadline) and the listener bound the waits.
	}
	serve := func() error { return hs.Serve(ln) }
	scheme := "http"
	if a.certs != nil {
		// HTTP/2 and HTTP/1.1 over TLS; an SSE stream is a long response
		// on either.
		hs.TLSConfig = a.certs.Config()
		serve = func() error { return hs.ServeTLS(ln, "", "") }
		scheme = "https"
	}
	ev := a.log.Info().Str("addr", ln.Addr().String()).Str("scheme", scheme).Str("version", version)
	if a.state.persistent {
		ev.Str("store", "postgres").Msg("mcp-runtime listening")
	} else {
		ev.Str("store", "memory").Msg("mcp-runtime listening; embedded in-memory store: nothing survives a restart (set DATABASE_URL to keep state)")
	}
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	a.log.Info().Msg("shutting down")
	grace, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownGrace())
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(grace) }()
	a.transport.CloseStreams(1000)
	// Shutdown waits for connections to go idle: one waiting for a body
	// that never comes would hold it up until its deadline, past the
	// grace period. Requests being handled are not touched.
	conns.Drain()
	err = <-shut
	// The transport waits for the calls still running; then the
	// upstreams are disconnected, the background work stops, and the
	// traces are flushed to the store, closed last.
	if cerr := a.stack.close(grace); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		_ = hs.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	a.log.Info().Msg("stopped")
	return nil
}
