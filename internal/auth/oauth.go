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

// Errors of checkHeader, which reason explains.
var (
	errCriticalExtension = errors.New("the token requires header extensions (crit)")
	errTokenType         = errors.New("the token's typ is not at+jwt")
)

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
	keyfunc := v.keys.keyfunc(ctx)
	parsed, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		if err := v.checkHeader(t.Header); err != nil {
			return nil, err
		}
		return keyfunc(t)
	})
	var busy *keysUnavailable
	if errors.As(err, &busy) {
		return Principal{}, &Failure{Status: http.StatusServiceUnavailable, RetryAfter: busy.retryAfter,
			Description: busy.why + "; retry shortly"}
	}
	if err != nil {
		return Principal{}, unauthorized(CodeInvalidToken, v.reason(err, claims))
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

// checkHeader refuses what the JWT library does not check in a token's
// header, before its key is looked for.
func (v *oauthVerifier) checkHeader(h map[string]any) error {
	// RFC 7515 §4.1.11: a recipient that does not understand every
	// extension crit lists must reject the token. This server
	// understands none, so a token with crit at all is refused (an empty
	// or malformed crit is invalid too).
	if _, ok := h["crit"]; ok {
		return errCriticalExtension
	}
	if v.cfg.RequireAccessTokenType {
		// RFC 9068 §2.1: an access token's typ is "at+jwt"; RFC 7515
		// §4.1.9 lets the "application/" prefix be omitted, and media
		// types compare without regard to case.
		typ, _ := h["typ"].(string)
		if !strings.EqualFold(typ, "at+jwt") && !strings.EqualFold(typ, "application/at+jwt") {
			return errTokenType
		}
	}
	return nil
}

// reason says why the JWT library refused a token, without the token.
func (v *oauthVerifier) reason(err error, claims jwt.MapClaims) string {
	switch {
	case errors.Is(err, errCriticalExtension):
		return "the token requires header extensions (crit) this server does not support"
	case errors.Is(err, errTokenType):
		return "the token is not a JWT access token: its typ is not at+jwt (RFC 9068)"
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
		if missing := missingClaims(claims); len(missing) > 0 {
			return "the token lacks a required claim (" + strings.Join(missing, ", ") + ")"
		}
		return "the token lacks a required claim"
	}
	return "the token is not valid"
}

// missingClaims names the claims the parser requires that claims lacks
// (exp, and aud and iss, which it requires because they are checked); an
// empty value counts as missing, as it does for the parser.
func missingClaims(claims jwt.MapClaims) []string {
	var missing []string
	if claims["exp"] == nil {
		missing = append(missing, "exp")
	}
	if aud, _ := claims.GetAudience(); len(aud) == 0 || len(aud) == 1 && aud[0] == "" {
		missing = append(missing, "aud")
	}
	if iss, _ := claims.GetIssuer(); iss == "" {
		missing = append(missing, "iss")
	}
	return missing
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
