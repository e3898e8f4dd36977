package config

import (
	"fmt"
	"time"
)

// Environment variables of the requestState section. The keys are
// secrets: a Kubernetes Deployment takes them from a Secret, and they are
// never printed.
const (
	EnvRequestStateKey          = "MCP_REQUEST_STATE_KEY"
	EnvRequestStatePreviousKeys = "MCP_REQUEST_STATE_PREVIOUS_KEYS" // comma-separated
)

// requestStateMinKeyBytes is requeststate.MinKeyBytes: 256 bits.
const requestStateMinKeyBytes = 32

// RequestState configures the sealed state of multi-round-trip requests
// (basic/patterns/mrtr; docs/adr/0045-sealed-request-state.md).
type RequestState struct {
	// Key seals the state every replica must be able to open: the same
	// secret on all of them, at least 32 bytes. Empty: a key drawn at
	// start-up, so a round continues only on the replica that began it.
	Key string `yaml:"key"`
	// PreviousKeys still open state sealed before a rotation.
	PreviousKeys []string `yaml:"previousKeys"`
	// TTLMs is how long a round's state stays valid; see [RequestState.TTL].
	TTLMs int64 `yaml:"ttlMs"`
}

// TTL is TTLMs as a duration.
func (r RequestState) TTL() time.Duration { return time.Duration(r.TTLMs) * time.Millisecond }

func (c Config) validateRequestState(bad func(key string, value any, want string), intRange func(key string, v, lo, hi int64, want string)) {
	r := c.RequestState
	want := fmt.Sprintf("at least %d bytes (a secret of 256 bits)", requestStateMinKeyBytes)
	if r.Key != "" && len(r.Key) < requestStateMinKeyBytes {
		bad("requestState.key", fmt.Sprintf("%d bytes", len(r.Key)), want)
	}
	for i, k := range r.PreviousKeys {
		if len(k) < requestStateMinKeyBytes {
			bad(fmt.Sprintf("requestState.previousKeys[%d]", i), fmt.Sprintf("%d bytes", len(k)), want)
		}
	}
	if len(r.PreviousKeys) > 0 && r.Key == "" {
		bad("requestState.previousKeys", fmt.Sprintf("%d keys", len(r.PreviousKeys)), "set only with requestState.key, which seals")
	}
	intRange("requestState.ttlMs", r.TTLMs, 1000, 86_400_000, "1000 to 86400000 milliseconds")
}
