package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/auth/authtest"
	"github.com/mcp-runtime/mcp-runtime/internal/ratelimit"
)

// storedKeys is a KeyLookup over a map, counting its lookups, and
// those of keys it does not have.
type storedKeys struct {
	mu               sync.Mutex
	keys             map[string]StoredKey // by hex SHA-256
	lookups, unknown int
}

func (s *storedKeys) add(secret string, k StoredKey) { s.keys[hashOf(secret)] = k }

func (s *storedKeys) lookup(_ context.Context, hash string) (StoredKey, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups++
	k, ok := s.keys[hash]
	if !ok {
		s.unknown++
	}
	return k, ok, nil
}

func (s *storedKeys) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups
}

// from is a request with a bearer token (none if "") from remote.
func from(remote, token string) *http.Request {
	r := request()
	if token != "" {
		r = request("Bearer " + token)
	}
	r.RemoteAddr = remote
	return r
}

const (
	attacker = "192.0.2.66:4000"
	neighbor = "192.0.2.77:4000"
)

// A remote address that keeps failing spends its budget: its failures
// are then 429 with Retry-After, and an unknown key from it is not looked
// up. Valid credentials checked in memory still work from it (a
// configured key, a stored key found before, even once its cached answer
// expired), and another address has a budget of its own.
func TestFailureBudgetPerAddress(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	store := &storedKeys{keys: map[string]StoredKey{}}
	store.add("live", StoredKey{ID: "ci", Tenant: "team-c"})
	store.add("never-used", StoredKey{ID: "new", Tenant: "team-c"})
	cfg := Default()
	cfg.Mode = ModeAPIKey
	cfg.APIKeys = []APIKey{{ID: "configured", SHA256: hashOf("configured-key")}}
	a, err := New(cfg, Options{Now: clock, Keys: store.lookup,
		Failures: ratelimit.NewAddresses(ratelimit.Rate{PerSecond: 0.01, Burst: 3}, 0, clock)})
	if err != nil {
		t.Fatal(err)
	}
	if _, f := a.Authenticate(from(attacker, "live")); f != nil {
		t.Fatalf("stored key: %v", f)
	}
	for i := range 3 {
		_, f := a.Authenticate(from(attacker, fmt.Sprintf("made-up-%d", i)))
		if f == nil || f.Status != http.StatusUnauthorized {
			t.Fatalf("failure %d within the budget: %v, want 401", i, f)
		}
	}
	lookups := store.count()
	for _, tc := range []struct{ name, token string }{
		{"an unknown key", "made-up-4"},
		{"a key known not to exist", "made-up-0"},
		{"no key", ""},
		{"a valid stored key never looked up", "never-used"}, // the cost of sharing an address with a flood
	} {
		_, f := a.Authenticate(from(attacker, tc.token))
		if f == nil || f.Status != http.StatusTooManyRequests || f.Challenge() || f.RetryAfter <= 0 || f.RetryAfterSeconds() == "" {
			t.Errorf("%s once the budget is spent: %+v, want 429 with Retry-After", tc.name, f)
		}
	}
	if n := store.count() - lookups; n != 0 {
		t.Errorf("%d lookups for an address over its budget", n)
	}
	for _, token := range []string{"configured-key", "live"} {
		if _, f := a.Authenticate(from(attacker, token)); f != nil {
			t.Errorf("valid key %s from the address over its budget: %v", token, f)
		}
	}
	now = now.Add(keyCacheTTL) // the stored key's answer expires: looked up again, not refused
	if _, f := a.Authenticate(from(attacker, "live")); f != nil || store.count() != lookups+1 {
		t.Errorf("stored key found before, after its cached answer expired: %v, %d lookups", f, store.count()-lookups)
	}
	if _, f := a.Authenticate(from(neighbor, "made-up-9")); f == nil || f.Status != http.StatusUnauthorized {
		t.Errorf("another address: %v, want 401", f)
	}
	if s := a.Stats(); s.AddressLimited != 4 || s.KeyLookups != int64(store.count()) {
		t.Errorf("stats %+v", s)
	}
}

// However many addresses a flood of made-up keys comes from, they reach
// the store at auth.apiKeyLookupsPerSecond at most: beyond it a lookup is
// 503 with Retry-After (the key may be valid: never 401). A key found
// before is looked up again when its answer expires, budget or not.
func TestAPIKeyLookupBudget(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	store := &storedKeys{keys: map[string]StoredKey{}}
	store.add("live", StoredKey{ID: "ci", Tenant: "team-c"})
	cfg := Default()
	cfg.Mode = ModeAPIKey
	cfg.APIKeyLookupsPerSecond = 5
	a, err := New(cfg, Options{Now: clock, Keys: store.lookup})
	if err != nil {
		t.Fatal(err)
	}
	if _, f := a.Authenticate(from(neighbor, "live")); f != nil {
		t.Fatalf("stored key: %v", f)
	}
	statuses := map[int]int{}
	flood := func(round int) {
		for i := range 40 {
			_, f := a.Authenticate(from(fmt.Sprintf("198.51.100.%d:1", i), fmt.Sprintf("made-up-%d-%d", round, i)))
			statuses[f.Status]++
			if f.Status == http.StatusServiceUnavailable && (f.Challenge() || f.RetryAfter <= 0) {
				t.Fatalf("refused lookup: %+v, want 503 with Retry-After", f)
			}
		}
	}
	now = now.Add(keyCacheTTL - 100*time.Millisecond)
	start := clock()
	flood(0)
	if store.unknown != 5 {
		t.Fatalf("%d lookups of unknown keys at once, want the burst of 5", store.unknown)
	}
	now = now.Add(150 * time.Millisecond) // the live key's answer expired; not a token back yet
	if _, f := a.Authenticate(from(neighbor, "live")); f != nil || store.lookups-store.unknown != 2 {
		t.Fatalf("a key found before, with the lookup budget spent: %v", f)
	}
	for round := 1; round <= 3; round++ {
		flood(round)
		now = now.Add(time.Second)
	}
	elapsed := clock().Sub(start).Seconds()
	if bound := 5 + 5*elapsed; float64(store.unknown) > bound {
		t.Errorf("%d lookups of unknown keys in %.2fs, want at most %.0f", store.unknown, elapsed, bound)
	}
	if statuses[http.StatusUnauthorized] != store.unknown || statuses[http.StatusServiceUnavailable] != 160-store.unknown {
		t.Errorf("statuses %v for %d lookups", statuses, store.unknown)
	}
	if s := a.Stats(); s.LookupsDeferred != int64(160-store.unknown) || s.KeyLookups != int64(store.lookups) {
		t.Errorf("stats %+v", s)
	}
}

