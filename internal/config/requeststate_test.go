package config

import (
	"strings"
	"testing"
)

// The request-state keys come from the environment, as a Secret gives
// them; a key too short is refused without the error showing it.
func TestRequestStateKeys(t *testing.T) {
	long, old := strings.Repeat("k", 32), strings.Repeat("o", 40)
	env := map[string]string{EnvRequestStateKey: long, EnvRequestStatePreviousKeys: old + ", " + old}
	cfg, err := Load(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RequestState.Key != long || len(cfg.RequestState.PreviousKeys) != 2 || cfg.RequestState.TTL().Minutes() != 10 {
		t.Errorf("requestState %d-byte key, %d previous, ttl %v", len(cfg.RequestState.Key), len(cfg.RequestState.PreviousKeys), cfg.RequestState.TTL())
	}
	for _, tc := range []struct {
		name string
		set  func(*RequestState)
		key  string
	}{
		{"short key", func(r *RequestState) { r.Key = "short-secret-value" }, "requestState.key"},
		{"short previous key", func(r *RequestState) { r.Key, r.PreviousKeys = long, []string{"short-secret-value"} }, "requestState.previousKeys[0]"},
		{"previous without current", func(r *RequestState) { r.PreviousKeys = []string{long} }, "requestState.previousKeys"},
		{"ttl", func(r *RequestState) { r.TTLMs = 10 }, "requestState.ttlMs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.set(&c.RequestState)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.key)
			}
			if strings.Contains(err.Error(), "short-secret-value") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}
