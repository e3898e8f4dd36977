package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/memstore"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgstore"
	"github.com/mcp-runtime/mcp-runtime/internal/store/tiered"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry"
	"github.com/mcp-runtime/mcp-runtime/internal/traces"
)

// state is the durable-state layer: the store behind the two-tier cache,
// the trace recorder and the expiry purge.
type state struct {
	backend    *tiered.Store
	recorder   *traces.Recorder
	persistent bool            // PostgreSQL, not the embedded store
	pg         *pgstore.Store  // the PostgreSQL store, for readiness; nil when embedded
	mem        *memstore.Store // the embedded store, for its trace metrics; nil with PostgreSQL
	// redis is the process's one connection to Redis, shared by the cache
	// tier, the rate limits and the client sessions (one health model,
	// docs/adr/0044-one-redis-foundation.md); nil without REDIS_URL. Its
	// users do not close it: close does, last.
	redis     *redisconn.Conn
	stopPurge context.CancelFunc
	purgeDone chan struct{}
	log       zerolog.Logger
}

// startupTimeout bounds how long start-up waits for PostgreSQL: in a
// Kubernetes rollout the database may come up a little after us.
const startupTimeout = 30 * time.Second

func openState(ctx context.Context, cfg config.Config, tel *telemetry.Telemetry, log zerolog.Logger) (st *state, err error) {
	opts := cfg.Store.StoreOptions()
	opts.MaxTracesInMemory = cfg.Traces.MaxInMemory
	var base store.Store
	var pgs *pgstore.Store
	var mem *memstore.Store
	persistent := cfg.DatabaseURL != ""
	if persistent {
		var with []pgstore.Option
		if tel.Enabled() {
			// Query spans under a request's span only (ChildTracerProvider);
			// otelpgx leaves the query's parameters out.
			with = append(with, pgstore.WithTracer(otelpgx.NewTracer(otelpgx.WithTracerProvider(tel.ChildTracerProvider()))))
		}
		pg, err := openPostgres(ctx, cfg.DatabaseURL, opts, log, with...)
		if err != nil {
			return nil, err
		}
		base, pgs = pg, pg
	} else {
		mem = memstore.New(opts)
		base = mem
	}
	var conn *redisconn.Conn
	if cfg.RedisURL != "" {
		// Redis may be down now: the client connects lazily and every user
		// degrades until it answers (INV-MCP-XC-002).
		conn, err = redisconn.Open(redisconn.Options{
			Mode: redisconn.Mode(cfg.Redis.Mode), URL: cfg.RedisURL, KeyPrefix: cfg.Redis.KeyPrefix,
			Timeouts: cfg.Redis.Timeouts(), Log: log,
		})
		if err != nil {
			base.Close()
			return nil, err // names the key, never the URL
		}
		if tel.Enabled() {
			// Command spans under a request's span only, without the
			// command's arguments: they hold keys and values of clients.
			err := redisotel.InstrumentTracing(conn.Client(), redisotel.WithTracerProvider(tel.ChildTracerProvider()),
				redisotel.WithDBStatement(false), redisotel.WithCallerEnabled(false))
			if err != nil {
				conn.Close()
				base.Close()
				return nil, fmt.Errorf("trace Redis commands: %w", err)
			}
		}
	}
	backend, err := tiered.New(ctx, base, tiered.Options{
		L1: cfg.Cache.CacheConfig(), Redis: conn,
		RedisTTL: cfg.Redis.TTL(), RedisMaxValueBytes: cfg.Redis.MaxValueBytes, Log: log,
		KeyPrefix: cfg.Redis.KeyPrefix + "c:", Channel: cfg.Redis.KeyPrefix + "invalidate",
	})
	if err != nil {
		base.Close()
		closeConn(conn)
		return nil, fmt.Errorf("cache: %w", err)
	}
	rec, err := traces.New(backend, traces.Options{
		QueueSize: cfg.Traces.QueueSize, BatchSize: cfg.Traces.BatchSize, FlushInterval: cfg.Traces.FlushInterval(),
		Retention: cfg.Traces.Retention(), PurgeInterval: cfg.Traces.PurgeInterval(), Log: log,
		SampleRate: &cfg.Traces.SampleRate,
	})
	if err != nil {
		backend.Close()
		closeConn(conn)
		return nil, fmt.Errorf("traces: %w", err)
	}
	purgeCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	st = &state{backend: backend, recorder: rec, persistent: persistent, pg: pgs, mem: mem, redis: conn, stopPurge: stop, purgeDone: make(chan struct{}), log: log}
	go st.purgeExpired(purgeCtx, cfg.Store.PurgeInterval())
	return st, nil
}

// openPostgres connects and migrates, retrying while the database is
// unreachable for up to startupTimeout.
func openPostgres(ctx context.Context, url string, opts store.Options, log zerolog.Logger, with ...pgstore.Option) (*pgstore.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		pg, err := pgstore.Open(ctx, url, opts, with...)
		if err == nil {
			return pg, nil
		}
		if !errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
			return nil, fmt.Errorf("databaseURL: open PostgreSQL: %w", err)
		}
		log.Warn().Err(err).Int("attempt", attempt).Msg("PostgreSQL not reachable yet; retrying")
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("databaseURL: PostgreSQL not reachable within %s: %w", startupTimeout, err)
		case <-time.After(time.Second):
		}
	}
}

// purgeExpired deletes expired memory entries every interval. Reads never
// return them anyway; this only reclaims the space.
func (s *state) purgeExpired(ctx context.Context, every time.Duration) {
	defer close(s.purgeDone)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		n, err := s.backend.PurgeExpiredMemory(pctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn().Err(err).Msg("purge expired memory entries")
		case n > 0:
			s.log.Debug().Int64("purged", n).Msg("purged expired memory entries")
		}
	}
}

// record is the pipeline's Record hook: it queues a trace, never blocking.
func (s *state) record(c pipeline.CallRecord) {
	t := store.Trace{
		StartedAt: time.Now().Add(-c.Duration).UTC().Truncate(time.Microsecond),
		Tenant:    c.Tenant, Tool: c.Tool, ClientSession: c.ClientSession, Status: store.TraceOK,
		DurationMs: float64(c.Duration.Microseconds()) / 1000, ArgBytes: int64(c.ArgBytes), ResultBytes: int64(c.ResultBytes),
		OtelTraceID: c.TraceID,
	}
	if c.ErrorCode != "" {
		t.Status, t.ErrorCode = store.TraceError, string(c.ErrorCode)
	}
	s.recorder.Record(t)
}

// traceStats is what the embedded store holds of the traces; zero with
// PostgreSQL, whose table retention and sampling bound instead.
func (s *state) traceStats() memstore.TraceStats {
	if s.mem == nil {
		return memstore.TraceStats{}
	}
	return s.mem.TraceStats()
}

// close flushes the traces still queued (within ctx), stops the purge and
// closes the cache tiers and the store.
func (s *state) close(ctx context.Context) error {
	err := s.recorder.Close(ctx)
	s.stopPurge()
	<-s.purgeDone
	s.backend.Close()
	closeConn(s.redis)
	if err != nil {
		return fmt.Errorf("flush traces: %w", err)
	}
	return nil
}

// redisClient is the connection's client, nil without Redis (an untyped
// nil: a nil *redis.Client in the interface would look like a client).
func (s *state) redisClient() redis.UniversalClient {
	if s.redis == nil {
		return nil
	}
	return s.redis.Client()
}

// closeConn closes the connection to Redis, if there is one: its prober,
// then its client.
func closeConn(c *redisconn.Conn) {
	if c != nil {
		_ = c.Close()
	}
}
