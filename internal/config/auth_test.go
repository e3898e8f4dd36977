package config

import (
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
)

// The auth section loads from the file, MCP_AUTH_MODE overrides its mode,
// and a bad entry is named by its YAML path without echoing the value.
func TestLoadAuthSection(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	path := writeConfig(t, `
auth:
  mode: oauth
  resource: https://mcp.example.com/mcp
  apiKeys: [{id: ci, sha256: `+hash+`, tenant: team-a, admin: true}]
  oauth: {issuer: https://id.example.com, jwksURL: https://id.example.com/jwks, requiredScopes: [mcp:tools], tenantClaim: org}
`)
	cfg, err := load([]string{"-config", path}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Auth
	if a.Mode != auth.ModeOAuth || a.OAuth.TenantClaim != "org" || a.OAuth.AdminScope != "mcp:admin" || len(a.APIKeys) != 1 || !a.APIKeys[0].Admin {
		t.Errorf("auth = %+v", a)
	}
	cfg, err = load([]string{"-config", path}, map[string]string{EnvAuthMode: "apikey"})
	if err != nil || cfg.Auth.Mode != auth.ModeAPIKey {
		t.Fatalf("MCP_AUTH_MODE=apikey: %v, mode %q", err, cfg.Auth.Mode)
	}

	bad := writeConfig(t, `
auth:
  mode: apikey
  apiKeys: [{id: ci, sha256: not-a-hash-but-a-secret}]
`)
	_, err = load([]string{"-config", bad}, map[string]string{})
	if err == nil || !strings.Contains(err.Error(), "auth.apiKeys[0].sha256") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("err = %v, want one naming auth.apiKeys[0].sha256 without the value", err)
	}
}

// The bounds on unauthenticated traffic load from the file, are on by
// default, and a bad value is named by its key.
func TestLoadUnauthenticatedBounds(t *testing.T) {
	d := Default()
	if d.RateLimits.Unauthenticated.Off() || d.Auth.APIKeyLookupsPerSecond < 1 {
		t.Fatalf("defaults: rateLimits.unauthenticated %+v, auth.apiKeyLookupsPerSecond %d: want both on",
			d.RateLimits.Unauthenticated, d.Auth.APIKeyLookupsPerSecond)
	}
	path := writeConfig(t, `
auth:
  apiKeyLookupsPerSecond: 7
  oauth: {requireAccessTokenType: true}
rateLimits:
  unauthenticated: {perSecond: 0.5, burst: 4}
  trustedProxies: [10.0.0.0/8, "2001:db8::1"]
`)
	cfg, err := load([]string{"-config", path}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auth.APIKeyLookupsPerSecond != 7 || !cfg.Auth.OAuth.RequireAccessTokenType ||
		cfg.RateLimits.Unauthenticated.PerSecond != 0.5 || cfg.RateLimits.Unauthenticated.Burst != 4 || len(cfg.RateLimits.TrustedProxies) != 2 {
		t.Errorf("loaded auth %+v, rateLimits %+v", cfg.Auth, cfg.RateLimits)
	}
	for _, tc := range []struct{ yaml, key string }{
		{"auth: {apiKeyLookupsPerSecond: 0}", "auth.apiKeyLookupsPerSecond"},
		{"rateLimits: {unauthenticated: {perSecond: 1, burst: 0}}", "rateLimits.unauthenticated.burst"},
		{"rateLimits: {unauthenticated: {perSecond: -1}}", "rateLimits.unauthenticated.perSecond"},
		{"rateLimits: {trustedProxies: [10.0.0.0/8, ingress]}", "rateLimits.trustedProxies[1]"},
	} {
		_, err := load([]string{"-config", writeConfig(t, tc.yaml)}, map[string]string{})
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: err = %v, want one naming %s", tc.yaml, err, tc.key)
		}
	}
}
