package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// apiKey is a fresh key record for this run: API keys are not scoped by
// tenant, so the subtests share one id (and hash) space.
func (h *harness) apiKey(scopes ...string) store.APIKeyRecord {
	id := h.upstreamID()
	sum := sha256.Sum256([]byte("secret of " + id))
	return store.APIKeyRecord{ID: "key-" + id, Hash: hex.EncodeToString(sum[:]), Tenant: "team-a", Scopes: scopes}
}

func testAPIKeys(t *testing.T, h *harness) {
	t.Run("create, find by hash, list, revoke", func(t *testing.T) {
		k := h.apiKey("mcp:tools")
		k.Hash = strings.ToUpper(k.Hash) // any case in, lower case stored
		k.Admin = true
		created := must(h.s.CreateAPIKey(ctx(t), k))(t)
		if created.CreatedAt.IsZero() || created.Revoked() || created.Hash != strings.ToLower(k.Hash) || !created.Admin {
			t.Fatalf("created = %+v", created)
		}
		got := must(h.s.APIKeyByHash(ctx(t), k.Hash))(t)
		equal(t, "by hash", got, created)
		all := must(h.s.ListAPIKeys(ctx(t)))(t)
		if !slices.ContainsFunc(all, func(r store.APIKeyRecord) bool { return r.ID == k.ID }) {
			t.Fatalf("list lacks %s", k.ID)
		}
		if !slices.IsSortedFunc(all, func(a, b store.APIKeyRecord) int { return strings.Compare(a.ID, b.ID) }) {
			t.Fatal("list is not in id order")
		}
		revoked := must(h.s.RevokeAPIKey(ctx(t), k.ID))(t)
		if !revoked.Revoked() {
			t.Fatalf("revoked = %+v", revoked)
		}
		again := must(h.s.RevokeAPIKey(ctx(t), k.ID))(t)
		if !again.RevokedAt.Equal(*revoked.RevokedAt) {
			t.Fatalf("a second revocation moved the time: %v, then %v", revoked.RevokedAt, again.RevokedAt)
		}
		if got := must(h.s.APIKeyByHash(ctx(t), k.Hash))(t); !got.Revoked() {
			t.Fatal("a revoked key is found as live")
		}
	})
	t.Run("scopes default to empty", func(t *testing.T) {
		created := must(h.s.CreateAPIKey(ctx(t), h.apiKey()))(t)
		if created.Scopes == nil || len(created.Scopes) != 0 {
			t.Fatalf("scopes = %#v, want empty and non-nil", created.Scopes)
		}
	})
	t.Run("id and hash are unique", func(t *testing.T) {
		k := h.apiKey()
		must(h.s.CreateAPIKey(ctx(t), k))(t)
		sameID := h.apiKey()
		sameID.ID = k.ID
		_, err := h.s.CreateAPIKey(ctx(t), sameID)
		wantIs(t, err, store.ErrAlreadyExists)
		sameHash := h.apiKey()
		sameHash.Hash = k.Hash
		_, err = h.s.CreateAPIKey(ctx(t), sameHash)
		wantIs(t, err, store.ErrAlreadyExists)
	})
	t.Run("missing", func(t *testing.T) {
		_, err := h.s.RevokeAPIKey(ctx(t), "no-such-key-"+h.run)
		wantIs(t, err, store.ErrNotFound)
		_, err = h.s.APIKeyByHash(ctx(t), strings.Repeat("0", 64))
		wantIs(t, err, store.ErrNotFound)
	})
	t.Run("bad input names the field", func(t *testing.T) {
		for _, tc := range []struct {
			change func(*store.APIKeyRecord)
			field  string
		}{
			{func(k *store.APIKeyRecord) { k.ID = "" }, "id"},
			{func(k *store.APIKeyRecord) { k.Hash = "secret" }, "hash"},
			{func(k *store.APIKeyRecord) { k.Tenant = "a\x00b" }, "tenant"},
			{func(k *store.APIKeyRecord) { k.Scopes = []string{"ok", ""} }, "scopes[1]"},
		} {
			k := h.apiKey()
			tc.change(&k)
			_, err := h.s.CreateAPIKey(ctx(t), k)
			wantField(t, err, tc.field)
		}
		_, err := h.s.APIKeyByHash(ctx(t), "zz")
		wantField(t, err, "hash")
	})
}
