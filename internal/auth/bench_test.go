package auth

import (
	"fmt"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/auth/authtest"
)

// BenchmarkAuthenticate measures what authentication adds to every
// request: an API key (SHA-256 and constant-time compares), an OAuth
// token seen before (the verified-token cache), and one seen for the
// first time (an RS256 signature verification).
func BenchmarkAuthenticate(b *testing.B) {
	is := authtest.NewIssuer(b, "k1")
	oauth, err := New(oauthConfig(is.JWKSURL()), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(oauth.Close)
	keys := Default()
	keys.Mode = ModeAPIKey
	for i := range 10 {
		keys.APIKeys = append(keys.APIKeys, APIKey{ID: fmt.Sprintf("k%d", i), SHA256: fmt.Sprintf("%064x", i+1)})
	}
	keys.APIKeys[9].SHA256 = "a7e9e5e1b1a7f0b5a6f5c0e1d0c1e8e49b3b3dcd0b0f9d1b7e1f2b9a2c3d4e5f" // any hash
	apikey, err := New(keys, Options{})
	if err != nil {
		b.Fatal(err)
	}
	token := is.Token(claims(), "k1")
	b.Run("apikey", func(b *testing.B) {
		r := request("Bearer some-api-key-that-is-not-configured")
		b.ReportAllocs()
		for b.Loop() {
			_, _ = apikey.Authenticate(r)
		}
	})
	b.Run("oauth-cached", func(b *testing.B) {
		r := request("Bearer " + token)
		if _, f := oauth.Authenticate(r); f != nil {
			b.Fatal(f)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, f := oauth.Authenticate(r); f != nil {
				b.Fatal(f)
			}
		}
	})
	b.Run("oauth-first-sight", func(b *testing.B) {
		tokens := make([]string, 256)
		for i := range tokens {
			c := claims()
			c["jti"] = fmt.Sprint(i)
			tokens[i] = is.Token(c, "k1")
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			oauth.oauth.verified = newTokenCache(oauth.oauth.verified.now) // no hits
			if _, f := oauth.Authenticate(request("Bearer " + tokens[i%len(tokens)])); f != nil {
				b.Fatal(f)
			}
			i++
		}
	})
}
