package statesync

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// InvalidationEvent describes one causal invalidation (seed, "onInvalidation
// Callback").
type InvalidationEvent struct {
	CausedBy  string    // the tool whose successful call invalidated
	Patterns  []string  // the invalidated patterns, in declaration order
	Timestamp time.Time // when the invalidation happened
}

// Observer receives invalidation events. Observers run synchronously, in
// order, on the goroutine of the call, so they must be quick: one that has
// slow work to do (a network notification, say) should hand it off. Each
// observer gets its own copy of Patterns.
type Observer func(InvalidationEvent)

// StaleURI returns the URI of the notifications/resources/updated that
// announces pattern as stale (seed, "notificationSink").
func StaleURI(pattern string) string { return "stale://" + pattern }

// Layer applies causal invalidation to tools/call results and notifies the
// observers (seed, "StateSyncLayer", "CausalEngine", "ResponseDecorator").
// It is safe for concurrent use.
type Layer struct {
	engine    *Engine
	observers []Observer
	now       func() time.Time

	invalidations  atomic.Uint64
	observerPanics atomic.Uint64
}

// LayerStats are the layer's counters.
type LayerStats struct {
	Invalidations  uint64 // results that received an invalidation block
	ObserverPanics uint64 // observer calls that panicked and were recovered
}

// NewLayer returns a layer over e, which must not be nil, that notifies
// observers in the given order. Nil observers are ignored.
func NewLayer(e *Engine, observers ...Observer) *Layer {
	if e == nil {
		panic("statesync: NewLayer with a nil *Engine")
	}
	l := &Layer{engine: e, now: time.Now}
	for _, o := range observers {
		if o != nil {
			l.observers = append(l.observers, o)
		}
	}
	return l
}

// Engine returns the layer's engine, for decorating tools/list.
func (l *Layer) Engine() *Engine { return l.engine }

// AfterCall applies causal invalidation to the result of a call of tool
// (seed, "Causal Invalidation (tools/call)"). When the call succeeded and
// the tool's policy invalidates patterns, it sets res.Content to a new
// slice that starts with the block
//
//	[System: Cache invalidated for <patterns, ", "-separated> — caused by <tool>]
//
// followed by the original blocks in their order, notifies the observers
// and returns the event. Otherwise it changes nothing and returns nil.
//
// The block goes first so that the model reads it before the payload and
// it survives truncation of the payload. res.Content's backing array is
// never written to (the caller may share it), and StructuredContent is
// left alone: it must keep conforming to the tool's output schema.
func (l *Layer) AfterCall(tool string, res *protocol.CallToolResult) *InvalidationEvent {
	// Seed, "isError Guard": a failed mutation did not change state, so it
	// must not make the model re-read anything.
	if res == nil || res.IsError {
		return nil
	}
	r := l.engine.Resolve(tool)
	if !r.HasInvalidates() {
		return nil
	}
	content := make([]protocol.Content, 0, len(res.Content)+1)
	content = append(content, protocol.TextContent(
		"[System: Cache invalidated for "+r.joined+" — caused by "+tool+"]"))
	res.Content = append(content, res.Content...)
	l.invalidations.Add(1)

	// The event outlives the request, and tool may view its buffer.
	ev := &InvalidationEvent{CausedBy: strings.Clone(tool), Patterns: r.Invalidates(), Timestamp: l.now()}
	for _, o := range l.observers {
		e := *ev
		e.Patterns = slices.Clone(ev.Patterns)
		l.notify(o, e)
	}
	return ev
}

// notify calls one observer, recovering a panic (seed, "Observer exceptions
// are silently caught — a crashing observer never breaks the pipeline").
// Recovery is per observer, so the next ones still run; the panic is
// counted rather than silent, so it shows up in Stats.
func (l *Layer) notify(o Observer, ev InvalidationEvent) {
	defer func() {
		if recover() != nil {
			l.observerPanics.Add(1)
		}
	}()
	o(ev)
}

// Stats returns the layer's counters.
func (l *Layer) Stats() LayerStats {
	return LayerStats{Invalidations: l.invalidations.Load(), ObserverPanics: l.observerPanics.Load()}
}
