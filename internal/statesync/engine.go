package statesync

import (
	"slices"
	"strings"
)

// Resolved is the policy that applies to a tool (seed, "ResolvedPolicy").
// It is immutable, as the seed's are "Object.freeze()'d" ("Immutable
// results"): its fields are unexported and Invalidates returns a copy, so
// one Resolved can be shared by every caller and by the cache. The methods
// accept a nil *Resolved, which is what Resolve returns for "no policy".
type Resolved struct {
	index        int // policy index, -1 for the defaults
	match        string
	cacheControl Directive
	invalidates  []string // nil when empty; never handed out
	joined       string   // invalidates joined with ", ", for the block
}

// CacheControl returns the directive for the tool's description, "" for
// none.
func (r *Resolved) CacheControl() Directive {
	if r == nil {
		return ""
	}
	return r.cacheControl
}

// Invalidates returns a fresh copy of the patterns a successful call
// invalidates, nil for none.
func (r *Resolved) Invalidates() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.invalidates)
}

// HasInvalidates reports whether a successful call invalidates anything,
// without copying the patterns.
func (r *Resolved) HasInvalidates() bool { return r != nil && len(r.invalidates) > 0 }

// PolicyIndex returns the index of the policy that matched, or -1 when the
// defaults applied (or r is nil).
func (r *Resolved) PolicyIndex() int {
	if r == nil {
		return defaultsIndex
	}
	return r.index
}

// Match returns the pattern of the policy that matched, "" for the
// defaults.
func (r *Resolved) Match() string {
	if r == nil {
		return ""
	}
	return r.match
}

// Engine resolves tool names to policies (seed, "PolicyEngine"): first
// match wins in declaration order, then the defaults, else no policy. It is
// safe for concurrent use.
type Engine struct {
	policies []*Resolved // one per policy, in declaration order
	defaults *Resolved   // nil without a default directive

	// Resolve runs on every tools/call: a cached hit is one lock-free
	// map read. A nil value caches "no policy".
	resolutions boundedCache[*Resolved]
	decorations boundedCache[decoration]
}

// EngineStats are the engine's cache counters, for observability.
type EngineStats struct {
	CachedResolutions    int    // names in the resolution cache
	ResolutionEvictions  uint64 // full evictions of that cache
	CachedDescriptions   int    // names in the description cache
	DescriptionEvictions uint64 // full evictions of that cache
}

// NewEngine validates cfg (Config.Validate) and returns an engine for it.
// The engine keeps its own copy of the configuration, so changing cfg
// afterwards changes nothing.
func NewEngine(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	def := cfg.Defaults.CacheControl
	e := &Engine{
		policies: make([]*Resolved, len(cfg.Policies)),
	}
	if def != "" {
		e.defaults = &Resolved{index: defaultsIndex, cacheControl: def}
	}
	for i, p := range cfg.Policies {
		r := &Resolved{index: i, match: p.Match, cacheControl: p.CacheControl}
		if r.cacheControl == "" {
			// Seed, "Defaults Fallback": "Every tool gets no-store unless
			// overridden"; a policy that only declares invalidates does not
			// override the directive.
			r.cacheControl = def
		}
		if len(p.Invalidates) > 0 {
			r.invalidates = slices.Clone(p.Invalidates)
			r.joined = strings.Join(r.invalidates, ", ")
		}
		e.policies[i] = r
	}
	return e, nil
}

// Resolve returns the policy for tool: the first policy whose pattern
// matches it, in declaration order (seed, "First-Match-Wins"); else the
// defaults (seed, "Defaults Fallback"); else nil, and then the tool is
// neither decorated nor invalidates anything. It is O(P) on the first call
// for a name and O(1), allocation-free, afterwards (seed, "Performance
// Characteristics").
func (e *Engine) Resolve(tool string) *Resolved {
	if r, ok := e.resolutions.get(tool); ok {
		return r
	}
	r := e.resolve(tool)
	e.resolutions.put(tool, r)
	return r
}

func (e *Engine) resolve(tool string) *Resolved {
	if !wellFormedName(tool) {
		return e.defaults
	}
	for _, p := range e.policies {
		if matchValid(p.match, tool) {
			return p
		}
	}
	return e.defaults
}

// Stats returns the engine's cache counters.
func (e *Engine) Stats() EngineStats {
	var s EngineStats
	s.CachedResolutions, s.ResolutionEvictions = e.resolutions.stats()
	s.CachedDescriptions, s.DescriptionEvictions = e.decorations.stats()
	return s
}
