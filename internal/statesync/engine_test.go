package statesync

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func mustEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	return e
}

// TestPolicy_FirstMatchWins checks the seed's "First-Match-Wins": policies
// are evaluated in declaration order and the first matching one wins.
func TestPolicy_FirstMatchWins(t *testing.T) {
	e := mustEngine(t, Config{Policies: []Policy{
		{Match: "sprints.get", CacheControl: Immutable},                        // 0: wins for sprints.get
		{Match: "sprints.*", CacheControl: NoStore},                            // 1: all other sprints.*
		{Match: "**.get", CacheControl: Immutable, Invalidates: []string{"x"}}, // 2
		{Match: "tasks.update", Invalidates: []string{"tasks.*", "sprints.*"}}, // 3
		{Match: "**", CacheControl: NoStore},                                   // 4: catch-all
	}})
	tests := []struct {
		tool        string
		index       int
		directive   Directive
		invalidates []string
	}{
		{"sprints.get", 0, Immutable, nil},
		{"sprints.list", 1, NoStore, nil},
		{"sprints.update", 1, NoStore, nil},
		{"tasks.get", 2, Immutable, []string{"x"}},
		{"a.b.c.get", 2, Immutable, []string{"x"}},
		{"tasks.update", 3, "", []string{"tasks.*", "sprints.*"}},
		{"anything.else", 4, NoStore, nil},
	}
	for _, tt := range tests {
		for range 2 { // uncached, then cached
			r := e.Resolve(tt.tool)
			if r == nil {
				t.Fatalf("Resolve(%q) = nil", tt.tool)
			}
			if r.PolicyIndex() != tt.index || r.CacheControl() != tt.directive || !slices.Equal(r.Invalidates(), tt.invalidates) {
				t.Errorf("Resolve(%q) = policy %d %q %q, want policy %d %q %q", tt.tool,
					r.PolicyIndex(), r.CacheControl(), r.Invalidates(), tt.index, tt.directive, tt.invalidates)
			}
		}
	}
	if got := e.Resolve("sprints.get").Match(); got != "sprints.get" {
		t.Errorf("Match() = %q", got)
	}
}

// TestPolicy_DefaultsFallback checks the seed's "Defaults Fallback": an
// unmatched tool gets defaults.cacheControl, and (this package's reading
// of "every tool gets no-store unless overridden") so does a matched policy
// that sets no directive of its own.
func TestPolicy_DefaultsFallback(t *testing.T) {
	e := mustEngine(t, seedQuickStart())
	tests := []struct {
		tool        string
		index       int
		directive   Directive
		invalidates []string
	}{
		{"countries.list", 4, Immutable, nil},
		{"sprints.list", -1, NoStore, nil},
		{"reports.generate", -1, NoStore, nil},
		{"sprints.update", 0, NoStore, []string{"sprints.*"}},
		{"tasks.update", 3, NoStore, []string{"tasks.*", "sprints.*"}},
		{"", -1, NoStore, nil},     // malformed names still get the defaults
		{"a..b", -1, NoStore, nil}, // (no policy can match them)
		{"countries.", -1, NoStore, nil},
	}
	for _, tt := range tests {
		r := e.Resolve(tt.tool)
		if r.PolicyIndex() != tt.index || r.CacheControl() != tt.directive || !slices.Equal(r.Invalidates(), tt.invalidates) {
			t.Errorf("Resolve(%q) = policy %d %q %q, want policy %d %q %q", tt.tool,
				r.PolicyIndex(), r.CacheControl(), r.Invalidates(), tt.index, tt.directive, tt.invalidates)
		}
	}
	if r := e.Resolve("sprints.list"); r.Match() != "" || r.HasInvalidates() {
		t.Errorf("defaults: Match %q HasInvalidates %v", r.Match(), r.HasInvalidates())
	}
}

// TestPolicy_NoDefaultsNoDecoration checks the seed's "If no defaults are
// configured, no decoration occurs for unmatched tools", and that a matched
// policy without a directive is not decorated either.
func TestPolicy_NoDefaultsNoDecoration(t *testing.T) {
	e := mustEngine(t, Config{Policies: []Policy{
		{Match: "countries.*", CacheControl: Immutable},
		{Match: "sprints.create", Invalidates: []string{"sprints.*"}},
	}})
	if r := e.Resolve("sprints.list"); r != nil {
		t.Errorf("Resolve(unmatched) = %+v, want nil", r)
	}
	for _, tool := range []string{"sprints.list", "sprints.create"} {
		if got := e.DecorateDescription(tool, "Manage sprints."); got != "Manage sprints." {
			t.Errorf("DecorateDescription(%q) = %q, want it unchanged", tool, got)
		}
	}
	if got := e.DecorateDescription("countries.list", "List country codes."); got != "List country codes. [Cache-Control: immutable]" {
		t.Errorf("DecorateDescription(countries.list) = %q", got)
	}
	// The getters accept the nil that means "no policy".
	var r *Resolved
	if r.CacheControl() != "" || r.Invalidates() != nil || r.HasInvalidates() || r.PolicyIndex() != -1 || r.Match() != "" {
		t.Error("nil *Resolved getters are not zero")
	}
}

