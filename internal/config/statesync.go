package config

import (
	"fmt"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/statesync"
)

// StateSync configures State Sync (DESIGN.md, "State Sync"): the
// cache-control directive each tool's description carries, and which
// mutations invalidate which tools' data.
type StateSync struct {
	// Enabled turns State Sync on. Off, no State Sync code runs on the
	// tools/list or tools/call path.
	Enabled  bool              `yaml:"enabled"`
	Defaults StateSyncDefaults `yaml:"defaults"`
	// Policies are matched in order against canonical tool names; the
	// first match wins. Setting them replaces the shipped list below.
	Policies []SyncPolicy `yaml:"policies"`
	// Hints are the cache hints the policies give results of the
	// 2026-07-28 era (docs/adr/0053-cache-hints-from-policies.md); apart
	// from cache.*, the server's own in-process cache.
	Hints StateSyncHints `yaml:"hints"`
}

// StateSyncHints configures the cache hints drawn from the policies.
type StateSyncHints struct {
	// ImmutableTTLMs is how long a client may keep a resource whose
	// domain the policies make immutable (default one hour; at most a
	// day, the longest a client keeps anything).
	ImmutableTTLMs int64 `yaml:"immutableTtlMs"`
}

// maxHintTTLMs is a day: the TypeScript client clamps ttlMs to it.
const maxHintTTLMs = 86_400_000

// ImmutableTTL is ImmutableTTLMs as a duration.
func (h StateSyncHints) ImmutableTTL() time.Duration { return ms(h.ImmutableTTLMs) }

// StateSyncDefaults apply to a tool no policy matches.
type StateSyncDefaults struct {
	CacheControl string `yaml:"cacheControl"`
}

// SyncPolicy is one State Sync rule.
type SyncPolicy struct {
	Match        string   `yaml:"match"`
	CacheControl string   `yaml:"cacheControl"`
	Invalidates  []string `yaml:"invalidates"`
}

// defaultStateSync ships policies for the built-in tools: each mutation
// invalidates its own domain, and every other tool — the reads of shared,
// changing state — is no-store, so a model re-reads rather than trusting
// what it saw before another agent wrote.
func defaultStateSync() StateSync {
	mutations := func(domain string, tools ...string) []SyncPolicy {
		out := make([]SyncPolicy, len(tools))
		for i, t := range tools {
			out[i] = SyncPolicy{Match: domain + "." + t, Invalidates: []string{domain + ".*"}}
		}
		return out
	}
	var policies []SyncPolicy
	policies = append(policies, mutations("memory", "store", "delete", "bulk_delete")...)
	policies = append(policies, mutations("session", "create", "join", "leave", "complete", "fail")...)
	policies = append(policies, mutations("agent", "register", "remove")...)
	// The echo tool returns its input: nothing about it goes stale.
	policies = append(policies, SyncPolicy{Match: "runtime.echo", CacheControl: "immutable"})
	return StateSync{Enabled: true, Defaults: StateSyncDefaults{CacheControl: "no-store"}, Policies: policies,
		Hints: StateSyncHints{ImmutableTTLMs: 3_600_000}}
}

// SyncConfig returns the section as internal/statesync takes it.
func (s StateSync) SyncConfig() statesync.Config {
	c := statesync.Config{Defaults: statesync.Defaults{CacheControl: statesync.Directive(s.Defaults.CacheControl)}}
	c.Policies = make([]statesync.Policy, len(s.Policies))
	for i, p := range s.Policies {
		c.Policies[i] = statesync.Policy{Match: p.Match, CacheControl: statesync.Directive(p.CacheControl),
			Invalidates: append([]string(nil), p.Invalidates...)}
	}
	return c
}

// validate checks the policies with State Sync's own rules (fail fast at
// start-up, naming stateSync.policies[i]); a disabled section is not
// checked, since it is not used.
func (s StateSync) validate() error {
	if !s.Enabled {
		return nil
	}
	if s.Hints.ImmutableTTLMs < 0 || s.Hints.ImmutableTTLMs > maxHintTTLMs {
		return fmt.Errorf("stateSync.hints.immutableTtlMs must be between 0 and %d (a day), got %d", maxHintTTLMs, s.Hints.ImmutableTTLMs)
	}
	return s.SyncConfig().Validate()
}
