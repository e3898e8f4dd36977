package statesync

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// TestCausal_IsErrorGuard checks the seed's "isError Guard": a failed
// mutation emits no invalidation, neither block nor event, and leaves the
// result alone; so do tools without invalidates and a nil result.
func TestCausal_IsErrorGuard(t *testing.T) {
	var events []InvalidationEvent
	l := NewLayer(mustEngine(t, seedQuickStart()), func(ev InvalidationEvent) { events = append(events, ev) })
	tests := []struct {
		name string
		tool string
		res  *protocol.CallToolResult
	}{
		{"failed mutation", "tasks.update", protocol.ToolError("sprint not found")},
		{"failed mutation with structured content", "sprints.create",
			&protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent("no")}, StructuredContent: json.RawMessage(`{"ok":false}`), IsError: true}},
		{"read-only tool", "sprints.list", textResult(`{"sprints":[]}`)},
		{"static tool", "countries.list", textResult("[]")},
		{"nil result", "tasks.update", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []protocol.Content
			if tt.res != nil {
				before = tt.res.Content
			}
			if ev := l.AfterCall(tt.tool, tt.res); ev != nil {
				t.Errorf("AfterCall = %+v, want nil", ev)
			}
			if tt.res != nil && (len(tt.res.Content) != len(before) || (len(before) > 0 && &tt.res.Content[0] != &before[0])) {
				t.Errorf("AfterCall changed the content: %+v", tt.res.Content)
			}
		})
	}
	if len(events) != 0 || l.Stats().Invalidations != 0 {
		t.Errorf("observers saw %d events, Invalidations = %d; want none", len(events), l.Stats().Invalidations)
	}
	// The same call succeeding does invalidate.
	if ev := l.AfterCall("tasks.update", textResult("ok")); ev == nil || len(events) != 1 {
		t.Errorf("successful tasks.update: event %v, %d observed", ev, len(events))
	}
}

// TestCausal_ContentPrepended checks the seed's "Causal Invalidation": the
// [System: ...] block comes first, in the seed's exact wording, then the
// original blocks in their order; structuredContent is unchanged and the
// caller's slice is not written to.
func TestCausal_ContentPrepended(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	l := NewLayer(mustEngine(t, seedQuickStart()))
	l.now = func() time.Time { return now }

	backing := make([]protocol.Content, 2, 8) // spare capacity a careless append would use
	backing[0] = protocol.TextContent(`{"ok": true}`)
	backing[1] = protocol.ImageContent("aGk=", "image/png")
	original := slices.Clone(backing)
	structured := json.RawMessage(`{"ok":true}`)
	res := &protocol.CallToolResult{Content: backing, StructuredContent: structured}

	ev := l.AfterCall("tasks.update", res)

	want := InvalidationEvent{CausedBy: "tasks.update", Patterns: []string{"tasks.*", "sprints.*"}, Timestamp: now}
	if ev == nil || ev.CausedBy != want.CausedBy || !slices.Equal(ev.Patterns, want.Patterns) || !ev.Timestamp.Equal(now) {
		t.Fatalf("event = %+v, want %+v", ev, want)
	}
	if len(res.Content) != 3 {
		t.Fatalf("content has %d blocks, want 3", len(res.Content))
	}
	// The seed's example, with this configuration's pattern order.
	if got := res.Content[0]; got != protocol.TextContent("[System: Cache invalidated for tasks.*, sprints.* — caused by tasks.update]") {
		t.Errorf("block = %+v", got)
	}
	if res.Content[1] != original[0] || res.Content[2] != original[1] {
		t.Errorf("original blocks moved: %+v", res.Content[1:])
	}
	if string(res.StructuredContent) != `{"ok":true}` || &res.StructuredContent[0] != &structured[0] {
		t.Errorf("structuredContent changed: %s", res.StructuredContent)
	}
	if !slices.Equal(backing, original) || backing[:3][2] != (protocol.Content{}) {
		t.Errorf("the caller's backing array was written to: %+v", backing[:3])
	}
	if &res.Content[1] == &backing[0] {
		t.Error("the new content shares the caller's backing array")
	}

	// The wire form is the seed's JSON example.
	b, err := json.Marshal(&protocol.CallToolResult{Content: res.Content[:2]})
	if err != nil {
		t.Fatal(err)
	}
	const wire = `{"content":[{"type":"text","text":"[System: Cache invalidated for tasks.*, sprints.* — caused by tasks.update]"},{"type":"text","text":"{\"ok\": true}"}]}`
	if string(b) != wire {
		t.Errorf("wire form:\n got %s\nwant %s", b, wire)
	}

	// Empty and nil content still get the block.
	for _, content := range [][]protocol.Content{nil, {}} {
		res := &protocol.CallToolResult{Content: content}
		l.AfterCall("sprints.create", res)
		if len(res.Content) != 1 || res.Content[0].Text != "[System: Cache invalidated for sprints.* — caused by sprints.create]" {
			t.Errorf("content %v: got %+v", content, res.Content)
		}
	}
	if got := l.Stats().Invalidations; got != 3 {
		t.Errorf("Invalidations = %d, want 3", got)
	}
}