// TestEngine_BoundedCache checks the seed's "Bounded cache: Policy cache is
// capped at 2048 entries" with "Full eviction on overflow", and that
// resolution stays correct across evictions.
func TestEngine_BoundedCache(t *testing.T) {
	e := mustEngine(t, Config{
		Defaults: Defaults{CacheControl: NoStore},
		Policies: []Policy{
			{Match: "*.get", CacheControl: Immutable},
			{Match: "*.update", Invalidates: []string{"a.*"}},
		},
	})
	const names = 3*MaxCachedResolutions + 7
	for round := range 2 {
		for i := range names {
			tool := fmt.Sprintf("t%d.get", i)
			if i%2 == 1 {
				tool = fmt.Sprintf("t%d.list", i)
			}
			want := Immutable
			if i%2 == 1 {
				want = NoStore
			}
			if got := e.Resolve(tool).CacheControl(); got != want {
				t.Fatalf("round %d: Resolve(%q) = %q, want %q", round, tool, got, want)
			}
			if n := e.Stats().CachedResolutions; n > MaxCachedResolutions {
				t.Fatalf("cache holds %d entries, more than %d", n, MaxCachedResolutions)
			}
		}
	}
	s := e.Stats()
	if s.ResolutionEvictions < 2 {
		t.Errorf("ResolutionEvictions = %d, want full evictions to have happened", s.ResolutionEvictions)
	}
	// A name already cached does not evict when the cache is full.
	full := s.CachedResolutions
	last := fmt.Sprintf("t%d.get", names-1)
	e.Resolve(last)
	if got := e.Stats(); got.CachedResolutions != full || got.ResolutionEvictions != s.ResolutionEvictions {
		t.Errorf("a cached hit changed the cache: %+v, was %+v", got, s)
	}
	// Over-long names resolve correctly and are not cached.
	long := strings.Repeat("x", maxCachedNameLen) + ".get"
	before := e.Stats().CachedResolutions
	if got := e.Resolve(long).CacheControl(); got != Immutable {
		t.Errorf("Resolve(long name) = %q", got)
	}
	if after := e.Stats().CachedResolutions; after != before {
		t.Errorf("a long name was cached: %d entries, was %d", after, before)
	}
}

// TestEngine_CacheKeyIsCopied: the protocol decoder hands out strings that
// view the request buffer; the caches outlive the request, so they must
// keep copies, not such views.
func TestEngine_CacheKeyIsCopied(t *testing.T) {
	e := mustEngine(t, Config{Policies: []Policy{{Match: "a.get", CacheControl: Immutable}}})
	buf := []byte("a.get")
	desc := []byte("Get a.")
	e.Resolve(unsafeView(buf))
	e.DecorateDescription(unsafeView(buf), unsafeView(desc))
	copy(buf, "b.put")
	copy(desc, "Put b.")
	var keys []string
	e.resolutions.m.Range(func(k, _ any) bool { keys = append(keys, k.(string)); return true })
	if !slices.Equal(keys, []string{"a.get"}) {
		t.Errorf("resolution cache keys changed with the request buffer: %q", keys)
	}
	e.decorations.m.Range(func(k, v any) bool {
		d := v.(decoration)
		if k.(string) != "a.get" || d.in != "Get a." || d.out != "Get a. [Cache-Control: immutable]" {
			t.Errorf("description cache changed with the request buffer: %q: %+v", k, d)
		}
		return true
	})
}

// TestResolved_Immutable checks the seed's "Immutable results": nothing a
// caller does to a returned slice, or to the configuration after
// NewEngine, changes later resolutions.
func TestResolved_Immutable(t *testing.T) {
	cfg := Config{Policies: []Policy{{Match: "tasks.update", Invalidates: []string{"tasks.*", "sprints.*"}}}}
	e := mustEngine(t, cfg)
	cfg.Policies[0].Invalidates[0] = "changed.*"
	cfg.Policies[0].Match = "other"

	got := e.Resolve("tasks.update").Invalidates()
	got[0] = "mutated"
	_ = append(got[:1], "appended")

	want := []string{"tasks.*", "sprints.*"}
	if again := e.Resolve("tasks.update").Invalidates(); !slices.Equal(again, want) {
		t.Errorf("Invalidates after mutation = %q, want %q", again, want)
	}
	l := NewLayer(e, func(ev InvalidationEvent) { ev.Patterns[0] = "observer" })
	ev := l.AfterCall("tasks.update", textResult("ok"))
	ev.Patterns[1] = "caller"
	if again := e.Resolve("tasks.update").Invalidates(); !slices.Equal(again, want) {
		t.Errorf("Invalidates after event mutation = %q, want %q", again, want)
	}
	res := textResult("ok")
	l.AfterCall("tasks.update", res)
	if got := res.Content[0].Text; got != "[System: Cache invalidated for tasks.*, sprints.* — caused by tasks.update]" {
		t.Errorf("block after mutations = %q", got)
	}
}

// TestEngine_Concurrent runs resolution, decoration and invalidation from
// many goroutines across cache evictions, for the race detector.
func TestEngine_Concurrent(t *testing.T) {
	e := mustEngine(t, seedQuickStart())
	l := NewLayer(e, func(InvalidationEvent) {})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2 * MaxCachedResolutions {
				tool := fmt.Sprintf("g%d.t%d", g, i%(MaxCachedResolutions/2))
				if e.Resolve(tool).CacheControl() != NoStore {
					t.Errorf("Resolve(%q) lost the default", tool)
					return
				}
				e.DecorateDescription(tool, "d")
				if ev := l.AfterCall("tasks.update", textResult("ok")); ev == nil {
					t.Error("AfterCall(tasks.update) = nil")
					return
				}
				_ = e.Stats()
			}
		})
	}
	wg.Wait()
	if got := l.Stats().Invalidations; got != 8*2*MaxCachedResolutions {
		t.Errorf("Invalidations = %d", got)
	}
}
