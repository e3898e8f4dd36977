package statesync

import (
	"strings"
	"testing"
)

// FuzzMatchGlob checks the seed's "Bounded iteration" on arbitrary input:
// MatchGlob never panics and always terminates, and where the reference is
// affordable (few "**", few segments) it agrees with it.
func FuzzMatchGlob(f *testing.F) {
	for _, seed := range [][2]string{
		{"sprints.get", "sprints.get"},
		{"sprints.*", "sprints.tasks.get"},
		{"sprints.**", "sprints"},
		{"**", "anything.at.all"},
		{"*.get", "tasks.get"},
		{"**.get", "a.b.c.get"},
		{"**.**.**.x", "a.a.a.a.a.a.a.a.a.a.a.a"},
		{"", ""},
		{"a.", "a."},
		{"..", "."},
		{"***", "a"},
		{"a b", "a b"},
		{"é.*", "é.x"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		got := MatchGlob(pattern, name)
		if patternProblem(pattern) != "" || !wellFormedName(name) {
			if got {
				t.Fatalf("MatchGlob(%q, %q) = true for malformed input", pattern, name)
			}
			return
		}
		p, n := strings.Split(pattern, "."), strings.Split(name, ".")
		// Within these sizes the match takes well under MaxIterations steps
		// and the reference is cheap.
		if len(p) <= 12 && len(n) <= 12 && strings.Count(pattern, anySegments) <= 4 {
			if want := refMatch(p, n); got != want {
				t.Fatalf("MatchGlob(%q, %q) = %v, reference %v", pattern, name, got, want)
			}
		}
	})
}

// FuzzDetectOverlaps checks that the overlap analysis never panics and
// never claims too much: a Shadowed pair really is contained (on the fuzzed
// name), and an Example really matches both patterns.
func FuzzDetectOverlaps(f *testing.F) {
	for _, seed := range [][3]string{
		{"sprints.*", "sprints.update", "sprints.update"},
		{"**.a.*", "**.a.*.*", "a.a.x"},
		{"a.**", "a.*.**", "a.b"},
		{"*.**", "**", "x"},
		{"**.**.*", "*.**.**", "a.b.c"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, a, b, name string) {
		got := DetectOverlaps([]Policy{{Match: a, CacheControl: NoStore}, {Match: b, CacheControl: NoStore}})
		if len(got) > 1 {
			t.Fatalf("two policies gave %d warnings", len(got))
		}
		if len(got) == 0 {
			return
		}
		o := got[0]
		if !MatchGlob(a, o.Example) || !MatchGlob(b, o.Example) {
			t.Fatalf("DetectOverlaps(%q, %q): example %q does not match both", a, b, o.Example)
		}
		if o.Kind == Shadowed && wellFormedName(name) && strings.Count(name, ".") < 12 &&
			MatchGlob(b, name) && !MatchGlob(a, name) {
			t.Fatalf("DetectOverlaps: %q shadows %q, but only the latter matches %q", a, b, name)
		}
	})
}
