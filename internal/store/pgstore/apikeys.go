package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

const apiKeyCols = `id, hash, tenant, scopes, admin, created_at, revoked_at`

func scanAPIKey(row pgx.Row) (store.APIKeyRecord, error) {
	var k store.APIKeyRecord
	if err := row.Scan(&k.ID, &k.Hash, &k.Tenant, &k.Scopes, &k.Admin, &k.CreatedAt, &k.RevokedAt); err != nil {
		return store.APIKeyRecord{}, err
	}
	k.CreatedAt = utc(k.CreatedAt)
	if k.RevokedAt != nil {
		t := utc(*k.RevokedAt)
		k.RevokedAt = &t
	}
	if k.Scopes == nil {
		k.Scopes = []string{}
	}
	return k, nil
}

// ListAPIKeys returns every key in id byte order.
func (s *Store) ListAPIKeys(ctx context.Context) ([]store.APIKeyRecord, error) {
	items, err := collect(ctx, s.pool, `SELECT `+apiKeyCols+` FROM api_keys ORDER BY id COLLATE "C"`, nil, scanAPIKey)
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", classify(err))
	}
	return items, nil
}

// CreateAPIKey adds a key whose id and hash are both new.
func (s *Store) CreateAPIKey(ctx context.Context, k store.APIKeyRecord) (store.APIKeyRecord, error) {
	k, err := store.CheckAPIKey(k)
	if err != nil {
		return store.APIKeyRecord{}, err
	}
	out, err := scanAPIKey(s.pool.QueryRow(ctx, `
		INSERT INTO api_keys (id, hash, tenant, scopes, admin, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING `+apiKeyCols,
		k.ID, k.Hash, k.Tenant, k.Scopes, k.Admin, s.opts.Now()))
	if isUniqueViolation(err) {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.ConstraintName == "api_keys_hash_key" {
			return store.APIKeyRecord{}, store.AlreadyExistsf("an API key with that hash")
		}
		return store.APIKeyRecord{}, store.AlreadyExistsf("API key %s", k.ID)
	}
	if err != nil {
		return store.APIKeyRecord{}, fmt.Errorf("create API key: %w", classify(err))
	}
	return out, nil
}

// RevokeAPIKey marks a key revoked, keeping the first revocation time.
func (s *Store) RevokeAPIKey(ctx context.Context, id string) (store.APIKeyRecord, error) {
	if err := store.CheckName("id", id, store.MaxAPIKeyIDLen); err != nil {
		return store.APIKeyRecord{}, err
	}
	k, err := scanAPIKey(s.pool.QueryRow(ctx, `
		UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1
		RETURNING `+apiKeyCols, id, s.opts.Now()))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.APIKeyRecord{}, store.NotFoundf("API key %s", id)
	}
	if err != nil {
		return store.APIKeyRecord{}, fmt.Errorf("revoke API key: %w", classify(err))
	}
	return k, nil
}

// APIKeyByHash finds a key by the hash of its secret (the unique index).
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (store.APIKeyRecord, error) {
	if err := store.CheckAPIKeyHash(hash); err != nil {
		return store.APIKeyRecord{}, err
	}
	k, err := scanAPIKey(s.pool.QueryRow(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE hash = $1`, strings.ToLower(hash)))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.APIKeyRecord{}, store.NotFoundf("API key")
	}
	if err != nil {
		return store.APIKeyRecord{}, fmt.Errorf("look up API key: %w", classify(err))
	}
	return k, nil
}
