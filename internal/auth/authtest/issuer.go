// Package authtest is a test OAuth issuer: it signs RS256 access tokens
// and serves its JWKS over loopback HTTP, with keys a test can rotate.
package authtest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer signs tokens and publishes its current keys at URL.
type Issuer struct {
	t         testing.TB
	srv       *httptest.Server
	mu        sync.Mutex
	published map[string]*rsa.PrivateKey
	fetches   int
}

// NewIssuer starts an issuer publishing a fresh key under each kid; it
// stops with the test.
func NewIssuer(t testing.TB, kids ...string) *Issuer {
	t.Helper()
	is := &Issuer{t: t}
	is.Rotate(kids...)
	is.srv = httptest.NewServer(http.HandlerFunc(is.serveJWKS))
	t.Cleanup(is.srv.Close)
	return is
}

// JWKSURL is where the key set is served.
func (is *Issuer) JWKSURL() string { return is.srv.URL + "/jwks" }

// Fetches counts the JWKS requests served so far.
func (is *Issuer) Fetches() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.fetches
}

// NewKey returns a fresh RSA key (for a signature the issuer never made).
func NewKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Rotate replaces the published key set with fresh keys under kids.
func (is *Issuer) Rotate(kids ...string) {
	keys := map[string]*rsa.PrivateKey{}
	for _, kid := range kids {
		keys[kid] = NewKey(is.t)
	}
	is.Publish(keys)
}

// Publish replaces the published key set with keys, by kid: a test that
// times a rotation makes the keys (slow, under -race) beforehand.
func (is *Issuer) Publish(keys map[string]*rsa.PrivateKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.published = keys
}

// Key is the published key under kid (nil if none).
func (is *Issuer) Key(kid string) *rsa.PrivateKey {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.published[kid]
}

func (is *Issuer) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.fetches++
	keys := []map[string]string{}
	for kid, k := range is.published {
		keys = append(keys, map[string]string{
			"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
			"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes()),
		})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
}

// Claims are a valid token's claims for issuer iss, audience aud, subject
// sub of tenant, with scope; valid for an hour from now.
func Claims(iss, aud, sub, tenant, scope string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": iss, "aud": aud, "sub": sub, "tenant": tenant, "scope": scope,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

// Sign makes an RS256 token with header kid, signed by key.
func Sign(t testing.TB, c jwt.MapClaims, kid string, key *rsa.PrivateKey) string {
	t.Helper()
	return SignHeader(t, c, map[string]any{"kid": kid}, key)
}

// SignHeader makes an RS256 token whose header has the parameters of
// header besides alg (typ, crit, …; a parameter set to "" is left out),
// signed by key.
func SignHeader(t testing.TB, c jwt.MapClaims, header map[string]any, key *rsa.PrivateKey) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	for k, v := range header {
		if v == "" {
			delete(tok.Header, k)
		} else {
			tok.Header[k] = v
		}
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Token signs c with the published key kid.
func (is *Issuer) Token(c jwt.MapClaims, kid string) string {
	is.t.Helper()
	return Sign(is.t, c, kid, is.Key(kid))
}
