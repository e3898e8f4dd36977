package statesync

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Directive is a cache directive. The vocabulary is deliberately binary
// (seed, "CacheDirective" and "Why No max-age?"): an LLM has no clock, so
// time-based expiry would be meaningless to it.
type Directive string

// The two directives of the seed's "CacheDirective" table.
const (
	// NoStore: data may change at any time; do not trust cached values.
	NoStore Directive = "no-store"
	// Immutable: data never changes; cached values are always valid.
	Immutable Directive = "immutable"
)

// Valid reports whether d is one of the two directives.
func (d Directive) Valid() bool { return d == NoStore || d == Immutable }

// Policy is one rule of the configuration (seed, "SyncPolicy").
type Policy struct {
	// Match is the glob pattern of the tool names the policy applies to.
	Match string
	// CacheControl decorates matching tools' descriptions; "" means none,
	// in which case the defaults' directive applies.
	CacheControl Directive
	// Invalidates are the glob patterns of the tools whose cached data a
	// successful call of a matching tool invalidates.
	Invalidates []string
}

// Defaults apply when no policy matches a tool (seed, "Defaults Fallback").
type Defaults struct {
	// CacheControl is the directive of unmatched tools; "" means none, and
	// then unmatched tools are not decorated.
	CacheControl Directive
}

// Config is the State Sync configuration (seed, "StateSyncConfig").
// Policies are evaluated in declaration order; the first match wins.
type Config struct {
	Defaults Defaults
	Policies []Policy
}

// Enabled reports whether the configuration can have any effect. State Sync
// is opt-in (seed, "Zero Overhead"): a server should not install the layer
// at all for a configuration that is not enabled.
func (c Config) Enabled() bool {
	return len(c.Policies) > 0 || c.Defaults.CacheControl != ""
}

// Bounds of a configuration. The seed bounds the matcher and the cache
// ("Security"); these bound the rest, so that neither validation nor
// resolution of a hostile or generated configuration can run away.
const (
	MaxPolicies    = 1000 // policies per configuration
	MaxInvalidates = 64   // invalidates patterns per policy
	MaxPatternLen  = 256  // bytes per pattern, match or invalidates
)

// defaultsIndex is the PolicyError.Index of the defaults.
const defaultsIndex = -1

// PolicyError is one problem of a configuration. Config.Validate joins all
// of them with errors.Join; errors.As finds the first.
type PolicyError struct {
	// Index is the policy's index, -1 for the defaults. An error about the
	// number of policies has Index MaxPolicies, the first one too many.
	Index int
	// Field is the offending field: "match", "cacheControl",
	// "invalidates" or "invalidates[2]"; "" for the policy as a whole.
	Field string
	// Reason says what is wrong, in words.
	Reason string
}

// Error reads like "stateSync.policies[3].match: must not be empty", the
// path of the field as the configuration spells it, then the reason.
func (e *PolicyError) Error() string {
	var b strings.Builder
	if e.Index == defaultsIndex {
		b.WriteString("stateSync.defaults")
	} else {
		fmt.Fprintf(&b, "stateSync.policies[%d]", e.Index)
	}
	if e.Field != "" {
		b.WriteByte('.')
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Validate reports every problem of the configuration at once (seed,
// "Fail-fast validation: All policies and defaults are validated at
// construction time"), so that one deployment fixes them all. It returns
// nil or an errors.Join of *PolicyError.
func (c Config) Validate() error {
	var errs []error
	add := func(index int, field, reason string) {
		errs = append(errs, &PolicyError{Index: index, Field: field, Reason: reason})
	}
	if d := c.Defaults.CacheControl; d != "" && !d.Valid() {
		add(defaultsIndex, "cacheControl", directiveProblem(d))
	}
	policies := c.Policies
	if len(policies) > MaxPolicies {
		add(MaxPolicies, "", fmt.Sprintf("%d policies exceed the maximum of %d; those from here on are not validated",
			len(policies), MaxPolicies))
		policies = policies[:MaxPolicies]
	}
	for i, p := range policies {
		if r := patternProblem(p.Match); r != "" {
			add(i, "match", r)
		}
		if p.CacheControl != "" && !p.CacheControl.Valid() {
			add(i, "cacheControl", directiveProblem(p.CacheControl))
		}
		inv := p.Invalidates
		if len(inv) > MaxInvalidates {
			add(i, "invalidates", fmt.Sprintf("%d patterns exceed the maximum of %d; those from here on are not validated",
				len(inv), MaxInvalidates))
			inv = inv[:MaxInvalidates]
		}
		for k, pat := range inv {
			field := fmt.Sprintf("invalidates[%d]", k)
			if r := patternProblem(pat); r != "" {
				add(i, field, r)
			} else if first := slices.Index(inv[:k], pat); first >= 0 {
				// A repeat would only repeat itself in the invalidation
				// block and the events; it is a configuration slip.
				add(i, field, fmt.Sprintf("%q repeats invalidates[%d]", pat, first))
			}
		}
		if p.CacheControl == "" && len(p.Invalidates) == 0 {
			add(i, "", "has neither cacheControl nor invalidates, so it would change nothing; "+
				"give it a cacheControl or a pattern to invalidate, or remove it")
		}
	}
	return errors.Join(errs...)
}

func directiveProblem(d Directive) string {
	return fmt.Sprintf("%q is not %s or %s", truncate(string(d)), NoStore, Immutable)
}

// patternProblem returns why p is not a valid glob pattern, or "". A valid
// pattern is at most MaxPatternLen bytes of dot-separated segments, each
// "*", "**" or a literal [A-Za-z0-9_-]+ (seed, "Glob Pattern Matching"),
// with no empty segment and so no leading or trailing dot.
func patternProblem(p string) string {
	switch {
	case p == "":
		return "must not be empty"
	case len(p) > MaxPatternLen:
		return fmt.Sprintf("is %d bytes long, more than the maximum of %d", len(p), MaxPatternLen)
	case p[0] == '.' || p[len(p)-1] == '.':
		return fmt.Sprintf("%q must not start or end with a dot", p)
	}
	for i := 0; i <= len(p); {
		var seg string
		seg, i = segment(p, i)
		switch {
		case seg == "":
			return fmt.Sprintf("%q has an empty segment", p)
		case seg != anySegment && seg != anySegments && !validLiteral(seg):
			return fmt.Sprintf(`%q: segment %q must be "*", "**" or letters, digits, '_' and '-'`, p, seg)
		}
	}
	return ""
}

// truncate shortens s for an error message, so that a huge value in a
// configuration does not make a huge error.
func truncate(s string) string {
	if len(s) > MaxPatternLen {
		return s[:MaxPatternLen] + "..."
	}
	return s
}
