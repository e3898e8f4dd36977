// Package auth decides who a request comes from
// (docs/adr/0019-authentication-and-principals.md): no credentials (mode
// none), API keys, or OAuth 2.1 JWT bearer tokens checked against the
// issuer's JWKS (MCP basic/authorization, RFC 9068, RFC 8707). The
// principal it returns names the tenant every store row, cache key, trace
// and subscription of the request is scoped by.
//
// It knows nothing of MCP or of the transport: an Authenticator takes the
// Authorization header and answers a Principal or a *Failure, and the
// Failure says which status and WWW-Authenticate challenge to send (RFC
// 6750 §3). Tokens are never logged and never forwarded anywhere.
package auth

import (
	"context"
	"slices"

	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// Principal is who a request acts as.
type Principal struct {
	// ID is stable for one caller and distinct between callers:
	// "anonymous", "apikey:<id>" (a configured key), "apikey/<id>" (a key
	// created through the admin API) or "oauth:<sub>". A client session
	// is bound to the principal that created it, and to its tenant.
	ID string
	// Tenant scopes every piece of state the request reads or writes.
	Tenant string
	// Scopes are the scopes granted (the key's, or the token's).
	Scopes []string
	// Admin lets the principal use the admin API.
	Admin bool
}

// Anonymous is the principal of every request in mode none.
var Anonymous = Principal{ID: "anonymous", Tenant: tenant.Default}

// HasScope reports whether s was granted.
func (p Principal) HasScope(s string) bool { return slices.Contains(p.Scopes, s) }

type principalKey struct{}

// WithPrincipal returns ctx carrying p, and p's tenant for the store
// (package tenant).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return tenant.With(context.WithValue(ctx, principalKey{}, p), p.Tenant)
}

// FromContext returns the principal of ctx; false when none was set
// (a request that did not pass the transport's authentication).
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
