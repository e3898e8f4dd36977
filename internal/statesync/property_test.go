package statesync

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// refMatch is the obvious recursive definition of the seed's glob
// semantics ("*" exactly one segment, "**" zero or more), exponential in
// the worst case and so only for short inputs.
func refMatch(pattern, name []string) bool {
	if len(pattern) == 0 {
		return len(name) == 0
	}
	switch pattern[0] {
	case anySegments:
		return refMatch(pattern[1:], name) || len(name) > 0 && refMatch(pattern, name[1:])
	case anySegment:
		return len(name) > 0 && refMatch(pattern[1:], name[1:])
	}
	return len(name) > 0 && name[0] == pattern[0] && refMatch(pattern[1:], name[1:])
}

func genPattern(maxSegs int) *rapid.Generator[[]string] {
	return rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", anySegment, anySegments}), 1, maxSegs)
}

func genName(maxSegs int) *rapid.Generator[[]string] {
	return rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "c"}), 1, maxSegs)
}

// TestGlob_MatchesReference compares MatchGlob with refMatch on random
// short patterns and names, well within MaxIterations (at most 8·8 segment
// pairs), where the bound must never change an answer.
func TestGlob_MatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPattern(8).Draw(t, "pattern")
		n := genName(8).Draw(t, "name")
		pattern, name := strings.Join(p, "."), strings.Join(n, ".")
		if got, want := MatchGlob(pattern, name), refMatch(p, n); got != want {
			t.Fatalf("MatchGlob(%q, %q) = %v, reference %v", pattern, name, got, want)
		}
	})
}

// TestPolicy_ResolveMatchesLinearScan: Resolve, cached or not, is the first
// policy in declaration order whose pattern matches, else the defaults
// (seed, "First-Match-Wins", "Defaults Fallback").
func TestPolicy_ResolveMatchesLinearScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		patterns := rapid.SliceOfN(genPattern(4), 0, 6).Draw(t, "patterns")
		cfg := Config{Defaults: Defaults{CacheControl: rapid.SampledFrom([]Directive{"", NoStore, Immutable}).Draw(t, "default")}}
		for _, p := range patterns {
			cfg.Policies = append(cfg.Policies, Policy{Match: strings.Join(p, "."), CacheControl: Immutable})
		}
		e, err := NewEngine(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			n := genName(5).Draw(t, "name")
			want := -1
			for i, p := range patterns {
				if refMatch(p, n) {
					want = i
					break
				}
			}
			for range 2 {
				r := e.Resolve(strings.Join(n, "."))
				switch {
				case want >= 0 && (r == nil || r.PolicyIndex() != want):
					t.Fatalf("Resolve(%q) = %+v, want policy %d", n, r, want)
				case want < 0 && cfg.Defaults.CacheControl == "" && r != nil:
					t.Fatalf("Resolve(%q) = %+v, want nil", n, r)
				case want < 0 && cfg.Defaults.CacheControl != "" && (r.PolicyIndex() != -1 || r.CacheControl() != cfg.Defaults.CacheControl):
					t.Fatalf("Resolve(%q) = %+v, want the defaults", n, r)
				}
			}
		}
	})
}

// names returns every name of 1..maxLen segments over alphabet.
func names(alphabet []string, maxLen int) [][]string {
	var out, level [][]string
	level = [][]string{nil}
	for range maxLen {
		var next [][]string
		for _, prefix := range level {
			for _, s := range alphabet {
				next = append(next, append(slices.Clip(prefix), s))
			}
		}
		out = append(out, next...)
		level = next
	}
	return out
}

// TestOverlap_MatchesEnumeration checks DetectOverlaps' static analysis
// against enumeration on random short patterns over literals a and b. The
// names use a, b and a fresh z; any counterexample to containment can use
// z for b's wildcards and at most len(a) segments per "**" of b, so
// 9 segments suffice for patterns of up to 3.
func TestOverlap_MatchesEnumeration(t *testing.T) {
	all := names([]string{"a", "b", "z"}, 9)
	rapid.Check(t, func(t *rapid.T) {
		a := genPattern(3).Draw(t, "a")
		b := genPattern(3).Draw(t, "b")
		var inBoth []string
		aCoversB, bCoversA := true, true
		for _, n := range all {
			ma, mb := refMatch(a, n), refMatch(b, n)
			if ma && mb && inBoth == nil {
				inBoth = n
			}
			aCoversB = aCoversB && (!mb || ma)
			bCoversA = bCoversA && (!ma || mb)
		}
		ex, ok := intersection(a, b)
		if ok != (inBoth != nil) {
			t.Fatalf("intersection(%q, %q) = %v, enumeration found %q", a, b, ok, inBoth)
		}
		if ok && (!refMatch(a, strings.Split(ex, ".")) || !refMatch(b, strings.Split(ex, "."))) {
			t.Fatalf("intersection example %q does not match both", ex)
		}
		if got := contains(a, b, maxContainmentStates); got != aCoversB {
			t.Fatalf("contains(%q, %q) = %v, enumeration %v", a, b, got, aCoversB)
		}

		got := DetectOverlaps([]Policy{{Match: strings.Join(a, "."), CacheControl: NoStore}, {Match: strings.Join(b, "."), CacheControl: NoStore}})
		var want []OverlapKind
		switch {
		case inBoth == nil:
		case aCoversB:
			want = []OverlapKind{Shadowed}
		case !bCoversA:
			want = []OverlapKind{PartialOverlap}
		}
		var kinds []OverlapKind
		for _, o := range got {
			kinds = append(kinds, o.Kind)
		}
		if !slices.Equal(kinds, want) {
			t.Fatalf("DetectOverlaps(%q, %q) = %+v, want kinds %v", a, b, got, want)
		}
	})
}
