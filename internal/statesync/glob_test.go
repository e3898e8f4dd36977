package statesync

import (
	"strings"
	"testing"
	"time"
)

// TestGlob_PatternTable checks every row of the seed's "Glob Pattern
// Matching" table, both columns, plus the matchGlob examples of its "API
// Reference" and the "zero or more" edge of "**".
func TestGlob_PatternTable(t *testing.T) {
	tests := []struct {
		pattern  string
		matches  []string
		excludes []string
	}{
		{"sprints.get", []string{"sprints.get"}, []string{"sprints.list", "sprints", "sprints.get.x", "x.sprints.get"}},
		{"sprints.*", []string{"sprints.get", "sprints.update"}, []string{"sprints.tasks.get", "sprints", "tasks.get"}},
		{"sprints.**", []string{"sprints.get", "sprints.tasks.get", "sprints"}, []string{"tasks.get", "sprintsx.get"}},
		{"**", []string{"sprints", "sprints.get", "a.b.c.d.e", "anything.at.all"}, nil},
		{"*.get", []string{"sprints.get", "tasks.get"}, []string{"sprints.tasks.get", "get", "sprints.update"}},
		{"**.get", []string{"sprints.get", "a.b.c.get", "get"}, []string{"sprints.update", "get.x"}},
		// The seed's API Reference examples.
		{"sprints.*", []string{"sprints.get"}, []string{"sprints.tasks.get"}},
		// Combinations the table implies.
		{"*", []string{"sprints"}, []string{"sprints.get"}},
		{"a.**.b", []string{"a.b", "a.x.b", "a.x.y.b"}, []string{"a", "b", "a.b.c"}},
		{"**.**", []string{"a", "a.b.c"}, nil},
		{"*.*.**", []string{"a.b", "a.b.c"}, []string{"a"}},
		{"**.a.*", []string{"a.b", "x.a.b", "a.a.a"}, []string{"a", "b.a", "a.b.c"}},
		{"Memory_v2.store-all", []string{"Memory_v2.store-all"}, []string{"memory_v2.store-all"}},
	}
	for _, tt := range tests {
		for _, name := range tt.matches {
			if !MatchGlob(tt.pattern, name) {
				t.Errorf("MatchGlob(%q, %q) = false, want true", tt.pattern, name)
			}
		}
		for _, name := range tt.excludes {
			if MatchGlob(tt.pattern, name) {
				t.Errorf("MatchGlob(%q, %q) = true, want false", tt.pattern, name)
			}
		}
	}
}

// TestGlob_Adversarial checks the seed's "Bounded iteration" (MAX_ITERATIONS
// = 1024 against adversarial pattern DoS) and malformed input.
func TestGlob_Adversarial(t *testing.T) {
	longName := func(n int, last string) string {
		return strings.Repeat("a.", n) + last
	}
	manyStars := strings.Repeat("**.", 100) + "x"
	tests := []struct {
		name, pattern, tool string
		want                bool
	}{
		{"stars against a long name without a match", manyStars, longName(2000, "a"), false},
		{"stars against a long name that would match", manyStars, longName(2000, "x"), false},
		{"alternating against a long name", strings.Repeat("**.a.", 50) + "b", longName(3000, "a"), false},
		{"a match beyond the bound is no match", "**.x", longName(MaxIterations+1, "x"), false},
		{"the same match within the bound", "**.x", longName(100, "x"), true},
		{"a trailing ** costs no steps", "a.**", longName(100000, "a"), true},
		{"a catch-all costs no steps", "**", longName(100000, "a"), true},
		{"a literal fails on the first segment", "b.**", longName(100000, "a"), false},

		{"empty pattern", "", "a", false},
		{"empty name", "**", "", false},
		{"both empty", "", "", false},
		{"trailing dot in name", "a.*", "a.", false},
		{"trailing dot in name against **", "**", "a.", false},
		{"leading dot in name", "**", ".a", false},
		{"empty segment in name", "**", "a..b", false},
		{"dot only", "**", ".", false},
		{"trailing dot in pattern", "a.", "a", false},
		{"leading dot in pattern", ".a", "a", false},
		{"empty segment in pattern", "a..b", "a.b", false},
		{"partial wildcard segment", "a*", "ab", false},
		{"triple star", "***", "a", false},
		{"space in pattern", "a b", "a b", false},
		{"pattern longer than MaxPatternLen", strings.Repeat("a", MaxPatternLen+1), strings.Repeat("a", MaxPatternLen+1), false},
		{"wildcards match unusual name characters", "*.**", "a b.c/d", true},
		{"literal * in a name is just a character", "a.*", "a.*", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			if got := MatchGlob(tt.pattern, tt.tool); got != tt.want {
				t.Errorf("MatchGlob = %v, want %v", got, tt.want)
			}
			// Generous: the bound makes each call microseconds; only a
			// missing bound (quadratic or exponential work) gets near this.
			if d := time.Since(start); d > 200*time.Millisecond {
				t.Errorf("MatchGlob took %v", d)
			}
		})
	}
}

// TestGlob_AllocationFree: matching runs on every resolution miss, and
// MatchGlob is public, so it must not allocate.
func TestGlob_AllocationFree(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { MatchGlob("**.tasks.*", "a.b.tasks.get") }); n != 0 {
		t.Errorf("MatchGlob allocates %v times per call", n)
	}
}
