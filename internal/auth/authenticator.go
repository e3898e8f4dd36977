package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Realm is the realm of every challenge.
const Realm = "mcp-runtime"

// Options are what New needs besides the Config.
type Options struct {
	Log zerolog.Logger
	// HTTPClient fetches the JWKS; nil means a client with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock for token times; nil means time.Now.
	Now func() time.Time
	// Keys, in apikey mode, finds the keys created through the admin
	// API; nil means only the configured keys authenticate.
	Keys KeyLookup
	// Failures, if set, is the budget of failed authentications per
	// remote address (rateLimits.unauthenticated); see Authenticate.
	Failures FailureBudget
	// ClientAddress, if set, is the address Failures charges for r (from
	// a trusted proxy's X-Forwarded-For); nil means r.RemoteAddr.
	ClientAddress func(r *http.Request) string
}

// FailureBudget limits failed authentications per remote address
// (package ratelimit implements it). remoteAddr is an http.Request's
// RemoteAddr.
type FailureBudget interface {
	// Spend spends one failure of remoteAddr's budget and returns zero,
	// or, when the budget is spent, how long until it allows one.
	Spend(remoteAddr string) time.Duration
	// Refund gives back one failure spent in advance.
	Refund(remoteAddr string)
}

// Stats are an Authenticator's counters.
type Stats struct {
	// KeyLookups counts the lookups of stored API keys that reached the
	// store; LookupsDeferred, those of unknown keys refused by the lookup
	// budget (503).
	KeyLookups, LookupsDeferred int64
	// AddressLimited counts requests refused because their address had
	// spent its budget of failed authentications (429).
	AddressLimited int64
}

// Authenticator answers who a request comes from, in the configured mode.
// It is safe for concurrent use.
type Authenticator struct {
	mode     string
	metadata string // the Protected Resource Metadata URL, oauth mode only
	scope    string // the scope challenges ask for
	keys     []apiKey
	stored   *keyCache // nil without Options.Keys
	oauth    *oauthVerifier
	failures FailureBudget // nil: no budget
	client   func(*http.Request) string
	limited  atomic.Int64 // Stats.AddressLimited
	cancel   context.CancelFunc
	log      zerolog.Logger
}

type apiKey struct {
	digest    [sha256.Size]byte
	principal Principal
}

// New builds the authenticator of cfg, which must be valid. In oauth mode
// it starts fetching the JWKS in the background, until Close; a JWKS that
// cannot be fetched at start-up is fetched again when a token needs it,
// so an issuer briefly down does not stop the server.
func New(cfg Config, opts Options) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Authenticator{mode: cfg.Mode, log: opts.Log, cancel: func() {}, failures: opts.Failures, client: opts.ClientAddress}
	if opts.Keys != nil {
		now := opts.Now
		if now == nil {
			now = time.Now
		}
		a.stored = newKeyCache(opts.Keys, cfg.APIKeyLookupsPerSecond, now)
	}
	for _, k := range cfg.APIKeys {
		var d [sha256.Size]byte
		if _, err := hex.Decode(d[:], []byte(strings.ToLower(k.SHA256))); err != nil {
			return nil, fmt.Errorf("auth.apiKeys %s: %w", k.ID, err)
		}
		t := k.Tenant
		if t == "" {
			t = Anonymous.Tenant
		}
		a.keys = append(a.keys, apiKey{digest: d, principal: Principal{
			ID: "apikey:" + k.ID, Tenant: t, Scopes: k.Scopes, Admin: k.Admin,
		}})
	}
	if cfg.Mode == ModeOAuth {
		ctx, cancel := context.WithCancel(context.Background())
		v, err := newOAuthVerifier(ctx, cfg, opts)
		if err != nil {
			cancel()
			return nil, err
		}
		a.oauth, a.cancel = v, cancel
		a.metadata = MetadataURL(cfg.Resource)
		a.scope = strings.Join(cfg.OAuth.RequiredScopes, " ")
	}
	return a, nil
}

// Close stops the background JWKS refresh.
func (a *Authenticator) Close() { a.cancel() }

// Stats returns the authenticator's counters.
func (a *Authenticator) Stats() Stats {
	s := Stats{AddressLimited: a.limited.Load()}
	if a.stored != nil {
		s.KeyLookups, s.LookupsDeferred = a.stored.lookups.Load(), a.stored.deferred.Load()
	}
	return s
}

