package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/mcp-runtime/mcp-runtime/migrations"
)

// versionTable is goose's bookkeeping table (its default name, spelled
// out because MigrationsApplied reads it directly).
const versionTable = "goose_db_version"

// lockProbeSeconds is how often a replica that finds the migration lock
// taken tries again, and lockProbes how many times before it gives up
// (ten minutes in all). goose's session locker polls
// pg_try_advisory_lock rather than waiting in pg_advisory_lock; its
// default 5s period would make every replica but the first wait that
// long even when there is nothing left to apply. One second is the
// smallest it accepts.
const (
	lockProbeSeconds = 1
	lockProbes       = 600
)

// Migrate applies the embedded migrations that the database lacks.
// Replicas starting together serialise on a PostgreSQL session-level
// advisory lock, so each migration runs once; re-running is a no-op.
//
// Migrations run through this pool, under its statement_timeout; a future
// migration that rewrites a large table should SET LOCAL
// statement_timeout = 0 itself.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (err error) {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(lockProbeSeconds, lockProbes))
	if err != nil {
		return fmt.Errorf("migrate: create locker: %w", err)
	}
	// Closing this *sql.DB releases its connections back to the pool
	// without closing the pool itself.
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", startupErr(err))
	}
	return nil
}

// MigrationsApplied reports whether the database schema is at least at the
// newest embedded migration; readiness waits for it. At least, not
// exactly: during a rolling upgrade the new replicas migrate first, and
// the old ones must stay ready on the newer schema (migrations only add).
// It only reads, so unlike goose's own version queries it never creates
// the version table.
func (s *Store) MigrationsApplied(ctx context.Context) (bool, error) {
	var exists bool
	err := s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, versionTable).Scan(&exists)
	if err != nil {
		return false, fmt.Errorf("read schema version: %w", classify(err))
	}
	if !exists {
		return false, nil
	}
	// The same query goose uses for the current version.
	var current *int64
	err = s.pool.QueryRow(ctx, `SELECT max(version_id) FROM `+versionTable).Scan(&current)
	if err != nil {
		return false, fmt.Errorf("read schema version: %w", classify(err))
	}
	return current != nil && *current >= s.newestMigration, nil
}

// newestMigration is the highest version among the embedded migrations.
func newestMigration() (int64, error) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return 0, fmt.Errorf("list migrations: %w", err)
	}
	var newest int64
	for _, name := range names {
		v, err := goose.NumericComponent(name)
		if err != nil {
			return 0, fmt.Errorf("migration %s: %w", name, err)
		}
		newest = max(newest, v)
	}
	if newest == 0 {
		return 0, errors.New("no migrations are embedded")
	}
	return newest, nil
}
