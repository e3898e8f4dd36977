package auth

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Modes of Config.Mode.
const (
	ModeNone   = "none"   // no credentials: every request is the anonymous principal
	ModeAPIKey = "apikey" // Authorization: Bearer <key>, keys configured as SHA-256 hashes
	ModeOAuth  = "oauth"  // OAuth 2.1 resource server: JWT bearer tokens checked against a JWKS
)

// Config is the auth: section of the configuration file (DESIGN.md,
// Configuration). Its zero value is not valid; Default fills it.
type Config struct {
	// Mode is none, apikey or oauth.
	Mode string `yaml:"mode"`
	// Resource is this server's canonical resource URI (RFC 8707), the
	// MCP endpoint's public URL, e.g. https://mcp.example.com/mcp. OAuth
	// tokens must name it in aud; the Protected Resource Metadata (RFC
	// 9728) is served for it. Required in oauth mode.
	Resource string `yaml:"resource"`
	// APIKeys are the keys apikey mode accepts.
	APIKeys []APIKey `yaml:"apiKeys"`
	// APIKeyLookupsPerSecond bounds, per replica, the store lookups of
	// API keys no lookup has found before (with a burst of as many): a
	// flood of made-up keys reaches the database at this rate at most,
	// and a key it cannot look up now gets 503 with Retry-After. Keys
	// found before are looked up again (every 5 s) without it.
	APIKeyLookupsPerSecond int `yaml:"apiKeyLookupsPerSecond"`
	// OAuth configures oauth mode.
	OAuth OAuth `yaml:"oauth"`
}

// APIKey is one key of apikey mode. The key itself is never configured,
// only its SHA-256: a leaked configuration file or Helm values file does
// not leak the credential.
type APIKey struct {
	// ID names the key in logs and traces and makes its principal
	// ("apikey:<id>").
	ID string `yaml:"id"`
	// SHA256 is the hex SHA-256 of the key (`printf %s "$KEY" | sha256sum`).
	SHA256 string `yaml:"sha256"`
	// Tenant is the tenant whose state the key acts on (default "default").
	Tenant string `yaml:"tenant"`
	// Scopes are granted to the key's principal.
	Scopes []string `yaml:"scopes"`
	// Admin lets the key use the admin API (/admin/*).
	Admin bool `yaml:"admin"`
}

// OAuth configures the resource server of oauth mode.
type OAuth struct {
	// Issuer is the token issuer; tokens must carry it in iss.
	Issuer string `yaml:"issuer"`
	// JWKSURL is where the issuer publishes its signing keys.
	JWKSURL string `yaml:"jwksURL"`
	// AuthorizationServers are listed in the Protected Resource Metadata;
	// default [Issuer].
	AuthorizationServers []string `yaml:"authorizationServers"`
	// RequiredScopes must all be in a token's scope (or scp) claim.
	RequiredScopes []string `yaml:"requiredScopes"`
	// AdminScope in a token lets it use the admin API.
	AdminScope string `yaml:"adminScope"`
	// TenantClaim names the claim whose string value is the tenant. A
	// token without it is refused: guessing a tenant would mix teams.
	TenantClaim string `yaml:"tenantClaim"`
	// ClockSkewMs is the leeway on exp, nbf and iat.
	ClockSkewMs int64 `yaml:"clockSkewMs"`
	// JWKSRefreshIntervalMs is how often the key set is fetched again in
	// the background; an unknown kid also fetches it (at most once per
	// JWKSMinRefreshMs).
	JWKSRefreshIntervalMs int64 `yaml:"jwksRefreshIntervalMs"`
	// JWKSMinRefreshMs bounds the fetches unknown kids cause, so a flood
	// of made-up kids cannot turn into a flood of requests to the issuer.
	JWKSMinRefreshMs int64 `yaml:"jwksMinRefreshMs"`
	// RequireAccessTokenType refuses tokens whose header typ is not
	// at+jwt (RFC 9068 §2.1), so an ID token or another JWT the issuer
	// signs cannot be used as an access token. Off by default: many
	// issuers send typ JWT, or none.
	RequireAccessTokenType bool `yaml:"requireAccessTokenType"`
}

// Default is auth off, with the oauth settings a deployment usually keeps.
func Default() Config {
	return Config{Mode: ModeNone, APIKeyLookupsPerSecond: 100, OAuth: OAuth{
		AdminScope: "mcp:admin", TenantClaim: "tenant", ClockSkewMs: 30_000,
		JWKSRefreshIntervalMs: 3_600_000, JWKSMinRefreshMs: 10_000,
	}}
}

// ClockSkew, JWKSRefreshInterval and JWKSMinRefresh are the settings as
// durations.
func (o OAuth) ClockSkew() time.Duration { return time.Duration(o.ClockSkewMs) * time.Millisecond }
func (o OAuth) JWKSRefreshInterval() time.Duration {
	return time.Duration(o.JWKSRefreshIntervalMs) * time.Millisecond
}
func (o OAuth) JWKSMinRefresh() time.Duration {
	return time.Duration(o.JWKSMinRefreshMs) * time.Millisecond
}

// Servers is AuthorizationServers, or the issuer when none is listed.
func (o OAuth) Servers() []string {
	if len(o.AuthorizationServers) > 0 {
		return o.AuthorizationServers
	}
	return []string{o.Issuer}
}