// Authenticate returns the principal of r, or the failure to answer with.
// A failure is logged at debug level with its reason; the credential
// never is.
//
// Every 401 spends one of the remote address's budget of failures
// (Options.Failures); once it is spent, failures from the address are
// answered 429 with Retry-After. A credential whose check costs more
// than a comparison in memory — a stored key no lookup has found, an
// OAuth token not verified before — is charged before it is checked, and
// not checked at all when the budget is spent; if it turns out valid the
// charge is given back. So only failures count, yet concurrent requests
// cannot all slip past a nearly spent budget, and valid credentials
// checked in memory (configured keys, stored keys found before, tokens
// verified before) still work from an address over its budget: an honest
// client may share an address (a NAT, a proxy) with a flood of bad ones.
func (a *Authenticator) Authenticate(r *http.Request) (Principal, *Failure) {
	adm := admission{remote: r.RemoteAddr}
	if a.client != nil && a.failures != nil {
		adm.remote = a.client(r)
	}
	p, f := a.authenticate(r, &adm)
	if a.failures != nil {
		switch {
		case f != nil && f.Status == http.StatusUnauthorized:
			if !adm.charged {
				if wait := a.failures.Spend(adm.remote); wait > 0 {
					f = a.tooManyFailures(wait)
				}
			}
		case adm.charged:
			// Valid credentials, or ones that could not be checked
			// now (503): not a failure of the client's.
			a.failures.Refund(adm.remote)
		}
	}
	if f != nil {
		f.realm, f.metadata, f.scope = Realm, a.metadata, a.scope
		a.log.Debug().Int("status", f.Status).Str("error", f.Code).Str("reason", f.Description).
			Str("remote", adm.remote).Msg("request not authenticated")
	}
	return p, f
}

func (a *Authenticator) authenticate(r *http.Request, adm *admission) (Principal, *Failure) {
	if a.mode == ModeNone {
		return Anonymous, nil
	}
	token, f := BearerToken(r.Header.Values("Authorization"))
	if f != nil {
		return Principal{}, f
	}
	if token == "" {
		return Principal{}, &Failure{Status: http.StatusUnauthorized, Description: "this server requires a bearer token"}
	}
	if a.mode == ModeAPIKey {
		return a.apiKey(r.Context(), token, adm)
	}
	return a.oauth.verify(r.Context(), token, func() *Failure { return a.admit(adm) })
}

// admission is one request's standing with its address's budget of
// failures.
type admission struct {
	remote  string
	charged bool // a failure was spent in advance
}

// admit charges the request's address one failure before a costly check
// of its credential: nil if it may go ahead, the 429 to answer if the
// address has spent its budget.
func (a *Authenticator) admit(adm *admission) *Failure {
	if a.failures == nil {
		return nil
	}
	if wait := a.failures.Spend(adm.remote); wait > 0 {
		return a.tooManyFailures(wait)
	}
	adm.charged = true
	return nil
}

// tooManyFailures is the 429 of an address whose budget is spent.
func (a *Authenticator) tooManyFailures(wait time.Duration) *Failure {
	a.limited.Add(1)
	return &Failure{Status: http.StatusTooManyRequests, RetryAfter: wait,
		Description: "too many failed authentications from this address (rateLimits.unauthenticated); retry later"}
}

// apiKey finds the key whose hash token has. Every configured key is
// compared, in constant time, so the time taken says nothing about which
// keys exist or how close a guess came; then the keys created through the
// admin API are looked up by the hash (an index lookup of a SHA-256
// leaks nothing about the secret).
func (a *Authenticator) apiKey(ctx context.Context, token string, adm *admission) (Principal, *Failure) {
	d := sha256.Sum256([]byte(token))
	found := -1
	for i := range a.keys {
		if subtle.ConstantTimeCompare(d[:], a.keys[i].digest[:]) == 1 {
			found = i
		}
	}
	if found >= 0 {
		return a.keys[found].principal, nil
	}
	invalid := unauthorized(CodeInvalidToken, "the API key is not valid")
	if a.stored == nil {
		return Principal{}, invalid
	}
	k, ok, err := a.stored.get(ctx, hex.EncodeToString(d[:]), func() error {
		if f := a.admit(adm); f != nil {
			return f
		}
		return nil
	})
	var f *Failure
	var busy *lookupsBusy
	switch {
	case errors.As(err, &f):
		return Principal{}, f
	case errors.As(err, &busy):
		// Not a 401 either: the key may be valid.
		return Principal{}, &Failure{Status: http.StatusServiceUnavailable, RetryAfter: busy.retryAfter,
			Description: "too many API keys are being checked (auth.apiKeyLookupsPerSecond); retry shortly"}
	case err != nil:
		// Not a 401: the client's key may be fine, and a 401 would make
		// it drop it. The store's outage is logged where it happens.
		return Principal{}, &Failure{Status: http.StatusServiceUnavailable, Description: "the API key cannot be checked now; retry shortly"}
	case !ok:
		return Principal{}, invalid
	case k.Revoked:
		return Principal{}, unauthorized(CodeInvalidToken, "the API key was revoked")
	}
	// "apikey/": a key created through the admin API is never the same
	// principal as a configured key of the same id ("apikey:").
	return Principal{ID: "apikey/" + k.ID, Tenant: k.Tenant, Scopes: k.Scopes, Admin: k.Admin}, nil
}

// MetadataURL is the Protected Resource Metadata URL of resource (RFC
// 9728 §3.1): the well-known path inserted between the host and the
// resource's path.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + path
}
