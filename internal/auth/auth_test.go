package auth

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/auth/authtest"
)

const wantMetadata = "https://mcp.test/.well-known/oauth-protected-resource/mcp"

// Every way a request can fail OAuth authentication answers with the
// status and WWW-Authenticate challenge a client acts on (RFC 6750 §3,
// RFC 9728 §5.1, MCP basic/authorization).
func TestOAuthFailures(t *testing.T) {
	is := authtest.NewIssuer(t, "k1")
	a := newAuthenticator(t, oauthConfig(is.JWKSURL()))
	k1 := is.Key("k1")
	stranger := authtest.NewKey(t)
	with := func(change func(jwt.MapClaims)) jwt.MapClaims {
		c := claims()
		change(c)
		return c
	}
	hs256, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims()).SignedString([]byte("k1"))
	if err != nil {
		t.Fatal(err)
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims()).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	const base = `Bearer realm="mcp-runtime", resource_metadata="` + wantMetadata + `", scope="mcp:tools"`
	invalid := func(desc string) string { return base + `, error="invalid_token", error_description="` + desc + `"` }
	for _, tc := range []struct {
		name   string
		header []string
		status int
		want   string
	}{
		{"no token", nil, 401, base},
		{"malformed header", []string{"Basic dXNlcjpwdw=="}, 401,
			base + `, error="invalid_request", error_description="use the Bearer scheme: Authorization: Bearer <token>"`},
		{"two headers", []string{"Bearer a", "Bearer b"}, 401,
			base + `, error="invalid_request", error_description="send one Authorization header, not several"`},
		{"not a JWT", []string{"Bearer not-a-jwt"}, 401, invalid("the token is not a well-formed JWT")},
		{"bad signature", []string{"Bearer " + sign(t, claims(), "k1", stranger)}, 401, invalid("the token's signature does not verify")},
		{"unknown kid", []string{"Bearer " + sign(t, claims(), "k9", stranger)}, 401,
			invalid("the token is signed with a key or algorithm the issuer does not publish")},
		{"HS256 with the kid as secret", []string{"Bearer " + hs256}, 401, invalid("the token's signature does not verify")},
		{"alg none", []string{"Bearer " + none}, 401, invalid("the token's signature does not verify")},
		{"wrong iss", []string{"Bearer " + sign(t, with(func(c jwt.MapClaims) { c["iss"] = "https://evil.test" }), "k1", k1)}, 401,
			invalid("the token was not issued by " + testIssuer)},
		{"wrong aud", []string{"Bearer " + sign(t, with(func(c jwt.MapClaims) { c["aud"] = "https://other.test/mcp" }), "k1", k1)}, 401,
			invalid("the token's audience is not " + testResource)},
		{"expired", []string{"Bearer " + sign(t, with(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() }), "k1", k1)}, 401,
			invalid("the token has expired")},
		{"no exp", []string{"Bearer " + sign(t, with(func(c jwt.MapClaims) { delete(c, "exp") }), "k1", k1)}, 401,
			invalid("the token lacks a required claim (exp)")},
		{"no aud", []string{"Bearer " + sign(t, with(func(c jwt.MapClaims) { delete(c, "aud") }), "k1", k1)}, 401,
			invalid("the token lacks a required claim (aud)")},
		{"empty aud", []string{"Bearer " + sign(t, with(func(c jwt.MapClaims) { c["aud"] = []any{} }), "k1", k1)}, 401,
			invalid("the token lacks a required claim (aud)")},
		{"no iss", []string{"Bearer " + sign(t, with(func(c jwt.MapClaims) { delete(c, "iss") }), "k1", k1)}, 401,
			invalid("the token lacks a required claim (iss)")},
		{"no exp, aud or iss", []string{"Bearer " + sign(t, with(func(c jwt.MapClaims) { delete(c, "exp"); delete(c, "aud"); delete(c, "iss") }), "k1", k1)}, 401,
			invalid("the token lacks a required claim (exp, aud, iss)")},
		// RFC 7515 §4.1.11: an extension this server does not understand
		// (it understands none) makes the token invalid, even well signed.
		{"critical extension", []string{"Bearer " + authtest.SignHeader(t, claims(), map[string]any{"kid": "k1", "crit": []any{"urn:x:bound"}, "urn:x:bound": true}, k1)}, 401,
			invalid("the token requires header extensions (crit) this server does not support")},
		{"empty crit", []string{"Bearer " + authtest.SignHeader(t, claims(), map[string]any{"kid": "k1", "crit": []any{}}, k1)}, 401,
			invalid("the token requires header extensions (crit) this server does not support")},
		{"not yet valid", []string{"Bearer " + sign(t, with(func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(time.Hour).Unix() }), "k1", k1)}, 401,
			invalid("the token is not valid yet")},
		{"no tenant", []string{"Bearer " + sign(t, with(func(c jwt.MapClaims) { delete(c, "tenant") }), "k1", k1)}, 401,
			invalid("the token has no usable tenant claim naming its tenant")},
		{"no sub", []string{"Bearer " + sign(t, with(func(c jwt.MapClaims) { delete(c, "sub") }), "k1", k1)}, 401,
			invalid("the token has no sub claim")},
		{"missing scope", []string{"Bearer " + sign(t, with(func(c jwt.MapClaims) { c["scope"] = "other" }), "k1", k1)}, 403,
			base + `, error="insufficient_scope", error_description="the token lacks the scope mcp:tools"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, f := a.Authenticate(request(tc.header...))
			if f == nil {
				t.Fatal("authenticated, want a failure")
			}
			if f.Status != tc.status || f.WWWAuthenticate() != tc.want {
				t.Errorf("got %d %s\nwant %d %s", f.Status, f.WWWAuthenticate(), tc.status, tc.want)
			}
		})
	}
}

// A valid token's principal carries its subject, tenant and scopes; the
// admin scope makes it an admin. Skew within clockSkewMs is accepted.
func TestOAuthPrincipal(t *testing.T) {
	is := authtest.NewIssuer(t, "k1")
	a := newAuthenticator(t, oauthConfig(is.JWKSURL()))
	c := claims()
	c["scp"], c["scope"] = []any{"mcp:tools", "mcp:admin"}, nil
	delete(c, "scope")
	c["aud"] = []any{"https://other.test", testResource}
	c["exp"] = time.Now().Add(-10 * time.Second).Unix() // within the 30 s skew
	p, f := a.Authenticate(request("bearer " + sign(t, c, "k1", is.Key("k1"))))
	if f != nil {
		t.Fatalf("refused: %v", f)
	}
	if p.ID != "oauth:agent-1" || p.Tenant != "team-a" || !p.Admin || !slices.Equal(p.Scopes, []string{"mcp:tools", "mcp:admin"}) {
		t.Errorf("principal = %+v", p)
	}
}

// The issuer rotates its keys mid-test: a token under the new kid is
// accepted (an unknown kid fetches the set again), and one under the
// retired kid is refused once the new set is in.
func TestOAuthKeyRotation(t *testing.T) {
	is := authtest.NewIssuer(t, "k1")
	a := newAuthenticator(t, oauthConfig(is.JWKSURL()))
	old := sign(t, claims(), "k1", is.Key("k1"))
	if _, f := a.Authenticate(request("Bearer " + old)); f != nil {
		t.Fatalf("before rotation: %v", f)
	}
	is.Rotate("k2")
	if _, f := a.Authenticate(request("Bearer " + is.Token(claims(), "k2"))); f != nil {
		t.Fatalf("token under the rotated-in key: %v", f)
	}
	// The retired key: its token was verified before, but the cache
	// honours it only while the kid is published (rechecked within a
	// second), and a fresh verification finds the kid gone: 401.
	//
	// The sleep is the subject: the refetch budget is a rate.Limiter on
	// the wall clock, which the authenticator's clock (Options.Now) does
	// not reach, and the issuer is a real HTTP server, whose keep-alive
	// connections a synctest bubble cannot hold still.
	time.Sleep(1100 * time.Millisecond) // kidRecheck, and jwksMinRefreshMs: 1000
	_, f := a.Authenticate(request("Bearer " + old))
	if f == nil || f.Status != http.StatusUnauthorized || f.Code != CodeInvalidToken {
		t.Fatalf("token under the retired key: %v, want 401 invalid_token", f)
	}
	// Made-up kids do not turn into fetches: at most one per JWKSMinRefresh.
	before := is.Fetches()
	for i := range 20 {
		_, _ = a.Authenticate(request("Bearer " + sign(t, claims(), "made-up-"+string(rune('a'+i)), is.Key("k2"))))
	}
	if n := is.Fetches() - before; n > 1 {
		t.Errorf("20 unknown kids made %d JWKS fetches, want at most 1", n)
	}
}

// An attacker spends the refetch budget with a made-up kid just before
// the issuer rotates: a token under the new key is 503 (retry), never
// 401, and works once the next fetch is allowed. An issuer that cannot
// be reached is 503 too.
func TestOAuthKeysUnavailableIs503(t *testing.T) {
	is := authtest.NewIssuer(t, "k1")
	a := newAuthenticator(t, oauthConfig(is.JWKSURL()))
	k2 := authtest.NewKey(t)
	tok := sign(t, claims(), "k2", k2)
	bogus := sign(t, claims(), "bogus", authtest.NewKey(t))
	// Within jwksMinRefreshMs (1 s) of each other: the keys are made
	// beforehand, since making one can take longer than that under -race.
	_, _ = a.Authenticate(request("Bearer " + bogus))
	is.Publish(map[string]*rsa.PrivateKey{"k2": k2})
	_, f := a.Authenticate(request("Bearer " + tok))
	if f == nil || f.Status != http.StatusServiceUnavailable {
		t.Fatalf("new key while the budget is spent: %v, want 503", f)
	}
	// The sleep is the subject: the next fetch is allowed by the refetch
	// budget's rate.Limiter on the wall clock (see TestOAuthKeyRotation).
	time.Sleep(1100 * time.Millisecond)
	if _, f := a.Authenticate(request("Bearer " + tok)); f != nil {
		t.Fatalf("new key after the retry hint: %v", f)
	}

	down := oauthConfig("http://127.0.0.1:1/jwks") // nothing listens on port 1
	b := newAuthenticator(t, down)
	_, f = b.Authenticate(request("Bearer " + tok))
	if f == nil || f.Status != http.StatusServiceUnavailable || f.Challenge() {
		t.Fatalf("issuer unreachable: %v, want 503", f)
	}
}

func TestAPIKeys(t *testing.T) {
	hash := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	cfg := Default()
	cfg.Mode = ModeAPIKey
	cfg.APIKeys = []APIKey{
		{ID: "team-a-agents", SHA256: hash("key-a"), Tenant: "team-a"},
		{ID: "ops", SHA256: strings.ToUpper(hash("key-ops")), Admin: true},
	}
	a := newAuthenticator(t, cfg)
	const base = `Bearer realm="mcp-runtime"`
	for _, tc := range []struct {
		name    string
		header  []string
		want    Principal
		status  int
		headerW string
	}{
		{"team key", []string{"Bearer key-a"}, Principal{ID: "apikey:team-a-agents", Tenant: "team-a"}, 0, ""},
		{"admin key, upper-case hash", []string{"Bearer key-ops"}, Principal{ID: "apikey:ops", Tenant: "default", Admin: true}, 0, ""},
		{"no key", nil, Principal{}, 401, base},
		{"unknown or revoked key", []string{"Bearer key-b"}, Principal{}, 401,
			base + `, error="invalid_token", error_description="the API key is not valid"`},
		{"empty bearer", []string{"Bearer "}, Principal{}, 401,
			base + `, error="invalid_request", error_description="the Bearer scheme carries no token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f := a.Authenticate(request(tc.header...))
			if tc.status == 0 {
				if f != nil || p.ID != tc.want.ID || p.Tenant != tc.want.Tenant || p.Admin != tc.want.Admin {
					t.Fatalf("got %+v, %v; want %+v", p, f, tc.want)
				}
				return
			}
			if f == nil || f.Status != tc.status || f.WWWAuthenticate() != tc.headerW {
				t.Fatalf("got %+v; want %d %s", f, tc.status, tc.headerW)
			}
		})
	}
}

