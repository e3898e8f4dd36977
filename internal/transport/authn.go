package transport

import (
	"net/http"
	"strconv"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Authenticator decides who a request comes from (package auth;
// docs/adr/0019-authentication-and-principals.md).
type Authenticator interface {
	// Authenticate returns the principal of r, or the failure to answer
	// with: its status (401 or 403) and WWW-Authenticate challenge.
	Authenticate(r *http.Request) (auth.Principal, *auth.Failure)
}

// authenticate, then the principal's request budget
// (docs/adr/0022-rate-limits.md), run before anything reads the body or
// looks up a client session (DESIGN.md, "A tools/call, end to end", step
// 1): a request without valid credentials learns nothing, not even
// whether a session exists. The principal, and its tenant, go into the
// request's context, which every handler and store call reads. A CORS
// preflight carries no credentials by design and is answered before this
// runs.
func (t *Transport) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		p := auth.Anonymous
		if t.opts.Auth != nil {
			var f *auth.Failure
			if p, f = t.opts.Auth.Authenticate(r); f != nil {
				t.refuse(w, r, f)
				return
			}
			r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		}
		if t.opts.Limit != nil {
			if ok, wait := t.opts.Limit(r.Context(), p); !ok {
				// A flood is refused before the body is read or a
				// session looked up (RFC 6585 §4).
				t.unwantedBody(w, r)
				w.Header().Set("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
				writeError(w, http.StatusTooManyRequests, nil, protocol.Errorf(protocol.CodeInvalidRequest,
					"too many requests: retry after %d ms", wait.Milliseconds()))
				t.observe(r.Method, http.StatusTooManyRequests)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// principalID is the ID of the request's principal, "" without an
// Authenticator.
func principalID(r *http.Request) string {
	p, _ := auth.FromContext(r.Context())
	return p.ID
}

// refuse answers a request the Authenticator refused: with its challenge
// (401, 403), or, when the credentials could not be checked now (503),
// with a retry hint.
func (t *Transport) refuse(w http.ResponseWriter, r *http.Request, f *auth.Failure) {
	t.unwantedBody(w, r)
	msg := f.Description
	if f.Challenge() {
		w.Header().Set("WWW-Authenticate", f.WWWAuthenticate())
		msg = "unauthorized: " + msg
		if f.Status == http.StatusForbidden {
			msg = "forbidden: " + f.Description
		}
	} else {
		w.Header().Set("Retry-After", f.RetryAfterSeconds())
	}
	writeError(w, f.Status, nil, protocol.Errorf(protocol.CodeInvalidRequest, "%s", msg))
	t.observe(r.Method, f.Status)
}

// observe reports a request answered before it reached a handler.
func (t *Transport) observe(method string, status int) {
	if t.opts.Observe != nil {
		t.opts.Observe(method, status)
	}
}
