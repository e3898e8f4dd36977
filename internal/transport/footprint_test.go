package transport

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// discardSink is an sseSink that keeps nothing of what is written.
type discardSink struct{ goneC chan struct{} }

func (discardSink) write([]byte) error      { return nil }
func (s discardSink) gone() <-chan struct{} { return s.goneC }
func (discardSink) finish()                 {}

// An idle subscriber is what a replica holds 10,000 of (BENCHMARKS.md,
// "10,000 subscribers on one replica"): a client session that made its
// requests and has a GET stream open, whose writer has sent an update
// and waits. What it keeps on the heap (stacks aside) is measured here:
// no request's bookkeeping outlives the request, and no write buffer
// outlives its write.
func TestIdleSubscriberFootprint(t *testing.T) {
	h := newHarness(t)
	// The first round's goroutines are new; the runtime keeps them for
	// the goroutines of the second, whose heap is the figure.
	idleSubscribers(t, h)
	perStream := idleSubscribers(t, h)
	t.Logf("%.0f bytes of heap per idle subscriber", perStream)
	if perStream > 2800 {
		t.Errorf("%.0f bytes of heap per idle subscriber, want at most 2,800", perStream)
	}
}

// idleSubscribers returns the heap that each of 1,000 idle subscribers
// holds, and ends them.
func idleSubscribers(t *testing.T, h *harness) float64 {
	const n = 1000
	sink := discardSink{goneC: make(chan struct{})}
	defer func() {
		close(sink.goneC)
		testutil.Eventually(t, 5*time.Second, "the streams ended", func() bool { return h.tr.openStreams.Load() == 0 })
	}()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	all := make([]*ClientSession, n)
	for i := range all {
		s := NewClientSession(context.Background(), strconv.Itoa(i), SessionInit{EventLogSize: 64, Tenant: "t", index: h.tr.subs}, time.Now())
		defer s.Terminate()
		// initialize and resources/subscribe, as the transport runs them
		for id := range 2 {
			rid := protocol.ID(strconv.Itoa(id))
			if err := s.begin(rid, context.Background(), func(error) {}); err != nil {
				t.Fatal(err)
			}
			s.end(rid)
		}
		if err := s.Subscribe("memory://t/fan"); err != nil {
			t.Fatal(err)
		}
		c, cursor := s.standalone.attach(-1)
		go h.tr.serveStream(sink, s.standalone, c, cursor, false)
		all[i] = s
	}
	if got, err := h.tr.fanout.ResourceUpdated("t", "memory://t/fan"); err != nil || got != n {
		t.Fatalf("delivered to %d (%v), want %d", got, err, n)
	}
	for _, s := range all {
		testutil.Eventually(t, time.Second, "the update flushed", func() bool { _, flushed := s.standalone.Position(); return flushed >= 1 })
	}
	// Twice: a sync.Pool keeps what it holds through one collection.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
}
