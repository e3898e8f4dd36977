package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
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
	a := &Authenticator{mode: cfg.Mode, log: opts.Log, cancel: func() {}}
	if opts.Keys != nil {
		now := opts.Now
		if now == nil {
			now = time.Now
		}
		a.stored = newKeyCache(opts.Keys, now)
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

// Authenticate returns the principal of r, or the failure to answer with.
// A failure is logged at debug level with its reason; the credential
// never is.
func (a *Authenticator) Authenticate(r *http.Request) (Principal, *Failure) {
	p, f := a.authenticate(r)
	if f != nil {
		f.realm, f.metadata, f.scope = Realm, a.metadata, a.scope
		a.log.Debug().Int("status", f.Status).Str("error", f.Code).Str("reason", f.Description).
			Str("remote", r.RemoteAddr).Msg("request not authenticated")
	}
	return p, f
}

func (a *Authenticator) authenticate(r *http.Request) (Principal, *Failure) {
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
		return a.apiKey(r.Context(), token)
	}
	return a.oauth.verify(r.Context(), token)
}

// apiKey finds the key whose hash token has. Every configured key is
// compared, in constant time, so the time taken says nothing about which
// keys exist or how close a guess came; then the keys created through the
// admin API are looked up by the hash (an index lookup of a SHA-256
// leaks nothing about the secret).
func (a *Authenticator) apiKey(ctx context.Context, token string) (Principal, *Failure) {
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
	k, ok, err := a.stored.get(ctx, hex.EncodeToString(d[:]))
	switch {
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
