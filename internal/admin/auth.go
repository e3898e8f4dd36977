package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/logging"
)

// realm names the protection space in WWW-Authenticate (RFC 9110 §11.6.1).
const realm = `Bearer realm="mcp-runtime-admin"`

// authenticate lets a request through with the configured bearer token (RFC
// 6750 §2.1) or as an admin principal
// (docs/adr/0019-authentication-and-principals.md). With neither possible
// the API is off: 403, not 401, since no credential the client could send
// would help.
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.hasToken && a.principals == nil { // the API is off
			a.problem(w, r, http.StatusForbidden,
				"the admin API is disabled; set MCP_ADMIN_TOKEN to enable it", "")
			return
		}
		token, ok := bearer(r.Header.Get("Authorization"))
		if ok && a.hasToken && a.tokenMatches(token) {
			next.ServeHTTP(w, r)
			return
		}
		if a.principals != nil {
			a.admitPrincipal(w, r, next)
			return
		}
		if !ok {
			// No error code when no credentials were sent (RFC 6750 §3.1).
			w.Header().Set("WWW-Authenticate", realm)
			a.problem(w, r, http.StatusUnauthorized,
				"send the admin token as Authorization: Bearer <token>", "")
			return
		}
		// The token itself is never logged, wrong or right.
		a.log.Warn().Str("method", logging.Field(r.Method)).Str("path", logging.Field(r.URL.Path)).
			Str("remote", r.RemoteAddr).Msg("admin API: wrong bearer token")
		w.Header().Set("WWW-Authenticate", realm+`, error="invalid_token"`)
		a.problem(w, r, http.StatusUnauthorized, "the bearer token is not valid", "")
	})
}

// tokenMatches compares digests of equal length, so the comparison takes
// the same time whatever length the client sent.
func (a *API) tokenMatches(token string) bool {
	got := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(got[:], a.digest[:]) == 1
}

// admitPrincipal lets an admin principal through: 401 with the
// authenticator's challenge without valid credentials, 403 for a valid
// principal that is not an admin.
func (a *API) admitPrincipal(w http.ResponseWriter, r *http.Request, next http.Handler) {
	p, f := a.principals.Authenticate(r)
	if f != nil {
		if f.Challenge() {
			w.Header().Set("WWW-Authenticate", f.WWWAuthenticate())
		} else {
			w.Header().Set("Retry-After", f.RetryAfterSeconds())
		}
		a.problem(w, r, f.Status, f.Description, "")
		return
	}
	if !p.Admin {
		a.log.Warn().Str("principal", p.ID).Str("method", logging.Field(r.Method)).Str("path", logging.Field(r.URL.Path)).
			Str("remote", r.RemoteAddr).Msg("admin API: principal is not an admin")
		w.Header().Set("WWW-Authenticate", realm+`, error="insufficient_scope"`)
		a.problem(w, r, http.StatusForbidden,
			"the admin API needs an admin API key, a token with the admin scope, or the admin token", "")
		return
	}
	next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
}

// bearer extracts the token of an Authorization: Bearer header; the scheme
// is case-insensitive (RFC 9110 §11.1).
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// recoverer turns a panic in an admin handler into a 500 problem for this
// request only; the stack goes to the log.
func (a *API) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.log.Error().Str("panic", logging.Field(fmt.Sprint(v))).Str("method", logging.Field(r.Method)).Str("path", logging.Field(r.URL.Path)).
					Bytes("stack", debug.Stack()).Msg("panic in admin handler")
				a.problem(w, r, http.StatusInternalServerError, internalDetail, "")
			}
		}()
		next.ServeHTTP(w, r)
	})
}
