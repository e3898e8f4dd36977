package statesync

import (
	"fmt"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// TestDecorator_Idempotent checks the seed's "Cache-Control Decoration"
// examples and that decorating an already-decorated description does not
// append the tag twice.
func TestDecorator_Idempotent(t *testing.T) {
	e := mustEngine(t, Config{
		Defaults: Defaults{CacheControl: NoStore},
		Policies: []Policy{{Match: "countries.*", CacheControl: Immutable}},
	})
	tests := []struct {
		tool, in, want string
	}{
		// The seed's two examples.
		{"sprints.manage", "Manage workspace sprints.", "Manage workspace sprints. [Cache-Control: no-store]"},
		{"countries.list", "List country codes.", "List country codes. [Cache-Control: immutable]"},
		// Already decorated: unchanged.
		{"sprints.manage", "Manage workspace sprints. [Cache-Control: no-store]", "Manage workspace sprints. [Cache-Control: no-store]"},
		{"sprints.manage", "Manage. [Cache-Control: no-store]\n", "Manage. [Cache-Control: no-store]\n"},
		// Decorated with the other directive: replaced, not contradicted.
		{"countries.list", "List. [Cache-Control: no-store]", "List. [Cache-Control: immutable]"},
		{"sprints.manage", "Manage.[Cache-Control: immutable]", "Manage. [Cache-Control: no-store]"},
		// Edge cases.
		{"sprints.manage", "", "[Cache-Control: no-store]"},
		{"sprints.manage", "Trailing space.  ", "Trailing space. [Cache-Control: no-store]"},
		{"sprints.manage", "Mentions [Cache-Control: no-store] inside.", "Mentions [Cache-Control: no-store] inside. [Cache-Control: no-store]"},
	}
	for _, tt := range tests {
		got := e.DecorateDescription(tt.tool, tt.in)
		if got != tt.want {
			t.Errorf("DecorateDescription(%q, %q) = %q, want %q", tt.tool, tt.in, got, tt.want)
		}
		for range 3 {
			if again := e.DecorateDescription(tt.tool, got); again != got {
				t.Errorf("decorating %q again = %q", got, again)
			}
		}
	}
}

// TestDecorator_CachedPerTool checks the seed's "tools/list decoration: O(1)
// per tool (cached)": a repeated decoration is a cache hit that allocates
// nothing, and a changed description is decorated afresh, not served
// stale.
func TestDecorator_CachedPerTool(t *testing.T) {
	e := mustEngine(t, Config{Defaults: Defaults{CacheControl: NoStore}})
	desc := "Manage workspace sprints."
	first := e.DecorateDescription("sprints.manage", desc)
	if n := testing.AllocsPerRun(100, func() { e.DecorateDescription("sprints.manage", desc) }); n != 0 {
		t.Errorf("cached DecorateDescription allocates %v times", n)
	}
	if got := e.DecorateDescription("sprints.manage", desc); got != first {
		t.Errorf("cached = %q, want %q", got, first)
	}
	if got := e.DecorateDescription("sprints.manage", "New text."); got != "New text. [Cache-Control: no-store]" {
		t.Errorf("after a description change = %q", got)
	}
	if s := e.Stats(); s.CachedDescriptions != 1 {
		t.Errorf("CachedDescriptions = %d, want 1", s.CachedDescriptions)
	}
	for i := range MaxCachedResolutions + 1 {
		e.DecorateDescription(fmt.Sprintf("t%d", i), "d")
	}
	if s := e.Stats(); s.CachedDescriptions > MaxCachedResolutions || s.DescriptionEvictions == 0 {
		t.Errorf("description cache not bounded: %+v", s)
	}
}

// TestDecorator_Tools checks tools/list decoration (seed, "decorateTools"):
// only descriptions change, and the caller's slice is never modified.
func TestDecorator_Tools(t *testing.T) {
	e := mustEngine(t, Config{Policies: []Policy{{Match: "countries.*", CacheControl: Immutable}}})
	tools := []protocol.Tool{
		{Name: "sprints.list", Description: "List sprints.", InputSchema: []byte(`{"type":"object"}`)},
		{Name: "countries.list", Title: "Countries", Description: "List country codes.", InputSchema: []byte(`{"type":"object"}`)},
	}
	out := e.DecorateTools(tools)
	if tools[1].Description != "List country codes." {
		t.Errorf("DecorateTools modified its input: %q", tools[1].Description)
	}
	if out[0].Description != "List sprints." || out[1].Description != "List country codes. [Cache-Control: immutable]" ||
		out[1].Name != "countries.list" || out[1].Title != "Countries" || string(out[1].InputSchema) != `{"type":"object"}` {
		t.Errorf("DecorateTools = %+v", out)
	}
	undecorated := tools[:1]
	if got := e.DecorateTools(undecorated); &got[0] != &undecorated[0] {
		t.Error("DecorateTools copied a slice it did not change")
	}
}
