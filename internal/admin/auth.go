package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"runtime/debug"
	"strings"
)

// realm names the protection space in WWW-Authenticate (RFC 9110 §11.6.1).
const realm = `Bearer realm="mcp-runtime-admin"`

// authenticate lets a request through only with the configured bearer
// token (RFC 6750 §2.1). With no token configured the API is off: 403, not
// 401, since no credential the client could send would help.
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.enabled {
			a.problem(w, r, http.StatusForbidden,
				"the admin API is disabled; set MCP_ADMIN_TOKEN to enable it", "")
			return
		}
		token, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			// No error code when no credentials were sent (RFC 6750 §3.1).
			w.Header().Set("WWW-Authenticate", realm)
			a.problem(w, r, http.StatusUnauthorized,
				"send the admin token as Authorization: Bearer <token>", "")
			return
		}
		got := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(got[:], a.digest[:]) != 1 {
			// The token itself is never logged, wrong or right.
			a.log.Warn().Str("method", r.Method).Str("path", r.URL.Path).
				Str("remote", r.RemoteAddr).Msg("admin API: wrong bearer token")
			w.Header().Set("WWW-Authenticate", realm+`, error="invalid_token"`)
			a.problem(w, r, http.StatusUnauthorized, "the bearer token is not valid", "")
			return
		}
		next.ServeHTTP(w, r)
	})
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
				a.log.Error().Interface("panic", v).Str("method", r.Method).Str("path", r.URL.Path).
					Bytes("stack", debug.Stack()).Msg("panic in admin handler")
				a.problem(w, r, http.StatusInternalServerError, internalDetail, "")
			}
		}()
		next.ServeHTTP(w, r)
	})
}
