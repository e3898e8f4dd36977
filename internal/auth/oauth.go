package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// signingMethods are the algorithms a token may be signed with: the
// asymmetric ones only. An HMAC token verified with a public key as its
// secret is the classic algorithm-confusion forgery, and "none" is no
// signature at all.
var signingMethods = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// oauthVerifier checks JWT access tokens (RFC 9068) for one issuer and
// this server's resource URI.
type oauthVerifier struct {
	keys     *keySet
	parser   *jwt.Parser
	cfg      OAuth
	resource string
	verified *tokenCache
}

func newOAuthVerifier(ctx context.Context, cfg Config, opts Options) (*oauthVerifier, error) {
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	keys, err := newKeySet(ctx, cfg.OAuth.JWKSURL, client, cfg.OAuth.JWKSRefreshInterval(), cfg.OAuth.JWKSMinRefresh(), opts.Log)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	parser := jwt.NewParser(
		jwt.WithValidMethods(signingMethods),
		jwt.WithIssuer(cfg.OAuth.Issuer),
		jwt.WithAudience(cfg.Resource), // RFC 8707: tokens minted for this server only
		jwt.WithLeeway(cfg.OAuth.ClockSkew()),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(now),
	)
	return &oauthVerifier{keys: keys, parser: parser, cfg: cfg.OAuth, resource: cfg.Resource, verified: newTokenCache(now)}, nil
}

// verify checks token and returns its principal. A token not verified
// before is checked only if admit allows it (nil), at a cost to the
// caller's budget of failures.
func (v *oauthVerifier) verify(ctx context.Context, token string, admit func() *Failure) (Principal, *Failure) {
	if p, ok := v.verified.get(token, func(kid string) bool { return v.keys.has(ctx, kid) }); ok {
		return p, nil
	}
	if f := admit(); f != nil {
		return Principal{}, f
	}
	claims := jwt.MapClaims{}
	parsed, err := v.parser.ParseWithClaims(token, claims, v.keys.keyfunc(ctx))
	var busy *keysUnavailable
	if errors.As(err, &busy) {
		return Principal{}, &Failure{Status: http.StatusServiceUnavailable, RetryAfter: busy.retryAfter,
			Description: busy.why + "; retry shortly"}
	}
	if err != nil {
		return Principal{}, unauthorized(CodeInvalidToken, v.reason(err))
	}
	sub, _ := claims["sub"].(string)
	if sub == "" {
		return Principal{}, unauthorized(CodeInvalidToken, "the token has no sub claim")
	}
	tenantID, _ := claims[v.cfg.TenantClaim].(string)
	if !ValidTenant(tenantID) {
		return Principal{}, unauthorized(CodeInvalidToken, fmt.Sprintf("the token has no usable %s claim naming its tenant", v.cfg.TenantClaim))
	}
	scopes := tokenScopes(claims)
	p := Principal{ID: "oauth:" + sub, Tenant: tenantID, Scopes: scopes}
	p.Admin = p.HasScope(v.cfg.AdminScope)
	var missing []string
	for _, s := range v.cfg.RequiredScopes {
		if !p.HasScope(s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return Principal{}, forbidden("the token lacks the scope " + strings.Join(missing, " "))
	}
	kid, _ := parsed.Header["kid"].(string)
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil && kid != "" {
		v.verified.put(token, kid, p, exp.Time)
	}
	return p, nil
}

// reason says why the JWT library refused a token, without the token.
func (v *oauthVerifier) reason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "the token is not a well-formed JWT"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "the token is signed with a key or algorithm the issuer does not publish"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "the token's signature does not verify"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "the token has expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "the token is not valid yet"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "the token was not issued by " + v.cfg.Issuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "the token's audience is not " + v.resource
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "the token lacks a required claim (exp)"
	}
	return "the token is not valid"
}

// tokenScopes reads the scope claim (RFC 9068 §2.2.3: one space-separated
// string), or scp, which some issuers send as an array.
func tokenScopes(c jwt.MapClaims) []string {
	if s, ok := c["scope"].(string); ok {
		return strings.Fields(s)
	}
	switch scp := c["scp"].(type) {
	case string:
		return strings.Fields(scp)
	case []any:
		out := make([]string, 0, len(scp))
		for _, s := range scp {
			if str, ok := s.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}
