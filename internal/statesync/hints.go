package statesync

import (
	"strings"
	"time"
)

// Hints derive the cache hints of results of the 2026-07-28 era
// (server/utilities/caching: ttlMs, cacheScope) from the policies, so
// that a client's cache and the model's directives say the same thing
// (docs/adr/0053-cache-hints-from-policies.md). The directives speak to
// the model in the tools' descriptions; the hints speak to the client,
// which keeps a resource it read only as long as the policies say the
// data behind it cannot change.
//
// A resource belongs to the domain its URI's scheme names (memory://team/plan
// to memory.*, the tools that read and write it): it may be kept for
// immutableTTL when the policies make every tool of the domain immutable
// and no policy invalidates any of them; otherwise not at all (ttlMs 0).
type Hints struct {
	engine       *Engine
	immutableTTL time.Duration
	// domains caches each domain's verdict: a resources/read costs one
	// map read after the first of its scheme. Bounded: schemes come from
	// clients.
	domains boundedCache[bool]
}

// NewHints derives hints from e's policies; immutableTTL is how long the
// data of an immutable domain may be kept.
func NewHints(e *Engine, immutableTTL time.Duration) *Hints {
	return &Hints{engine: e, immutableTTL: max(immutableTTL, 0)}
}

// ResourceTTL is how long the result of a resources/read of uri may be
// kept. Every resource here holds a tenant's data, so its scope is
// private whatever the TTL (the caller's to say).
func (h *Hints) ResourceTTL(uri string) time.Duration {
	if h == nil || h.engine == nil {
		return 0
	}
	scheme, _, ok := strings.Cut(uri, "://")
	if !ok || !wellFormedName(scheme) || strings.Contains(scheme, ".") {
		return 0
	}
	immutable, cached := h.domains.get(scheme)
	if !cached {
		immutable = h.engine.domainImmutable(scheme)
		h.domains.put(scheme, immutable)
	}
	if immutable {
		return h.immutableTTL
	}
	return 0
}

// domainImmutable reports whether every tool of domain (domain.*) is
// immutable under first-match-wins and no policy invalidates any of them.
// It is decided from the patterns, never by enumerating names, and
// errs towards false: a domain that some policy only partly covers
// counts as mutable unless every policy that could decide one of its
// tools says immutable.
func (e *Engine) domainImmutable(domain string) bool {
	tools := []string{domain, anySegment}
	for _, p := range e.policies {
		for _, inv := range p.invalidates {
			if _, hit := intersection(strings.Split(inv, "."), tools); hit {
				return false
			}
		}
	}
	for _, p := range e.policies {
		pat := strings.Split(p.match, ".")
		if _, hit := intersection(pat, tools); !hit {
			continue
		}
		if p.cacheControl != Immutable {
			return false
		}
		if contains(pat, tools, maxContainmentStates) {
			return true // it decides every tool of the domain
		}
	}
	return e.defaults != nil && e.defaults.cacheControl == Immutable
}
