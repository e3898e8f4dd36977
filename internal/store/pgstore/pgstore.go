// Package pgstore is the PostgreSQL implementation of store.Store, used
// when DATABASE_URL is set. It talks to the database through pgxpool,
// applies the schema in /migrations at start-up, and honours the same
// contract as the in-memory store (store/storetest checks both).
//
// Timestamps are taken in Go (store.Options.Now) and passed as parameters rather
// than read from now() in SQL, so both stores stamp rows the same way and
// a single statement never mixes two clocks.
package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// Defaults for settings the database URL does not give. A tool call is
// interactive: a statement that runs for longer than this is better
// cancelled (and reported as unavailable) than left holding a connection.
const (
	defaultConnectTimeout   = 5 * time.Second
	defaultStatementTimeout = "10s"
	// defaultMaxConns replaces pgxpool's default of max(4, CPUs). A call
	// holds a connection only for its statement's round trip, but with
	// four connections sixteen concurrent writers queue for the pool and
	// reach a third of what PostgreSQL itself sustains (BENCHMARKS.md,
	// "memory_store vs pgbench"); sixteen keep up with it. Three replicas
	// stay well inside PostgreSQL's default max_connections of 100.
	defaultMaxConns = 16
)

// Store is a store.Store backed by PostgreSQL.
type Store struct {
	pool *pgxpool.Pool
	opts store.Options
	// newestMigration is the version the schema must be at for this
	// binary; MigrationsApplied compares the database against it.
	newestMigration int64
}

var _ store.Store = (*Store)(nil)

// Open connects to databaseURL, checks that the database answers, applies
// pending migrations and returns the store. Pool settings in the URL
// (pool_max_conns and friends) are respected; pool_max_conns,
// connect_timeout and statement_timeout default to 16, 5s and 10s when the
// URL does not set them.
func Open(ctx context.Context, databaseURL string, opts store.Options, with ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// pgx redacts the password from its parse errors.
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	applyDefaults(cfg)
	for _, o := range with {
		o(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create connection pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to the database: %w", startupErr(err))
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	s, err := newStore(pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// An Option adjusts the pool's configuration before Open connects.
type Option func(*pgxpool.Config)

// WithTracer traces every query of the pool with t (an OpenTelemetry
// tracer, docs/adr/0046-opentelemetry.md).
func WithTracer(t pgx.QueryTracer) Option {
	return func(c *pgxpool.Config) { c.ConnConfig.Tracer = t }
}

// newStore wraps a pool without touching the database.
func newStore(pool *pgxpool.Pool, opts store.Options) (*Store, error) {
	newest, err := newestMigration()
	if err != nil {
		return nil, err
	}
	return &Store{pool: pool, opts: opts, newestMigration: newest}, nil
}

func applyDefaults(cfg *pgxpool.Config) {
	// pgxpool fills MaxConns whether or not the URL names it, so the
	// connection string is what tells a choice from a default.
	if !strings.Contains(cfg.ConnString(), "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	cc := cfg.ConnConfig
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = defaultConnectTimeout
	}
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	_, set := cc.RuntimeParams["statement_timeout"]
	if !set && !strings.Contains(cc.RuntimeParams["options"], "statement_timeout") {
		cc.RuntimeParams["statement_timeout"] = defaultStatementTimeout
	}
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping: %w", classify(err))
	}
	return nil
}

// Close closes every connection of the pool.
func (s *Store) Close() { s.pool.Close() }

// checkTenant validates the tenant every method is scoped by.
func checkTenant(tenant string) error {
	return store.CheckName("tenant", tenant, store.MaxIDLen)
}

// builder assembles a statement whose WHERE clause depends on which
// filters a listing has. Only fixed SQL fragments are concatenated; every
// value is a bind parameter. Separate statements per filter combination
// (rather than "$n = ” OR col = $n") let each get a plan that uses the
// right index.
type builder struct {
	conds []string
	args  []any
}

// arg binds v and returns its placeholder.
func (b *builder) arg(v any) string {
	b.args = append(b.args, v)
	return fmt.Sprintf("$%d", len(b.args))
}

// where adds a condition; each %s in cond is replaced by the placeholder
// of the matching value in vals.
func (b *builder) where(cond string, vals ...any) {
	ph := make([]any, len(vals))
	for i, v := range vals {
		ph[i] = b.arg(v)
	}
	b.conds = append(b.conds, fmt.Sprintf(cond, ph...))
}

// clause returns the WHERE clause.
func (b *builder) clause() string {
	if len(b.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(b.conds, " AND ")
}

// compactJSON returns PostgreSQL's jsonb text without the spaces it adds
// after ':' and ',', so values read back look like what clients usually
// send. nil stays nil (an absent metadata object).
func compactJSON(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	var buf bytes.Buffer
	buf.Grow(len(b))
	if err := json.Compact(&buf, b); err != nil {
		return json.RawMessage(b)
	}
	return json.RawMessage(buf.Bytes())
}

func utc(t time.Time) time.Time { return t.UTC() }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// collect runs a query and scans every row with scan.
func collect[T any](ctx context.Context, q querier, sql string, args []any, scan func(pgx.Row) (T, error)) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []T{}
	}
	return out, nil
}

// querier is what both the pool and a transaction offer.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
