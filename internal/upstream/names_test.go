package upstream

import (
	"regexp"
	"testing"
)

func TestCanonicalName(t *testing.T) {
	cases := map[string]string{
		"search":     "s.search",
		"a.b":        "s.a.b",
		"get-item_2": "s.get-item_2",
		"a b":        "s.a_b_",
		"a/b":        "s.a_b_",
		"a..b":       "s.a._.b_",
		".x":         "s._.x_",
		"":           "s.__",
		"naïve":      "s.na_ve_",
		"a.":         "s.a._",
	}
	seen := map[string]string{}
	valid := regexp.MustCompile(`^s\.[A-Za-z0-9_.-]+$`)
	for in, prefix := range cases {
		got := CanonicalName("s", in)
		if !valid.MatchString(got) || len(got) < len(prefix) || got[:len(prefix)] != prefix {
			t.Errorf("CanonicalName(s, %q) = %q, want prefix %q", in, got, prefix)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%q and %q both map to %q", in, other, got)
		}
		seen[got] = in
		if got != CanonicalName("s", in) {
			t.Errorf("not stable for %q", in)
		}
	}
	if got := CanonicalName("s", "a b"); len(got) != len("s.a_b_")+8 {
		t.Errorf("suffix: %q", got)
	}
}
