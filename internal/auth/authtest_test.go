package auth

import (
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/auth/authtest"
)

const (
	testIssuer   = "https://issuer.test"
	testResource = "https://mcp.test/mcp"
)

// claims are a valid token's claims; tests change what they check.
func claims() jwt.MapClaims {
	return authtest.Claims(testIssuer, testResource, "agent-1", "team-a", "mcp:tools other")
}

func sign(t *testing.T, c jwt.MapClaims, kid string, key *rsa.PrivateKey) string {
	return authtest.Sign(t, c, kid, key)
}

func oauthConfig(jwksURL string) Config {
	c := Default()
	c.Mode, c.Resource = ModeOAuth, testResource
	c.OAuth.Issuer, c.OAuth.JWKSURL = testIssuer, jwksURL
	c.OAuth.RequiredScopes = []string{"mcp:tools"}
	c.OAuth.JWKSMinRefreshMs = 1000
	return c
}

func newAuthenticator(t *testing.T, cfg Config) *Authenticator {
	t.Helper()
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func request(authorization ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	for _, v := range authorization {
		r.Header.Add("Authorization", v)
	}
	return r
}
