package statesync

import (
	"strings"
	"testing"
	"time"
)

// TestOverlap_Warnings checks the seed's "Policy Overlap Detection": full
// shadowing (the seed's own example) with both indexes, partial overlaps
// with an example name, and silence for the intended specific-before-general
// order.
func TestOverlap_Warnings(t *testing.T) {
	type want struct {
		shadowing, shadowed int
		kind                OverlapKind
		example             string
	}
	tests := []struct {
		name     string
		patterns []string
		want     []want
	}{
		{"the seed's example", []string{"sprints.*", "sprints.update"},
			[]want{{0, 1, Shadowed, "sprints.update"}}},
		{"specific before general is intended", []string{"sprints.get", "sprints.*", "**"}, nil},
		{"identical patterns", []string{"a.b", "a.b"}, []want{{0, 1, Shadowed, "a.b"}}},
		{"catch-all first shadows everything", []string{"**", "a", "b.*"},
			[]want{{0, 1, Shadowed, "a"}, {0, 2, Shadowed, "b.x"}}},
		{"** covers * chains", []string{"sprints.**", "sprints.*.*"}, []want{{0, 1, Shadowed, "sprints.x.x"}}},
		{"zero segments count", []string{"a.**", "a"}, []want{{0, 1, Shadowed, "a"}}},
		{"one or more after zero or more", []string{"a.**", "a.*.**"}, []want{{0, 1, Shadowed, "a.x"}}},
		{"one or more before zero or more is intended", []string{"a.*.**", "a.**"}, nil},
		{"names are never empty", []string{"*.**", "**"}, []want{{0, 1, Shadowed, "x"}}},
		{"partial overlap", []string{"sprints.*", "*.get"}, []want{{0, 1, PartialOverlap, "sprints.get"}}},
		{"partial overlap through **", []string{"**.get", "sprints.**"}, []want{{0, 1, PartialOverlap, "sprints.get"}}},
		{"disjoint literals", []string{"sprints.*", "tasks.*", "*.*.*"}, nil},
		{"disjoint lengths", []string{"*", "*.*"}, nil},
		{"first shadower only; dead policies shadow nothing",
			[]string{"a.*", "a.b", "a.**", "a.b"},
			[]want{{0, 1, Shadowed, "a.b"}, {0, 3, Shadowed, "a.b"}}},
		{"a dead policy is not a shadower", []string{"a.**", "a.*", "*.b"},
			[]want{{0, 1, Shadowed, "a.x"}, {0, 2, PartialOverlap, "a.b"}}},
		{"not shadowed by a union", []string{"a.b", "a.c", "a.*"}, nil},
		{"needs a middle segment", []string{"**.a.**.b.**", "x.a.y.b.z"}, []want{{0, 1, Shadowed, "x.a.y.b.z"}}},
		{"subset order matters", []string{"**.a.*", "**.a.*.*"}, []want{{0, 1, PartialOverlap, "a.a.x"}}},
		{"invalid patterns are skipped", []string{"a..b", "", "a.b", "a.b"}, []want{{2, 3, Shadowed, "a.b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var policies []Policy
			for _, p := range tt.patterns {
				policies = append(policies, Policy{Match: p, CacheControl: NoStore})
			}
			got := DetectOverlaps(policies)
			if len(got) != len(tt.want) {
				t.Fatalf("DetectOverlaps = %+v, want %+v", got, tt.want)
			}
			for k, w := range tt.want {
				g := got[k]
				if g.ShadowingIndex != w.shadowing || g.ShadowedIndex != w.shadowed || g.Kind != w.kind || g.Example != w.example {
					t.Errorf("overlap %d = %+v, want %+v", k, g, w)
				}
				if !MatchGlob(tt.patterns[g.ShadowingIndex], g.Example) || !MatchGlob(tt.patterns[g.ShadowedIndex], g.Example) {
					t.Errorf("example %q does not match both patterns", g.Example)
				}
			}
		})
	}
}

// TestOverlap_Messages checks the wording a server logs at startup: both
// indexes and patterns, and what to do.
func TestOverlap_Messages(t *testing.T) {
	got := DetectOverlaps([]Policy{
		{Match: "sprints.*", CacheControl: NoStore},
		{Match: "sprints.update", Invalidates: []string{"sprints.*"}},
		{Match: "*.get", CacheControl: Immutable},
	})
	want := []string{
		`policy [1] "sprints.update" never applies: policy [0] "sprints.*" comes first and matches every tool it matches (first match wins); move [1] before [0] or remove it`,
		`policies [0] "sprints.*" and [2] "*.get" both match some tools, e.g. "sprints.get"; [0] wins for them (first match wins)`,
	}
	if len(got) != len(want) {
		t.Fatalf("DetectOverlaps = %+v", got)
	}
	for i := range want {
		if got[i].Message != want[i] {
			t.Errorf("message %d:\n got %s\nwant %s", i, got[i].Message, want[i])
		}
	}
	if Shadowed.String() != "shadowed" || PartialOverlap.String() != "partial" || OverlapKind(9).String() != "OverlapKind(9)" {
		t.Error("OverlapKind.String")
	}
}

// TestOverlap_Bounded: the containment search gives up past its state
// budget rather than run away, answering "not contained", so the pair is
// reported at worst as a partial overlap, which is still true; and only
// the first MaxPolicies policies are analysed.
func TestOverlap_Bounded(t *testing.T) {
	// Does every name with an "a" 8 segments from the end ... have one 8
	// from the end? Trivially, but the search must track which of the last
	// 8 segments were "a": hundreds of subsets of the first pattern.
	a := strings.Split("**.a"+strings.Repeat(".*", 8), ".")
	b := strings.Split("**.a.**.a"+strings.Repeat(".*", 8), ".")
	if !contains(a, b, maxContainmentStates) {
		t.Fatal("contains = false within the budget")
	}
	if contains(a, b, 16) {
		t.Error("contains = true past a budget of 16 states")
	}

	start := time.Now()
	hard := "**.a" + strings.Repeat(".*", 60)
	got := DetectOverlaps([]Policy{
		{Match: hard, CacheControl: NoStore},
		{Match: strings.Repeat("**.a.", 20) + "**" + strings.Repeat(".*", 60), CacheControl: NoStore},
	})
	if len(got) != 1 {
		t.Errorf("DetectOverlaps(adversarial) = %+v, want one warning", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("DetectOverlaps(adversarial) took %v", d)
	}

	many := make([]Policy, MaxPolicies+500)
	for i := range many {
		many[i] = Policy{Match: "**", CacheControl: NoStore}
	}
	if got := DetectOverlaps(many); len(got) != MaxPolicies-1 {
		t.Errorf("DetectOverlaps(%d catch-alls) = %d warnings, want %d", len(many), len(got), MaxPolicies-1)
	}
}