// FieldError is a bad setting: Field is its dotted path below auth
// (apiKeys[0].sha256), Reason says what is wrong without echoing secrets.
type FieldError struct {
	Field, Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("auth.%s: %s", e.Field, e.Reason) }

var (
	keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	// scopePattern is RFC 6749 §3.3's scope-token: printable ASCII
	// without space, '"' or '\'.
	scopePattern = regexp.MustCompile(`^[\x21\x23-\x5B\x5D-\x7E]+$`)
)

// ValidTenant reports whether id can name a tenant: 1 to 128 printable
// characters, no control characters. It is part of every key and query,
// so it is held to what logs and Redis keys can carry.
func ValidTenant(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// Validate checks the section; the error is a *FieldError for the first
// bad setting.
func (c Config) Validate() error {
	bad := func(field, format string, a ...any) error {
		return &FieldError{Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	switch c.Mode {
	case ModeNone, ModeAPIKey, ModeOAuth:
	default:
		return bad("mode", "%q: use none, apikey or oauth", c.Mode)
	}
	if c.Resource != "" || c.Mode == ModeOAuth {
		if err := absoluteURL(c.Resource, true); err != "" {
			return bad("resource", "%s (this server's public MCP endpoint, e.g. https://mcp.example.com/mcp)", err)
		}
	}
	if c.APIKeyLookupsPerSecond < 1 || c.APIKeyLookupsPerSecond > 100_000 {
		return bad("apiKeyLookupsPerSecond", "%d: use 1 to 100000 lookups per second", c.APIKeyLookupsPerSecond)
	}
	seen := map[string]int{}
	hashes := map[string]int{}
	for i, k := range c.APIKeys {
		f := fmt.Sprintf("apiKeys[%d]", i)
		if !keyIDPattern.MatchString(k.ID) {
			return bad(f+".id", "%q: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", k.ID)
		}
		if j, dup := seen[k.ID]; dup {
			return bad(f+".id", "%q is also the id of apiKeys[%d]", k.ID, j)
		}
		seen[k.ID] = i
		if b, err := hex.DecodeString(k.SHA256); err != nil || len(b) != 32 {
			// The value is a hash, not the key, but it is still not echoed.
			return bad(f+".sha256", "must be 64 hex digits, the SHA-256 of the key (printf %%s \"$KEY\" | sha256sum)")
		}
		if j, dup := hashes[strings.ToLower(k.SHA256)]; dup {
			return bad(f+".sha256", "is also the hash of apiKeys[%d]: one key, one principal", j)
		}
		hashes[strings.ToLower(k.SHA256)] = i
		if k.Tenant != "" && !ValidTenant(k.Tenant) {
			return bad(f+".tenant", "1 to 128 characters without control characters")
		}
		for j, s := range k.Scopes {
			if !scopePattern.MatchString(s) {
				return bad(fmt.Sprintf("%s.scopes[%d]", f, j), "%q is not an OAuth scope token", s)
			}
		}
	}
	if c.Mode == ModeOAuth {
		return c.OAuth.validate(bad)
	}
	return nil
}

func (o OAuth) validate(bad func(field, format string, a ...any) error) error {
	if o.Issuer == "" {
		return bad("oauth.issuer", "is required in oauth mode")
	}
	if err := absoluteURL(o.JWKSURL, false); err != "" {
		return bad("oauth.jwksURL", "%s", err)
	}
	for i, s := range o.AuthorizationServers {
		if err := absoluteURL(s, false); err != "" {
			return bad(fmt.Sprintf("oauth.authorizationServers[%d]", i), "%s", err)
		}
	}
	for i, s := range append(slices.Clone(o.RequiredScopes), o.AdminScope) {
		if !scopePattern.MatchString(s) {
			f := fmt.Sprintf("oauth.requiredScopes[%d]", i)
			if i == len(o.RequiredScopes) {
				f = "oauth.adminScope"
			}
			return bad(f, "%q is not an OAuth scope token", s)
		}
	}
	if o.TenantClaim == "" {
		return bad("oauth.tenantClaim", "is required: the claim that names the tenant (e.g. tenant, org_id, azp)")
	}
	switch {
	case o.ClockSkewMs < 0 || o.ClockSkewMs > 300_000:
		return bad("oauth.clockSkewMs", "%d: use 0 to 300000 milliseconds", o.ClockSkewMs)
	case o.JWKSRefreshIntervalMs < 60_000 || o.JWKSRefreshIntervalMs > 86_400_000:
		return bad("oauth.jwksRefreshIntervalMs", "%d: use 60000 to 86400000 milliseconds", o.JWKSRefreshIntervalMs)
	case o.JWKSMinRefreshMs < 1000 || o.JWKSMinRefreshMs > 3_600_000:
		return bad("oauth.jwksMinRefreshMs", "%d: use 1000 to 3600000 milliseconds", o.JWKSMinRefreshMs)
	}
	return nil
}

// absoluteURL returns why raw is not an absolute http(s) URL, or "". A
// resource URI has no fragment (RFC 8707 §2).
func absoluteURL(raw string, resource bool) string {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return "is required"
	case err != nil:
		return "is not a URL"
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Sprintf("%q: must be an https:// (or, for local testing, http://) URL", raw)
	case u.Host == "":
		return fmt.Sprintf("%q: has no host", raw)
	case resource && u.Fragment != "":
		return fmt.Sprintf("%q: a resource URI has no fragment (RFC 8707)", raw)
	}
	return ""
}
