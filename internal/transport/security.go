package transport

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// originPolicy decides which Origin headers may call the server.
// basic/transports: "If the Origin header is present and invalid, servers
// MUST respond with HTTP 403 Forbidden."
type originPolicy struct {
	any     bool
	allowed map[string]bool // normalised scheme://host[:port]
}

func newOriginPolicy(list []string) (originPolicy, error) {
	p := originPolicy{allowed: map[string]bool{}}
	for _, o := range list {
		if o == "*" {
			p.any = true
			continue
		}
		n, ok := normaliseOrigin(o)
		if !ok {
			return p, fmt.Errorf("allowed origin %q: must be scheme://host[:port]", o)
		}
		p.allowed[n] = true
	}
	return p, nil
}

func normaliseOrigin(o string) (string, bool) {
	u, err := url.Parse(strings.TrimSuffix(o, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}

func (p originPolicy) allows(origin string) bool {
	if p.any {
		return true
	}
	n, ok := normaliseOrigin(origin)
	if !ok {
		return false
	}
	if len(p.allowed) > 0 {
		return p.allowed[n]
	}
	u, _ := url.Parse(n)
	return isLoopbackHost(u.Hostname())
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// checkOrigin enforces the Origin policy, and when the server listens on
// loopback only, that the Host header names a loopback host: a DNS-rebound
// name pointing at 127.0.0.1 must not reach a local server
// (basic/transports, "Security Warning").
func (t *Transport) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t.opts.LoopbackOnly {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !isLoopbackHost(strings.Trim(host, "[]")) {
				t.unwantedBody(w, r)
				writeError(w, http.StatusForbidden, nil, protocol.Errorf(protocol.CodeInvalidRequest, "forbidden: Host %q is not a loopback host", r.Host))
				return
			}
		}
		if origin := r.Header.Get("Origin"); origin != "" && !t.origins.allows(origin) {
			t.unwantedBody(w, r)
			writeError(w, http.StatusForbidden, nil, protocol.Errorf(protocol.CodeInvalidRequest, "forbidden: Origin %q is not allowed", origin))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// recoverer turns a panic outside a handler into a JSON-RPC -32603 for this
// request only; panics inside method handlers are caught closer to them.
func (t *Transport) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				t.log.Error().Str("panic", logging.Field(fmt.Sprint(v))).Str("path", logging.Field(r.URL.Path)).Msg("panic serving request")
				writeError(w, http.StatusInternalServerError, nil, protocol.Errorf(protocol.CodeInternalError, "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
