package store

import (
	"context"
	"encoding/hex"
	"strings"
	"time"
)

// APIKeyRecord is an API key created through the admin API
// (docs/adr/0021-api-keys.md). The key itself is shown once, at creation,
// and never stored: Hash is its hex SHA-256. Keys belong to the deployment;
// Tenant is the tenant the key acts on.
type APIKeyRecord struct {
	ID        string     `json:"id"`
	Hash      string     `json:"-"`
	Tenant    string     `json:"tenant"`
	Scopes    []string   `json:"scopes"`
	Admin     bool       `json:"admin"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

// Revoked reports whether the key no longer authenticates.
func (k APIKeyRecord) Revoked() bool { return k.RevokedAt != nil }

// APIKeyStore keeps the API keys created through the admin API.
type APIKeyStore interface {
	// ListAPIKeys returns every key, revoked ones included, in ID byte
	// order.
	ListAPIKeys(ctx context.Context) ([]APIKeyRecord, error)
	// CreateAPIKey stores k (CreatedAt now, not revoked); ErrAlreadyExists
	// when its ID or its hash is taken.
	CreateAPIKey(ctx context.Context, k APIKeyRecord) (APIKeyRecord, error)
	// RevokeAPIKey marks a key revoked (once: a second revocation keeps
	// the first time) and returns it; ErrNotFound when absent.
	RevokeAPIKey(ctx context.Context, id string) (APIKeyRecord, error)
	// APIKeyByHash returns the key with that hash, revoked or not;
	// ErrNotFound when none has it.
	APIKeyByHash(ctx context.Context, hash string) (APIKeyRecord, error)
}

// Limits of an API key record.
const (
	MaxAPIKeyIDLen  = 64
	MaxAPIKeyScopes = 32
	MaxScopeLen     = 128
	// MaxTenantLen matches what auth accepts as a tenant.
	MaxTenantLen = 128
)

// CheckAPIKey validates a key to create and returns it with its hash in
// lower case and its scopes non-nil.
func CheckAPIKey(k APIKeyRecord) (APIKeyRecord, error) {
	if err := CheckName("id", k.ID, MaxAPIKeyIDLen); err != nil {
		return k, err
	}
	if err := CheckAPIKeyHash(k.Hash); err != nil {
		return k, err
	}
	if err := CheckName("tenant", k.Tenant, MaxTenantLen); err != nil {
		return k, err
	}
	if len(k.Scopes) > MaxAPIKeyScopes {
		return k, Invalid("scopes", "has %d entries; the limit is %d", len(k.Scopes), MaxAPIKeyScopes)
	}
	for i, s := range k.Scopes {
		if err := CheckName("scopes["+itoa(i)+"]", s, MaxScopeLen); err != nil {
			return k, err
		}
	}
	if k.Scopes == nil {
		k.Scopes = []string{}
	}
	k.Hash = strings.ToLower(k.Hash)
	return k, nil
}

// CheckAPIKeyHash accepts 64 hex digits, any case, and nothing else.
func CheckAPIKeyHash(h string) error {
	if b, err := hex.DecodeString(h); err != nil || len(b) != 32 {
		return Invalid("hash", "must be a hex SHA-256 (64 hex digits)")
	}
	return nil
}
