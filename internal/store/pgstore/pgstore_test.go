package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
)

// openStore opens a store on a fresh database and closes it when the
// test ends.
func openStore(t testing.TB) *Store {
	t.Helper()
	return openStoreWith(t, store.Options{})
}

// openStoreWith is openStore with opts.
func openStoreWith(t testing.TB, opts store.Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.NewDatabase(t), opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// must returns v, or fails the test it is applied to on err:
// must(s.GetMemory(…))(t).
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

func pgxpoolConfig(dbURL string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	applyDefaults(cfg)
	return cfg, nil
}

func newPoolFromConfig(t testing.TB, cfg *pgxpool.Config) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestApplyDefaults: settings the database URL leaves out get the
// server's defaults; settings it names are kept.
func TestApplyDefaults(t *testing.T) {
	tests := []struct {
		name      string
		url       string
		maxConns  int32
		timeout   time.Duration
		statement string
	}{
		{"bare URL", "postgres://u@db/app", defaultMaxConns, defaultConnectTimeout, defaultStatementTimeout},
		{"pool size named", "postgres://u@db/app?pool_max_conns=3", 3, defaultConnectTimeout, defaultStatementTimeout},
		{"keyword form", "host=db user=u dbname=app pool_max_conns=40 connect_timeout=2", 40, 2 * time.Second, defaultStatementTimeout},
		{"statement timeout named", "postgres://u@db/app?statement_timeout=1s", defaultMaxConns, defaultConnectTimeout, "1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := pgxpoolConfig(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MaxConns != tc.maxConns {
				t.Errorf("MaxConns = %d, want %d", cfg.MaxConns, tc.maxConns)
			}
			if cfg.ConnConfig.ConnectTimeout != tc.timeout {
				t.Errorf("ConnectTimeout = %v, want %v", cfg.ConnConfig.ConnectTimeout, tc.timeout)
			}
			if got := cfg.ConnConfig.RuntimeParams["statement_timeout"]; got != tc.statement {
				t.Errorf("statement_timeout = %q, want %q", got, tc.statement)
			}
		})
	}
}

// TestCandidateCap: a quoted phrase, whose every candidate costs a
// positional recheck, ranks fewer matches than a query of plain words.
func TestCandidateCap(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"deploy", maxRanked},
		{"deploy -staging or rollback", maxRanked},
		{`"deploy script"`, maxRankedPhrase},
		{`rollback "deploy script"`, maxRankedPhrase},
	} {
		if got := candidateCap(tc.query); got != tc.want {
			t.Errorf("candidateCap(%q) = %d, want %d", tc.query, got, tc.want)
		}
	}
}
