package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

const upstreamCols = `id, config, version, created_at, updated_at`

func scanUpstream(row pgx.Row) (store.UpstreamRecord, error) {
	var u store.UpstreamRecord
	var config []byte
	if err := row.Scan(&u.ID, &config, &u.Version, &u.CreatedAt, &u.UpdatedAt); err != nil {
		return store.UpstreamRecord{}, err
	}
	u.Config = compactJSON(config)
	u.CreatedAt, u.UpdatedAt = utc(u.CreatedAt), utc(u.UpdatedAt)
	return u, nil
}

// ListUpstreams returns every upstream in id byte order.
func (s *Store) ListUpstreams(ctx context.Context) ([]store.UpstreamRecord, error) {
	items, err := collect(ctx, s.pool, `SELECT `+upstreamCols+` FROM upstreams ORDER BY id COLLATE "C"`, nil, scanUpstream)
	if err != nil {
		return nil, fmt.Errorf("list upstreams: %w", classify(err))
	}
	return items, nil
}

// GetUpstream returns one upstream.
func (s *Store) GetUpstream(ctx context.Context, id string) (store.UpstreamRecord, error) {
	if err := store.CheckUpstreamID(id); err != nil {
		return store.UpstreamRecord{}, err
	}
	u, err := scanUpstream(s.pool.QueryRow(ctx, `SELECT `+upstreamCols+` FROM upstreams WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.UpstreamRecord{}, store.NotFoundf("upstream %s", id)
	}
	if err != nil {
		return store.UpstreamRecord{}, fmt.Errorf("get upstream: %w", classify(err))
	}
	return u, nil
}

// CreateUpstream adds an upstream whose id is not taken.
func (s *Store) CreateUpstream(ctx context.Context, id string, config json.RawMessage) (store.UpstreamRecord, error) {
	config, err := s.checkUpstream(id, config)
	if err != nil {
		return store.UpstreamRecord{}, err
	}
	u, err := scanUpstream(s.pool.QueryRow(ctx, `
		INSERT INTO upstreams (id, config, version, created_at, updated_at)
		VALUES ($1, $2, 1, $3, $3)
		RETURNING `+upstreamCols,
		id, []byte(config), s.opts.Now()))
	if isUniqueViolation(err) {
		return store.UpstreamRecord{}, store.AlreadyExistsf("upstream %s", id)
	}
	if err != nil {
		return store.UpstreamRecord{}, fmt.Errorf("create upstream: %w", classify(err))
	}
	return u, nil
}

// UpdateUpstream replaces an upstream's config. The row lock UPDATE takes
// serialises concurrent writers, so of several with one ifVersion only
// the first matches. updated_at only moves forward, as for memory
// entries: replicas' clocks differ.
func (s *Store) UpdateUpstream(ctx context.Context, id string, config json.RawMessage, ifVersion *int64) (store.UpstreamRecord, error) {
	config, err := s.checkUpstream(id, config)
	if err != nil {
		return store.UpstreamRecord{}, err
	}
	sql := `UPDATE upstreams SET config = $2, version = version + 1, updated_at = greatest(updated_at, $3)
		WHERE id = $1`
	args := []any{id, []byte(config), s.opts.Now()}
	if ifVersion != nil {
		sql += ` AND version = $4`
		args = append(args, *ifVersion)
	}
	u, err := scanUpstream(s.pool.QueryRow(ctx, sql+` RETURNING `+upstreamCols, args...))
	if errors.Is(err, pgx.ErrNoRows) && ifVersion == nil {
		return store.UpstreamRecord{}, store.NotFoundf("upstream %s", id)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.UpstreamRecord{}, s.upstreamConflict(ctx, id, *ifVersion)
	}
	if err != nil {
		return store.UpstreamRecord{}, fmt.Errorf("update upstream: %w", classify(err))
	}
	return u, nil
}

// upstreamConflict explains why a conditional update changed nothing:
// the upstream is gone, or is at another version, which it names so the
// client can re-read and retry.
func (s *Store) upstreamConflict(ctx context.Context, id string, ifVersion int64) error {
	var current int64
	err := s.pool.QueryRow(ctx, `SELECT version FROM upstreams WHERE id = $1`, id).Scan(&current)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.NotFoundf("upstream %s", id)
	case err != nil:
		return fmt.Errorf("update upstream: %w", classify(err))
	}
	return store.Conflictf("upstream %s is at version %d, not %d", id, current, ifVersion)
}

// DeleteUpstream removes an upstream.
func (s *Store) DeleteUpstream(ctx context.Context, id string) error {
	if err := store.CheckUpstreamID(id); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM upstreams WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete upstream: %w", classify(err))
	}
	if tag.RowsAffected() == 0 {
		return store.NotFoundf("upstream %s", id)
	}
	return nil
}

func (s *Store) checkUpstream(id string, config json.RawMessage) (json.RawMessage, error) {
	if err := store.CheckUpstreamID(id); err != nil {
		return nil, err
	}
	return store.CheckUpstreamConfig(config, s.opts)
}
