// Package admin serves the admin REST API for upstream MCP servers under
// /admin: list, create, change, delete, enable, disable and refresh the
// servers whose tools mcp-runtime federates, and run a discovery.
//
// The API can make the server fetch any URL it is given, so it is closed
// unless a bearer token is configured (MCP_ADMIN_TOKEN) or authentication
// can name admin principals (an admin API key, or an OAuth token with the
// admin scope), and it never shows
// a configured header value: those are credentials for the upstream. Errors
// are RFC 9457 problem details. openapi.yaml at the repository root
// documents every route; a test keeps the two in step.
package admin

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// Upstreams is what the admin API needs; *upstream.Manager implements it.
type Upstreams interface {
	List(ctx context.Context) ([]upstream.Status, error)
	Get(ctx context.Context, id string) (upstream.Status, error)
	Create(ctx context.Context, c upstream.Config) (upstream.Status, error)
	Update(ctx context.Context, id string, c upstream.Config) (upstream.Status, error)
	Delete(ctx context.Context, id string) error
	SetEnabled(ctx context.Context, id string, enabled bool) (upstream.Status, error)
	Refresh(ctx context.Context, id string) (upstream.Status, error)
	Discover(ctx context.Context, o upstream.DiscoverOptions) (upstream.Discovery, error)
	Tools() []upstream.Tool
}

// Options configure the API.
type Options struct {
	// Token is the bearer token the admin API requires. Empty disables the
	// API: every /admin route answers 403 with a problem saying to set
	// MCP_ADMIN_TOKEN (the API can register URLs the server will fetch, so it
	// is never open by default).
	Token string
	// Principals, when set, also admits a principal with Admin set: an
	// admin API key, or an OAuth token with the admin scope
	// (docs/adr/0019-authentication-and-principals.md). The token above
	// still works beside it.
	Principals Authenticator
	// Keys, when set, serves /admin/apikeys (apikey mode).
	Keys APIKeys
	Log  zerolog.Logger
}

// Authenticator decides who a request comes from (package auth).
type Authenticator interface {
	Authenticate(r *http.Request) (auth.Principal, *auth.Failure)
}

// API is the admin REST API; Mount adds it to a router.
type API struct {
	u   Upstreams
	log zerolog.Logger
	// Only the token's digest is kept: comparing digests of equal length
	// keeps the comparison constant-time whatever length the client
	// sends. hasToken: a token is configured (digest is meaningful).
	digest     [sha256.Size]byte
	hasToken   bool
	principals Authenticator
	keys       APIKeys
}

// New returns the admin API over u.
func New(u Upstreams, opts Options) *API {
	a := &API{u: u, log: opts.Log.With().Str("component", "admin").Logger(), principals: opts.Principals, keys: opts.Keys}
	if opts.Token != "" {
		a.hasToken = true
		a.digest = sha256.Sum256([]byte(opts.Token))
	}
	return a
}

// Mount adds every admin route to r, under /admin. Authentication runs
// before routing, so that a client without the token learns nothing about
// which routes and methods exist.
func (a *API) Mount(r chi.Router) {
	r.Route("/admin", func(r chi.Router) {
		r.Use(a.recoverer, a.authenticate)
		r.NotFound(func(w http.ResponseWriter, r *http.Request) {
			a.problem(w, r, http.StatusNotFound, "no such admin route", "")
		})
		r.MethodNotAllowed(a.methodNotAllowed(r))

		r.Get("/upstreams", a.list)
		r.Post("/upstreams", a.create)
		// A static segment wins over {id} in chi, so an upstream whose id
		// is "discover" is still reachable by GET, PUT and DELETE.
		r.Post("/upstreams/discover", a.discover)
		r.Get("/upstreams/{id}", a.get)
		r.Put("/upstreams/{id}", a.update)
		r.Delete("/upstreams/{id}", a.delete)
		r.Post("/upstreams/{id}/enable", a.setEnabled(true))
		r.Post("/upstreams/{id}/disable", a.setEnabled(false))
		r.Post("/upstreams/{id}/refresh", a.refresh)
		if a.keys != nil {
			a.mountAPIKeys(r)
		}
	})
}

// methodNotAllowed answers 405 with the Allow header RFC 9110 §15.5.6
// requires. chi hands a custom 405 handler no method list, so the handler
// asks the admin router which methods match the path.
func (a *API) methodNotAllowed(routes chi.Routes) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if rctx := chi.RouteContext(r.Context()); rctx != nil && rctx.RoutePath != "" {
			path = rctx.RoutePath // the path below /admin
		}
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if routes.Match(chi.NewRouteContext(), m, path) {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		a.problem(w, r, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed here", "")
	}
}
