package requeststate

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	keyA = bytes.Repeat([]byte{'a'}, 32)
	keyB = bytes.Repeat([]byte{'b'}, 48)
)

// clock is a test's controlled time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func binding() Binding {
	return Binding{Principal: "key:agent-1", Tenant: "team-a", Method: "tools/call", Params: sha256.Sum256([]byte(`{"name":"deploy"}`))}
}

func TestSealOpen(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	s, err := New(c.now, keyA)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"step":2,"upstream":"secret-state"}`)
	tok, err := s.Seal(binding(), payload, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tok, "secret") || bytes.Contains(mustRaw(t, tok), []byte("secret")) {
		t.Fatal("the payload can be read in the token")
	}
	got, err := s.Open(binding(), tok)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("Open = %q, %v", got, err)
	}

	other := func(f func(*Binding)) Binding { b := binding(); f(&b); return b }
	refusals := []struct {
		name  string
		b     Binding
		token string
		want  error
	}{
		{"another principal", other(func(b *Binding) { b.Principal = "key:agent-2" }), tok, ErrForeign},
		{"another tenant", other(func(b *Binding) { b.Tenant = "team-b" }), tok, ErrForeign},
		{"another method", other(func(b *Binding) { b.Method = "prompts/get" }), tok, ErrForeign},
		{"other parameters", other(func(b *Binding) { b.Params[0] ^= 1 }), tok, ErrForeign},
		{"fields shifted between principal and tenant", Binding{Principal: "key:agent-1t", Tenant: "eam-a", Method: "tools/call", Params: binding().Params}, tok, ErrForeign},
		{"not ours", binding(), "hello", ErrMalformed},
		{"not base64", binding(), "v1.***", ErrMalformed},
		{"truncated", binding(), tok[:20], ErrMalformed},
		{"another spelling (line breaks the decoder skips)", binding(), tok[:10] + "\r\n" + tok[10:], ErrMalformed},
		{"padded", binding(), tok + "==", ErrMalformed},
		{"too large", binding(), "v1." + strings.Repeat("A", MaxTokenBytes), ErrMalformed},
	}
	for _, r := range refusals {
		if _, err := s.Open(r.b, r.token); !errors.Is(err, r.want) {
			t.Errorf("%s: Open = %v, want %v", r.name, err, r.want)
		}
	}

	// Every single-bit change of the token is refused.
	raw := mustRaw(t, tok)
	for i := range raw {
		for bit := range 8 {
			flipped := append([]byte(nil), raw...)
			flipped[i] ^= 1 << bit
			if _, err := s.Open(binding(), "v1."+base64.RawURLEncoding.EncodeToString(flipped)); err == nil {
				t.Fatalf("byte %d bit %d flipped: opened", i, bit)
			}
		}
	}

	c.t = c.t.Add(time.Minute)
	if _, err := s.Open(binding(), tok); !errors.Is(err, ErrExpired) {
		t.Fatalf("after its TTL: Open = %v, want ErrExpired", err)
	}
}

// A key is rotated by sealing with the new one while the old one still
// opens; a replica without the old key refuses what it sealed.
func TestRotation(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	before, _ := New(c.now, keyA)
	tok, err := before.Seal(binding(), []byte("x"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rotated, _ := New(c.now, keyB, keyA)
	if got, err := rotated.Open(binding(), tok); err != nil || string(got) != "x" {
		t.Fatalf("rotated Open = %q, %v", got, err)
	}
	fresh, _ := rotated.Seal(binding(), []byte("y"), time.Minute)
	if _, err := before.Open(binding(), fresh); !errors.Is(err, ErrForeign) {
		t.Fatalf("the old key opened the new key's token: %v", err)
	}
	after, _ := New(c.now, keyB)
	if _, err := after.Open(binding(), tok); !errors.Is(err, ErrForeign) {
		t.Fatalf("a retired key's token opened: %v", err)
	}
}

func TestNewRefusesShortKeys(t *testing.T) {
	if _, err := New(time.Now, keyA[:31]); err == nil {
		t.Fatal("a 31-byte key was taken")
	}
	if _, err := New(time.Now, keyA, []byte("short")); err == nil {
		t.Fatal("a short old key was taken")
	}
}

func mustRaw(t *testing.T, tok string) []byte {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, prefix))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// FuzzOpen: no token a client makes up opens, and none panics.
func FuzzOpen(f *testing.F) {
	s, _ := New(func() time.Time { return time.Unix(1_800_000_000, 0) }, keyA)
	s.nonce = bytes.NewReader(make([]byte, 12)) // the same token in every fuzzing process
	tok, _ := s.Seal(binding(), []byte("p"), time.Hour)
	f.Add(tok)
	f.Add("v1.")
	f.Add("v1.AAAA")
	f.Fuzz(func(t *testing.T, token string) {
		got, err := s.Open(binding(), token)
		if err == nil && token != tok {
			t.Fatalf("made-up token %q opened to %q", token, got)
		}
	})
}

// A token Seal returns is one Open can take: a payload whose token would
// be longer than MaxTokenBytes is refused when sealed, not handed to a
// client whose every retry would then be refused (a round it could never
// finish; basic/patterns/mrtr). The largest payload that fits opens.
func TestSealRefusesTokensOpenRefuses(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	s, err := New(c.now, keyA)
	if err != nil {
		t.Fatal(err)
	}
	over := bytes.Repeat([]byte{'x'}, MaxTokenBytes*3/4)
	if tok, err := s.Seal(binding(), over, time.Minute); err == nil {
		_, oerr := s.Open(binding(), tok)
		t.Fatalf("sealed a %d-byte token (open: %v)", len(tok), oerr)
	}
	fits := bytes.Repeat([]byte{'x'}, MaxPayloadBytes)
	tok, err := s.Seal(binding(), fits, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Open(binding(), tok); err != nil || !bytes.Equal(got, fits) {
		t.Fatalf("the largest payload (%d bytes, token %d) did not open: %v", len(fits), len(tok), err)
	}
	if _, err := s.Seal(binding(), append(fits, 'x'), time.Minute); err == nil {
		t.Fatal("a payload one byte over MaxPayloadBytes was sealed")
	}
}
