package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

func copyAPIKey(k *store.APIKeyRecord) store.APIKeyRecord {
	out := *k
	out.Scopes = slices.Clone(k.Scopes)
	if k.RevokedAt != nil {
		t := *k.RevokedAt
		out.RevokedAt = &t
	}
	return out
}

// ListAPIKeys returns every key in id order.
func (s *Store) ListAPIKeys(ctx context.Context) ([]store.APIKeyRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]store.APIKeyRecord, 0, len(s.apiKeys))
	for _, k := range s.apiKeys {
		out = append(out, copyAPIKey(k))
	}
	slices.SortFunc(out, func(a, b store.APIKeyRecord) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// CreateAPIKey adds a key whose id and hash are both new.
func (s *Store) CreateAPIKey(ctx context.Context, k store.APIKeyRecord) (store.APIKeyRecord, error) {
	if err := ctx.Err(); err != nil {
		return store.APIKeyRecord{}, err
	}
	k, err := store.CheckAPIKey(k)
	if err != nil {
		return store.APIKeyRecord{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.apiKeys[k.ID] != nil {
		return store.APIKeyRecord{}, store.AlreadyExistsf("API key %s", k.ID)
	}
	for _, other := range s.apiKeys {
		if other.Hash == k.Hash {
			return store.APIKeyRecord{}, store.AlreadyExistsf("an API key with that hash")
		}
	}
	if s.apiKeys == nil {
		s.apiKeys = map[string]*store.APIKeyRecord{}
	}
	k.CreatedAt, k.RevokedAt = s.opts.Now(), nil
	s.apiKeys[k.ID] = &k
	return copyAPIKey(&k), nil
}

// RevokeAPIKey marks a key revoked, keeping the first revocation time.
func (s *Store) RevokeAPIKey(ctx context.Context, id string) (store.APIKeyRecord, error) {
	if err := ctx.Err(); err != nil {
		return store.APIKeyRecord{}, err
	}
	if err := store.CheckName("id", id, store.MaxAPIKeyIDLen); err != nil {
		return store.APIKeyRecord{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.apiKeys[id]
	if k == nil {
		return store.APIKeyRecord{}, store.NotFoundf("API key %s", id)
	}
	if k.RevokedAt == nil {
		now := s.opts.Now()
		k.RevokedAt = &now
	}
	return copyAPIKey(k), nil
}

// APIKeyByHash finds a key by the hash of its secret.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (store.APIKeyRecord, error) {
	if err := ctx.Err(); err != nil {
		return store.APIKeyRecord{}, err
	}
	if err := store.CheckAPIKeyHash(hash); err != nil {
		return store.APIKeyRecord{}, err
	}
	hash = strings.ToLower(hash)
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, k := range s.apiKeys {
		if k.Hash == hash {
			return copyAPIKey(k), nil
		}
	}
	return store.APIKeyRecord{}, store.NotFoundf("API key")
}
