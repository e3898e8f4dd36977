package admin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// APIKeys is what the API needs of the store for /admin/apikeys: keys
// created and revoked at run time, stored hashed
// (docs/adr/0021-api-keys.md).
type APIKeys interface {
	ListAPIKeys(ctx context.Context) ([]store.APIKeyRecord, error)
	CreateAPIKey(ctx context.Context, k store.APIKeyRecord) (store.APIKeyRecord, error)
	RevokeAPIKey(ctx context.Context, id string) (store.APIKeyRecord, error)
}

// keyPrefix starts every key the API makes, so a leaked one is easy to
// recognise (secret scanners, logs).
const keyPrefix = "mcpr_"

// newKeyRequest is the body of POST /admin/apikeys.
type newKeyRequest struct {
	ID     string   `json:"id"`
	Tenant string   `json:"tenant"`
	Scopes []string `json:"scopes"`
	Admin  bool     `json:"admin"`
}

// newKeyResponse carries the key itself: shown once, never again.
type newKeyResponse struct {
	APIKey store.APIKeyRecord `json:"apiKey"`
	Key    string             `json:"key"`
}

func (a *API) mountAPIKeys(r chi.Router) {
	r.Get("/apikeys", a.listKeys)
	r.Post("/apikeys", a.createKey)
	r.Delete("/apikeys/{id}", a.revokeKey)
}

func (a *API) listKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := a.keys.ListAPIKeys(r.Context())
	if err != nil {
		a.failKey(w, r, "", err)
		return
	}
	a.json(w, r, http.StatusOK, map[string]any{"apiKeys": keys})
}

func (a *API) createKey(w http.ResponseWriter, r *http.Request) {
	var req newKeyRequest
	if err := decodeBody(w, r, &req); err != nil {
		a.fail(w, r, "", err)
		return
	}
	if req.Tenant == "" {
		req.Tenant = "default"
	}
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		a.failKey(w, r, req.ID, fmt.Errorf("make API key: %w", err))
		return
	}
	key := keyPrefix + base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(key))
	rec, err := a.keys.CreateAPIKey(r.Context(), store.APIKeyRecord{
		ID: req.ID, Hash: hex.EncodeToString(sum[:]), Tenant: req.Tenant, Scopes: req.Scopes, Admin: req.Admin,
	})
	if err != nil {
		a.failKey(w, r, req.ID, err)
		return
	}
	a.log.Info().Str("apiKey", rec.ID).Str("tenant", rec.Tenant).Bool("admin", rec.Admin).Str("remote", r.RemoteAddr).Msg("admin: API key created")
	w.Header().Set("Location", "/admin/apikeys/"+url.PathEscape(rec.ID))
	w.Header().Set("Cache-Control", "no-store") // the body holds a credential
	a.json(w, r, http.StatusCreated, newKeyResponse{APIKey: rec, Key: key})
}

func (a *API) revokeKey(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	rec, err := a.keys.RevokeAPIKey(r.Context(), id)
	if err != nil {
		a.failKey(w, r, id, err)
		return
	}
	a.log.Info().Str("apiKey", rec.ID).Str("remote", r.RemoteAddr).Msg("admin: API key revoked")
	a.json(w, r, http.StatusOK, rec)
}

// failKey answers a store error of the key routes.
func (a *API) failKey(w http.ResponseWriter, r *http.Request, id string, err error) {
	var fe *store.FieldError
	switch {
	case errors.As(err, &fe):
		a.problem(w, r, http.StatusBadRequest, fe.Error(), fe.Field)
	case errors.Is(err, store.ErrAlreadyExists):
		a.problem(w, r, http.StatusConflict, fmt.Sprintf("an API key with id %q already exists", id), "id")
	case errors.Is(err, store.ErrNotFound):
		a.problem(w, r, http.StatusNotFound, fmt.Sprintf("no API key with id %q", id), "")
	default:
		a.fail(w, r, id, err)
	}
}
