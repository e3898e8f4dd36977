package main

import (
	"context"
	"errors"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// storedKeys lets the authenticator find the API keys created through
// the admin API.
func storedKeys(s store.APIKeyStore) auth.KeyLookup {
	return func(ctx context.Context, hash string) (auth.StoredKey, bool, error) {
		k, err := s.APIKeyByHash(ctx, hash)
		if errors.Is(err, store.ErrNotFound) {
			return auth.StoredKey{}, false, nil
		}
		if err != nil {
			return auth.StoredKey{}, false, err
		}
		return auth.StoredKey{ID: k.ID, Tenant: k.Tenant, Scopes: k.Scopes, Admin: k.Admin, Revoked: k.Revoked()}, true, nil
	}
}