func TestModeNoneIsAnonymous(t *testing.T) {
	a := newAuthenticator(t, Default())
	p, f := a.Authenticate(request("Bearer whatever"))
	if f != nil || p.ID != Anonymous.ID || p.Tenant != "default" || p.Admin {
		t.Fatalf("got %+v, %v", p, f)
	}
}

func TestMetadata(t *testing.T) {
	cfg := oauthConfig("https://issuer.test/jwks")
	if got := MetadataPaths(cfg); !slices.Equal(got, []string{WellKnownPath, WellKnownPath + "/mcp"}) {
		t.Errorf("paths = %v", got)
	}
	if got := MetadataURL(testResource); got != wantMetadata {
		t.Errorf("MetadataURL = %s", got)
	}
	rec := httptestRecorder(t, MetadataHandler(cfg))
	want := `{"resource":"https://mcp.test/mcp","authorization_servers":["https://issuer.test"],"scopes_supported":["mcp:tools"],"bearer_methods_supported":["header"],"resource_name":"mcp-runtime"}`
	if rec != want {
		t.Errorf("metadata = %s\nwant %s", rec, want)
	}
	if MetadataPaths(Default()) != nil {
		t.Error("metadata served outside oauth mode")
	}
}

func TestValidateNamesTheField(t *testing.T) {
	good := oauthConfig("https://issuer.test/jwks")
	for _, tc := range []struct {
		name   string
		change func(*Config)
		field  string
	}{
		{"mode", func(c *Config) { c.Mode = "basic" }, "mode"},
		{"resource missing", func(c *Config) { c.Resource = "" }, "resource"},
		{"resource fragment", func(c *Config) { c.Resource = "https://mcp.test/mcp#x" }, "resource"},
		{"issuer", func(c *Config) { c.OAuth.Issuer = "" }, "oauth.issuer"},
		{"jwks", func(c *Config) { c.OAuth.JWKSURL = "ftp://x" }, "oauth.jwksURL"},
		{"scope", func(c *Config) { c.OAuth.RequiredScopes = []string{"a b"} }, "oauth.requiredScopes[0]"},
		{"admin scope", func(c *Config) { c.OAuth.AdminScope = "" }, "oauth.adminScope"},
		{"tenant claim", func(c *Config) { c.OAuth.TenantClaim = "" }, "oauth.tenantClaim"},
		{"skew", func(c *Config) { c.OAuth.ClockSkewMs = -1 }, "oauth.clockSkewMs"},
		{"key id", func(c *Config) { c.APIKeys = []APIKey{{ID: "", SHA256: strings.Repeat("a", 64)}} }, "apiKeys[0].id"},
		{"key hash", func(c *Config) { c.APIKeys = []APIKey{{ID: "k", SHA256: "secret"}} }, "apiKeys[0].sha256"},
		{"key tenant", func(c *Config) { c.APIKeys = []APIKey{{ID: "k", SHA256: strings.Repeat("a", 64), Tenant: "a\nb"}} }, "apiKeys[0].tenant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			c.OAuth.RequiredScopes = slices.Clone(good.OAuth.RequiredScopes)
			tc.change(&c)
			err := c.Validate()
			fe, ok := err.(*FieldError)
			if !ok || fe.Field != tc.field {
				t.Fatalf("Validate() = %v, want a FieldError for %s", err, tc.field)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error echoes the configured value: %v", err)
			}
		})
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
}

