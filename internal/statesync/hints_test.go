package statesync

import (
	"testing"
	"time"
)

// A resource's cache hint follows the policies of its scheme's domain:
// kept for the immutable TTL only when every tool of the domain is
// immutable and nothing invalidates any of them.
func TestHintsResourceTTL(t *testing.T) {
	const day = 24 * time.Hour
	shipped := Config{Defaults: Defaults{CacheControl: NoStore}, Policies: []Policy{
		{Match: "memory.store", Invalidates: []string{"memory.*"}},
		{Match: "countries.*", CacheControl: Immutable},
		{Match: "currencies.list", CacheControl: Immutable},
		{Match: "rates.*", CacheControl: Immutable},
		{Match: "prices.update", Invalidates: []string{"rates.*"}},
		{Match: "zones.get", CacheControl: Immutable},
		{Match: "zones.*", CacheControl: Immutable},
		{Match: "mixed.get", CacheControl: Immutable},
		{Match: "mixed.*", CacheControl: NoStore},
	}}
	allImmutable := Config{Defaults: Defaults{CacheControl: Immutable}}
	cases := []struct {
		name string
		cfg  Config
		uri  string
		want time.Duration
	}{
		{"a domain a mutation invalidates", shipped, "memory://team/plan", 0},
		{"an immutable domain", shipped, "countries://FR", day},
		{"one immutable tool of a no-store domain", shipped, "currencies://EUR", 0},
		{"immutable, but invalidated by another domain's tool", shipped, "rates://EUR", 0},
		{"specific then general, both immutable", shipped, "zones://eu", day},
		{"specific immutable, general no-store", shipped, "mixed://x", 0},
		{"a domain no policy names: the defaults", shipped, "other://x", 0},
		{"defaults immutable", allImmutable, "other://x", day},
		{"no scheme", shipped, "countries/FR", 0},
		{"a scheme that is no tool name", shipped, "coun tries://x", 0},
		{"a dotted scheme", shipped, "countries.x://y", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEngine(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			h := NewHints(e, day)
			for range 2 { // the second from the cache
				if got := h.ResourceTTL(tc.uri); got != tc.want {
					t.Fatalf("ResourceTTL(%q) = %v, want %v", tc.uri, got, tc.want)
				}
			}
		})
	}
	var off *Hints
	if got := off.ResourceTTL("countries://FR"); got != 0 {
		t.Fatalf("without State Sync: %v, want 0", got)
	}
}
