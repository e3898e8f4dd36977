package pgstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
	"github.com/mcp-runtime/mcp-runtime/migrations"
)

func newPool(t testing.TB, dbURL string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// appliedVersions returns goose's record of applied migrations (version
// 0 is its own bootstrap row).
func appliedVersions(t *testing.T, pool *pgxpool.Pool) []int64 {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT version_id FROM goose_db_version ORDER BY id`)
	if err != nil {
		t.Fatalf("read goose_db_version: %v", err)
	}
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// newProvider returns a goose provider of the embedded migrations over
// pool, for tests that move the schema to a version of their choosing.
func newProvider(t *testing.T, pool *pgxpool.Pool) *goose.Provider {
	t.Helper()
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { db.Close() })
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	return provider
}

func wantVersions(t *testing.T, got []int64) {
	t.Helper()
	newest, err := newestMigration()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != int(newest)+1 || got[0] != 0 || got[len(got)-1] != newest {
		t.Fatalf("applied versions %v, want 0..%d once each", got, newest)
	}
}

func TestMigrateTwiceIsANoOp(t *testing.T) {
	t.Parallel()
	pool := newPool(t, pgtest.NewDatabase(t))
	s := must(newStore(pool, store.Options{}))(t)
	if must(s.MigrationsApplied(t.Context()))(t) {
		t.Fatal("MigrationsApplied is true on an empty database")
	}
	for range 2 {
		if err := Migrate(t.Context(), pool); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	wantVersions(t, appliedVersions(t, pool))
	if !must(s.MigrationsApplied(t.Context()))(t) {
		t.Fatal("MigrationsApplied is false after Migrate")
	}
}

// Replicas starting at once each run Migrate; the advisory lock must
// make exactly one of them apply the schema and the rest find it done.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	const replicas = 8
	pools := make([]*pgxpool.Pool, replicas)
	for i := range pools {
		pools[i] = newPool(t, dbURL)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	errs := make([]error, replicas)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, pool := range pools {
		wg.Go(func() {
			<-start
			errs[i] = Migrate(ctx, pool)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	wantVersions(t, appliedVersions(t, pools[0]))
}

func TestMigrationsAppliedOnOpen(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	if !must(s.MigrationsApplied(t.Context()))(t) {
		t.Fatal("MigrationsApplied is false after Open")
	}
}

// The Down sections must undo their Up completely, or a rollback of a
// bad release leaves debris that makes the next Up fail.
func TestMigrationsRollBackCleanly(t *testing.T) {
	t.Parallel()
	pool := newPool(t, pgtest.NewDatabase(t))
	ctx := t.Context()
	provider := newProvider(t, pool)
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	if _, err := provider.DownTo(ctx, 0); err != nil {
		t.Fatalf("down: %v", err)
	}
	rows, err := pool.Query(ctx, `
		SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND relname NOT LIKE 'goose%'
		UNION ALL
		SELECT proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	leftover, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(leftover) > 0 {
		t.Fatalf("after rolling back every migration these remain: %v", leftover)
	}
	if err := Migrate(ctx, pool); err != nil {
		t.Fatalf("migrate again after the rollback: %v", err)
	}
}
