package statesync

import (
	"fmt"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// benchConfig is the seed's "Mixed Static and Dynamic" configuration, plus
// enough filler policies that an uncached resolution would be visible.
func benchConfig() Config {
	cfg := seedMixed()
	for i := range 50 {
		cfg.Policies = append(cfg.Policies, Policy{Match: fmt.Sprintf("domain%d.**", i), CacheControl: NoStore})
	}
	return cfg
}

// TestResolve_CachedHitAllocFree pins the hot path (Resolve runs on every
// tools/call): a cached hit does not allocate.
func TestResolve_CachedHitAllocFree(t *testing.T) {
	e := mustEngine(t, benchConfig())
	for _, tool := range []string{"tasks.update", "unmatched.tool"} {
		e.Resolve(tool)
		if n := testing.AllocsPerRun(100, func() { e.Resolve(tool) }); n != 0 {
			t.Errorf("Resolve(%q) cached allocates %v times", tool, n)
		}
	}
	// AfterCall without invalidation is a cached Resolve and nothing else.
	l := NewLayer(e)
	content := []protocol.Content{protocol.TextContent("ok")}
	if n := testing.AllocsPerRun(100, func() {
		res := protocol.CallToolResult{Content: content}
		l.AfterCall("sprints.list", &res)
	}); n != 0 {
		t.Errorf("AfterCall without invalidation allocates %v times", n)
	}
}

func BenchmarkResolveCached(b *testing.B) {
	e := mustEngine(b, benchConfig())
	e.Resolve("tasks.update")
	b.ReportAllocs()
	for b.Loop() {
		e.Resolve("tasks.update")
	}
}

func BenchmarkResolveCachedParallel(b *testing.B) {
	e := mustEngine(b, benchConfig())
	e.Resolve("tasks.update")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e.Resolve("tasks.update")
		}
	})
}

func BenchmarkResolveUncached(b *testing.B) {
	e := mustEngine(b, benchConfig())
	b.ReportAllocs()
	for b.Loop() {
		// The 57th policy's pattern is "domain49.**", the last to match.
		e.resolve("domain49.items.get")
	}
}

func BenchmarkAfterCall(b *testing.B) {
	content := []protocol.Content{protocol.TextContent(`{"ok": true}`)}
	for _, bc := range []struct{ name, tool string }{
		{"invalidation", "tasks.update"},
		{"no-invalidation", "sprints.list"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := NewLayer(mustEngine(b, benchConfig()), func(InvalidationEvent) {})
			b.ReportAllocs()
			for b.Loop() {
				res := protocol.CallToolResult{Content: content}
				l.AfterCall(bc.tool, &res)
			}
		})
	}
}

func BenchmarkDecorateDescriptionCached(b *testing.B) {
	e := mustEngine(b, benchConfig())
	const desc = "Manage workspace sprints: list, create, update and delete them."
	e.DecorateDescription("sprints.manage", desc)
	b.ReportAllocs()
	for b.Loop() {
		e.DecorateDescription("sprints.manage", desc)
	}
}

func BenchmarkMatchGlob(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		MatchGlob("**.tasks.*", "workspace.projects.tasks.get")
	}
}

func BenchmarkDetectOverlaps(b *testing.B) {
	policies := benchConfig().Policies
	b.ReportAllocs()
	for b.Loop() {
		DetectOverlaps(policies)
	}
}