// Keys created through the admin API authenticate through the store's
// lookup: found, revoked (401 invalid_token), unknown, and a store that
// cannot answer (503, not a 401 that would make the client drop its key).
// Answers are reused for keyCacheTTL, so a request does not cost a query.
func TestStoredAPIKeys(t *testing.T) {
	hash := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	stored := map[string]StoredKey{
		hash("live"):    {ID: "ci", Tenant: "team-c", Scopes: []string{"x"}},
		hash("revoked"): {ID: "old", Tenant: "team-c", Revoked: true},
	}
	lookups := 0
	down := false
	now := time.Unix(1_700_000_000, 0)
	cfg := Default()
	cfg.Mode = ModeAPIKey
	a, err := New(cfg, Options{Now: func() time.Time { return now }, Keys: func(_ context.Context, h string) (StoredKey, bool, error) {
		lookups++
		if down {
			return StoredKey{}, false, errors.New("database down")
		}
		k, ok := stored[h]
		return k, ok, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, f := a.Authenticate(request("Bearer live"))
	if f != nil || p.ID != "apikey/ci" || p.Tenant != "team-c" {
		t.Fatalf("live key: %+v %v", p, f)
	}
	_, f = a.Authenticate(request("Bearer revoked"))
	if f == nil || f.Status != 401 || f.WWWAuthenticate() != `Bearer realm="mcp-runtime", error="invalid_token", error_description="the API key was revoked"` {
		t.Fatalf("revoked key: %v", f)
	}
	_, f = a.Authenticate(request("Bearer unknown"))
	if f == nil || f.Status != 401 || f.Code != CodeInvalidToken {
		t.Fatalf("unknown key: %v", f)
	}
	before := lookups
	for range 5 {
		_, _ = a.Authenticate(request("Bearer live"))
		_, _ = a.Authenticate(request("Bearer unknown"))
	}
	if lookups != before {
		t.Errorf("%d lookups for cached answers", lookups-before)
	}
	now = now.Add(keyCacheTTL)
	down = true
	_, f = a.Authenticate(request("Bearer live"))
	if f == nil || f.Status != 503 || f.Challenge() {
		t.Fatalf("store down: %v, want a 503 that is not a challenge", f)
	}
}