// An OAuth token not verified before is a cost too: once an address has
// spent its budget, such tokens from it are 429 without being verified,
// while a token verified before still works from it.
func TestFailureBudgetOAuth(t *testing.T) {
	is := authtest.NewIssuer(t, "k1")
	a, err := New(oauthConfig(is.JWKSURL()), Options{
		Failures: ratelimit.NewAddresses(ratelimit.Rate{PerSecond: 0.01, Burst: 2}, 0, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	good := is.Token(claims(), "k1")
	if _, f := a.Authenticate(from(attacker, good)); f != nil {
		t.Fatalf("valid token: %v", f)
	}
	forged := sign(t, claims(), "k1", authtest.NewKey(t))
	for i := range 2 {
		if _, f := a.Authenticate(from(attacker, forged)); f == nil || f.Status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %v, want 401", i, f)
		}
	}
	c := claims()
	c["sub"] = "agent-2"
	for name, token := range map[string]string{"forged": forged, "valid, never verified": is.Token(c, "k1")} {
		if _, f := a.Authenticate(from(attacker, token)); f == nil || f.Status != http.StatusTooManyRequests {
			t.Errorf("%s token once the budget is spent: %v, want 429", name, f)
		}
	}
	if _, f := a.Authenticate(from(attacker, good)); f != nil {
		t.Errorf("a token verified before: %v", f)
	}
}

// auth.oauth.requireAccessTokenType accepts only typ at+jwt (RFC 9068
// §2.1), with or without "application/", in any case; off, typ is not
// looked at.
func TestOAuthAccessTokenType(t *testing.T) {
	is := authtest.NewIssuer(t, "k1")
	cfg := oauthConfig(is.JWKSURL())
	cfg.OAuth.RequireAccessTokenType = true
	strict := newAuthenticator(t, cfg)
	lax := newAuthenticator(t, oauthConfig(is.JWKSURL()))
	for _, tc := range []struct {
		typ    string
		strict bool // accepted with the setting on
	}{
		{"at+jwt", true},
		{"AT+JWT", true},
		{"application/at+jwt", true},
		{"Application/At+Jwt", true},
		{"JWT", false},
		{"", false}, // no typ at all
		{"at+jwt2", false},
		{"application/jwt", false},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			c := claims()
			c["jti"] = tc.typ // a distinct token per case: verified tokens are cached
			tok := authtest.SignHeader(t, c, map[string]any{"kid": "k1", "typ": tc.typ}, is.Key("k1"))
			_, f := strict.Authenticate(request("Bearer " + tok))
			if tc.strict != (f == nil) {
				t.Errorf("with requireAccessTokenType: %v", f)
			}
			if f != nil && (f.Status != http.StatusUnauthorized || f.Description != "the token is not a JWT access token: its typ is not at+jwt (RFC 9068)") {
				t.Errorf("refusal %+v", f)
			}
			if _, f := lax.Authenticate(request("Bearer " + tok)); f != nil {
				t.Errorf("without requireAccessTokenType: %v", f)
			}
		})
	}
}

func hashOf(secret string) string {
	d := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(d[:])
}

// Behind a trusted proxy (Options.ClientAddress), each client the proxy
// forwards has a budget of its own: one spending its own does not make
// another's failures 429.
func TestFailureBudgetBehindAProxy(t *testing.T) {
	cfg := Default()
	cfg.Mode = ModeAPIKey
	proxies, err := ratelimit.ParseProxies([]string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, Options{
		Failures: ratelimit.NewAddresses(ratelimit.Rate{PerSecond: 0.01, Burst: 2}, 0, nil),
		ClientAddress: func(r *http.Request) string {
			return proxies.Client(r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	via := func(client string) *http.Request {
		r := from("10.0.0.5:3000", "made-up")
		r.Header.Set("X-Forwarded-For", client)
		return r
	}
	for i := range 3 {
		_, f := a.Authenticate(via("198.51.100.1"))
		if want := map[bool]int{true: http.StatusTooManyRequests, false: http.StatusUnauthorized}[i == 2]; f == nil || f.Status != want {
			t.Fatalf("attempt %d of the first client: %v, want %d", i, f, want)
		}
	}
	if _, f := a.Authenticate(via("198.51.100.2")); f == nil || f.Status != http.StatusUnauthorized {
		t.Fatalf("another client behind the proxy: %v, want its own 401", f)
	}
}
