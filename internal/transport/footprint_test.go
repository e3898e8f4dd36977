package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// discardSink is a waitingSink that keeps nothing of what is written.
type discardSink struct{ goneC chan struct{} }

func (discardSink) write([]byte) error      { return nil }
func (s discardSink) gone() <-chan struct{} { return s.goneC }
func (discardSink) finish()                 {}

// An idle subscriber is what a replica holds 10,000 of (BENCHMARKS.md,
// "10,000 subscribers on one replica"): a client session that made its
// requests and has a GET stream open, whose writer has sent an update
// and waits. What it keeps is measured here, stacks aside: no request's
// bookkeeping outlives the request, no write buffer outlives its write,
// and a stream taken over from net/http waits on one goroutine, not a
// writer and a reader. The heap of a taken-over stream counts both ends
// of its TCP connection.
func TestIdleSubscriberFootprint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		takeOver bool
		maxHeap  float64
	}{
		{"served by its handler", false, 2800},
		{"taken over", true, 3600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No keep-alive comes during the count: its write would be a
			// goroutine more.
			h := newHarness(t, withOpts(func(o *Options) { o.KeepAliveInterval = time.Hour }))
			// The first round's goroutines are new; the runtime keeps
			// them for those of the second, whose figures count.
			idleSubscribers(t, h, tc.takeOver)
			heap, goroutines := idleSubscribers(t, h, tc.takeOver)
			t.Logf("%.0f bytes of heap and %.2f goroutines per idle subscriber", heap, goroutines)
			if heap > tc.maxHeap {
				t.Errorf("%.0f bytes of heap per idle subscriber, want at most %.0f", heap, tc.maxHeap)
			}
			if goroutines > 1.05 {
				t.Errorf("%.2f goroutines per idle subscriber, want 1", goroutines)
			}
		})
	}
}

// idleSubscribers returns the heap and the goroutines that each of 500
// idle subscribers holds, and ends them.
func idleSubscribers(t *testing.T, h *harness, takeOver bool) (heap, goroutines float64) {
	const n = 500
	// One listener for all the connections, not tcpPair: its cleanups
	// would stay on the heap this measures.
	var ln net.Listener
	if takeOver {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
	}
	gone := make(chan struct{})
	var clients []net.Conn
	defer func() {
		close(gone)
		for _, c := range clients {
			c.Close()
		}
		testutil.Eventually(t, 5*time.Second, "the streams ended", func() bool { return h.tr.openStreams.Load() == 0 })
	}()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
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
		var sink sseSink = discardSink{goneC: gone}
		if takeOver {
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, client)
			server, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			sink = newConnSink(h.tr, server, nil, true)
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
	// A stream's writes run on its one goroutine: none is left over from
	// the update's.
	testutil.Eventually(t, time.Second, "one goroutine per idle subscriber", func() bool { return runtime.NumGoroutine()-g0 <= n })
	// Twice: a sync.Pool keeps what it holds through one collection.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n, float64(runtime.NumGoroutine()-g0) / n
}

// The requests in flight of a session are kept in a small slice rather
// than a map (an idle session keeps no map's slots): ids stay unique,
// each is cancelled by its own id whatever the order they end in, the
// bound holds, and a burst's room is let go.
func TestInflightBookkeeping(t *testing.T) {
	s := NewClientSession(context.Background(), "s", SessionInit{EventLogSize: 4, Tenant: "t"}, time.Now())
	t.Cleanup(s.Terminate)
	cancelled := map[string]bool{}
	begin := func(id string) error {
		return s.begin(protocol.ID(id), context.Background(), func(error) { cancelled[id] = true })
	}
	for _, id := range []string{"1", `"a"`, "3"} {
		if err := begin(id); err != nil {
			t.Fatalf("begin %s: %v", id, err)
		}
	}
	if err := begin(`"a"`); !errors.Is(err, errDuplicateID) {
		t.Errorf("a second request a while it runs: %v, want %v", err, errDuplicateID)
	}
	s.end(protocol.ID("1")) // the last one moves into its place
	if !s.CancelRequest(protocol.ID("3")) || !cancelled["3"] || cancelled[`"a"`] {
		t.Errorf("cancelling 3 cancelled %v", cancelled)
	}
	if s.CancelRequest(protocol.ID("1")) {
		t.Error("a request that ended could be cancelled")
	}
	if err := begin("1"); err != nil {
		t.Errorf("id 1 again once it ended: %v", err)
	}
	for _, id := range []string{`"a"`, "3", "1"} {
		s.end(protocol.ID(id))
	}
	if s.Busy() {
		t.Error("busy with every request ended")
	}
	for i := range maxInflight {
		if err := begin(strconv.Itoa(i)); err != nil {
			t.Fatalf("request %d of %d: %v", i+1, maxInflight, err)
		}
	}
	if err := begin("-1"); !errors.Is(err, errTooManyInFlight) {
		t.Errorf("request %d: %v, want %v", maxInflight+1, err, errTooManyInFlight)
	}
	for i := range maxInflight {
		s.end(protocol.ID(strconv.Itoa(i)))
	}
	if s.inflight != nil {
		t.Errorf("room for %d requests kept after a burst", cap(s.inflight))
	}
}

// BenchmarkInflightLongIDs is the search of a session's requests in flight
// at its bound, 256, when a client gives them ids of 64 KiB that differ
// only in their last bytes: each begin and end compares hashes, not the
// ids in full.
func BenchmarkInflightLongIDs(b *testing.B) {
	s := NewClientSession(context.Background(), "s", SessionInit{EventLogSize: 4, Tenant: "t"}, time.Now())
	defer s.Terminate()
	prefix := `"` + strings.Repeat("x", 64<<10)
	for i := range maxInflight - 1 {
		if err := s.begin(protocol.ID(fmt.Sprintf(`%s%04d"`, prefix, i)), context.Background(), func(error) {}); err != nil {
			b.Fatal(err)
		}
	}
	id := protocol.ID(prefix + `zzzz"`) // as long as the others
	for b.Loop() {
		if err := s.begin(id, context.Background(), func(error) {}); err != nil {
			b.Fatal(err)
		}
		s.end(id)
	}
}