// TestObserver_Isolation checks the seed's "a crashing observer never
// breaks the pipeline": a panicking observer does not stop the result from
// being decorated nor the other observers from running, and the panic is
// counted. Each observer gets its own copy of the patterns.
func TestObserver_Isolation(t *testing.T) {
	var calls []string
	observers := []Observer{
		func(ev InvalidationEvent) {
			calls = append(calls, "first:"+ev.Patterns[0])
			ev.Patterns[0] = "scribbled"
		},
		func(InvalidationEvent) { panic("observer bug") },
		nil, // ignored
		func(ev InvalidationEvent) { _ = ev.Patterns[len(ev.Patterns)] }, // a runtime panic
		func(InvalidationEvent) { panic(nil) },
		func(ev InvalidationEvent) { calls = append(calls, "last:"+ev.Patterns[0]+":"+ev.CausedBy) },
	}
	l := NewLayer(mustEngine(t, seedQuickStart()), observers...)
	observers[0] = func(InvalidationEvent) { t.Error("NewLayer kept the caller's slice") }

	res := textResult("ok")
	ev := l.AfterCall("sprints.update", res)
	if ev == nil || len(res.Content) != 2 || res.Content[0].Text != "[System: Cache invalidated for sprints.* — caused by sprints.update]" {
		t.Fatalf("result not decorated: event %+v, content %+v", ev, res.Content)
	}
	if want := []string{"first:sprints.*", "last:sprints.*:sprints.update"}; !slices.Equal(calls, want) {
		t.Errorf("observer calls = %q, want %q", calls, want)
	}
	if !slices.Equal(ev.Patterns, []string{"sprints.*"}) {
		t.Errorf("an observer's write reached the returned event: %q", ev.Patterns)
	}
	if s := l.Stats(); s.ObserverPanics != 3 || s.Invalidations != 1 {
		t.Errorf("Stats = %+v, want 3 panics and 1 invalidation", s)
	}
}

// TestStaleURI checks the URI of the seed's "notificationSink"
// notifications/resources/updated, one per invalidated pattern.
func TestStaleURI(t *testing.T) {
	l := NewLayer(mustEngine(t, seedQuickStart()))
	ev := l.AfterCall("tasks.update", textResult("ok"))
	var uris []string
	for _, p := range ev.Patterns {
		uris = append(uris, StaleURI(p))
	}
	if want := []string{"stale://tasks.*", "stale://sprints.*"}; !slices.Equal(uris, want) {
		t.Errorf("URIs = %q, want %q", uris, want)
	}
}

func TestNewLayer_NilEngine(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewLayer(nil) did not panic")
		}
	}()
	NewLayer(nil)
}
