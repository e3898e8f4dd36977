package traces

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// The flush interval is the subject of TestBatching and TestFlushInterval,
// so they run on synctest's clock: a batch opened at 0 is due at exactly
// FlushInterval, and synctest.Wait returns once the writer has done all it
// can before then.
func TestBatching(t *testing.T) {
	tests := []struct {
		name  string
		flush time.Duration
		close bool // the last, partial batch is written by Close
	}{
		{"partial batch by flush interval", 50 * time.Millisecond, false},
		{"partial batch by Close", time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := &fakeWriter{}
				r := start(t, w, Options{BatchSize: 500, FlushInterval: tt.flush})
				const n = 1234
				for i := range n {
					if !r.Record(trace(i)) {
						t.Fatalf("Record(%d) dropped", i)
					}
				}
				synctest.Wait() // the full batches are written; the partial one waits
				if got := w.sizes(); !slices.Equal(got, []int{500, 500}) {
					t.Fatalf("batch sizes before the partial batch is due = %v, want [500 500]", got)
				}
				if tt.close {
					if err := r.Close(context.Background()); err != nil {
						t.Fatalf("Close: %v", err)
					}
				} else {
					time.Sleep(tt.flush + time.Millisecond) // just past the instant the partial batch is due
					synctest.Wait()
				}
				if got, want := w.sizes(), []int{500, 500, 234}; !slices.Equal(got, want) {
					t.Fatalf("batch sizes = %v, want %v", got, want)
				}
				for i, tr := range w.all() {
					if tr != trace(i) {
						t.Fatalf("trace %d = %+v, want %+v (order kept, nothing lost or duplicated)", i, tr, trace(i))
					}
				}
				s := r.Stats()
				if s.Recorded != n || s.Written != n || s.Batches != 3 || s.Dropped != 0 {
					t.Errorf("stats = %+v", s)
				}
			})
		})
	}
}

func TestFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 20 * time.Millisecond
		w := &fakeWriter{}
		r := start(t, w, Options{FlushInterval: every})
		r.Record(trace(1))
		time.Sleep(every - time.Millisecond)
		synctest.Wait()
		if got := w.sizes(); len(got) != 0 {
			t.Fatalf("batch sizes before the interval = %v, want none", got)
		}
		time.Sleep(2 * time.Millisecond) // just past the interval
		synctest.Wait()
		if got := w.sizes(); !slices.Equal(got, []int{1}) {
			t.Fatalf("batch sizes after the interval = %v, want [1]", got)
		}
	})
}

// The writer takes traces off the queue when a batch is due, not one by
// one, so a batch that fills after the writer opened it with its first
// trace must still be written as soon as it is full, however its traces
// were split between the writer and the queue, and not wait for the
// flush interval.
func TestFullBatchIsWrittenWhateverItsSplit(t *testing.T) {
	for _, first := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d before the writer ran", first), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const size = 5
				w := &fakeWriter{}
				r := start(t, w, Options{BatchSize: size, FlushInterval: time.Minute})
				for i := range first {
					r.Record(trace(i))
				}
				synctest.Wait() // the writer opened the batch and waits
				if got := w.sizes(); len(got) != 0 {
					t.Fatalf("batch sizes with %d of %d traces = %v, want none", first, size, got)
				}
				for i := first; i < 2*size+1; i++ {
					r.Record(trace(i))
					synctest.Wait()
				}
				if got := w.sizes(); !slices.Equal(got, []int{size, size}) {
					t.Fatalf("batch sizes = %v, want two full batches written at once", got)
				}
				for i, tr := range w.all() {
					if tr != trace(i) {
						t.Fatalf("trace %d = %+v, want %+v", i, tr, trace(i))
					}
				}
			})
		})
	}
}

func TestRecordFillsIDAndStartedAt(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.FixedZone("CET", 3600))
	w := &fakeWriter{}
	r := start(t, w, Options{Now: func() time.Time { return now }})

	r.Record(store.Trace{Tool: "a"})
	given := store.Trace{ID: "mine", Tool: "b", StartedAt: now.Add(-time.Second)}
	r.Record(given)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := w.all()
	if len(got) != 2 {
		t.Fatalf("written %d traces, want 2", len(got))
	}
	want := time.Date(2026, 3, 4, 4, 6, 7, 123456000, time.UTC)
	if got[0].ID == "" || !got[0].StartedAt.Equal(want) || got[0].StartedAt.Location() != time.UTC {
		t.Errorf("filled trace = %+v, want an id and StartedAt %v in UTC", got[0], want)
	}
	if got[0].StartedAt != want {
		t.Errorf("StartedAt %#v is not exactly %#v (UTC, microseconds, no monotonic reading)", got[0].StartedAt, want)
	}
	if got[1].ID != "mine" || got[1].StartedAt != want.Add(-time.Second) {
		t.Errorf("given trace = %+v, want its id and StartedAt kept (in UTC)", got[1])
	}
}

// A writer that hangs must not slow Record down: the queue fills, then
// every further trace is dropped and counted.
func TestFullQueueNeverBlocks(t *testing.T) {
	w := &fakeWriter{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	const queue = 100
	r := start(t, w, Options{QueueSize: queue, BatchSize: 10, FlushInterval: time.Millisecond, WriteTimeout: time.Minute})

	// One trace occupies the writer, stuck in InsertTraces; the queue is
	// then empty and exactly queue more fit.
	r.Record(trace(0))
	<-w.entered

	const attempts = 100_000
	var accepted atomic.Int64
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := range attempts {
			if r.Record(trace(i + 1)) {
				accepted.Add(1)
			}
		}
	}()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("Record blocked on a full queue")
	}
	s := r.Stats()
	if accepted.Load() != queue || s.Dropped != attempts-queue || s.Recorded+s.Dropped != attempts+1 {
		t.Fatalf("accepted %d, stats %+v; want %d accepted, %d dropped", accepted.Load(), s, queue, attempts-queue)
	}

	close(w.block)
	if err := r.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = r.Stats()
	if s.Written != queue+1 {
		t.Errorf("written %d, want %d", s.Written, queue+1)
	}
	checkAccounting(t, s)
}

func TestFailingWriter(t *testing.T) {
	tests := []struct {
		name       string
		failures   int
		wantLost   int64
		wantWrites int64 // traces of the first batch written
	}{
		{"one failure is retried", 1, 0, 5},
		{"two failures are retried", 2, 0, 5},
		{"three failures lose the batch", maxTries, 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := &fakeWriter{failN: tt.failures}
			r := start(t, w, Options{BatchSize: 5, FlushInterval: time.Minute})
			for i := range 5 {
				r.Record(trace(i))
			}
			testutil.Eventually(t, testutil.Wait, "the batch settled", func() bool {
				s := r.Stats()
				return s.Written+s.LostInFailedBatches == 5
			})
			s := r.Stats()
			if s.LostInFailedBatches != tt.wantLost || s.Written != tt.wantWrites || s.WriteErrors != int64(tt.failures) {
				t.Fatalf("stats = %+v, want lost %d, written %d, %d write errors", s, tt.wantLost, tt.wantWrites, tt.failures)
			}

			// The writer works again: the next batch goes through.
			for i := 5; i < 10; i++ {
				r.Record(trace(i))
			}
			testutil.Eventually(t, testutil.Wait, "recovery", func() bool { return r.Stats().Written == tt.wantWrites+5 })
			if err := r.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			checkAccounting(t, r.Stats())
		})
	}
}

// While a batch is being retried, Record keeps queueing (and dropping once
// the queue is full) without waiting for it.
func TestRecordDuringRetries(t *testing.T) {
	w := &fakeWriter{failN: maxTries} // the first batch is lost, then all is well
	r := start(t, w, Options{QueueSize: 20, BatchSize: 10, FlushInterval: time.Minute})
	for i := range 10 {
		r.Record(trace(i))
	}
	testutil.Eventually(t, testutil.Wait, "the first failure", func() bool { return r.Stats().WriteErrors >= 1 })
	for i := 10; i < 40; i++ {
		r.Record(trace(i))
	}
	if s := r.Stats(); s.Recorded != 30 || s.Dropped != 10 {
		t.Fatalf("stats = %+v, want 30 recorded, 10 dropped", s)
	}
	testutil.Eventually(t, testutil.Wait, "the queued traces written", func() bool { return r.Stats().Written == 20 })
	if err := r.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s := r.Stats()
	if s.LostInFailedBatches != 10 {
		t.Errorf("lost %d, want the first batch of 10", s.LostInFailedBatches)
	}
	checkAccounting(t, s)
}

func TestCloseFlushesQueue(t *testing.T) {
	w := &fakeWriter{}
	r := start(t, w, Options{BatchSize: 4, FlushInterval: time.Minute})
	for i := range 10 {
		r.Record(trace(i))
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := w.sizes(); !slices.Equal(got, []int{4, 4, 2}) {
		t.Errorf("batch sizes = %v, want [4 4 2]", got)
	}
	checkAccounting(t, r.Stats())

	if r.Record(trace(99)) {
		t.Error("Record after Close accepted a trace")
	}
	if s := r.Stats(); s.Dropped != 1 || s.Recorded != 10 {
		t.Errorf("after a Record past Close: %+v, want 1 dropped", s)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestCloseWithBlockedWriterHonoursContext(t *testing.T) {
	w := &fakeWriter{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	r := start(t, w, Options{BatchSize: 1, WriteTimeout: time.Minute})
	r.Record(trace(0))
	<-w.entered
	for i := 1; i <= 5; i++ {
		r.Record(trace(i))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	returned := make(chan error, 1)
	go func() { returned <- r.Close(ctx) }()
	var err error
	select {
	case err = <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("Close hung on a blocked writer")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want a wrapped context.DeadlineExceeded", err)
	}
	s := r.Stats()
	if s.LostInFailedBatches != 1 || s.Abandoned != 5 {
		t.Errorf("stats = %+v, want the blocked batch lost and 5 abandoned", s)
	}
	checkAccounting(t, s)
	if r.Record(trace(9)) {
		t.Error("Record after Close accepted a trace")
	}
}

// With the database down and no deadline, Close still returns: it gives
// the first batch its retries and abandons the rest.
func TestCloseWithFailingWriter(t *testing.T) {
	w := &fakeWriter{failAll: true}
	r := start(t, w, Options{BatchSize: 2, FlushInterval: time.Minute})
	for i := range 6 {
		r.Record(trace(i))
	}
	err := r.Close(context.Background())
	if !errors.Is(err, errDown) {
		t.Fatalf("Close = %v, want the store's error wrapped", err)
	}
	s := r.Stats()
	if s.LostInFailedBatches != 2 || s.Abandoned != 4 || s.WriteErrors != maxTries {
		t.Errorf("stats = %+v, want 2 lost after %d tries, 4 abandoned", s, maxTries)
	}
	checkAccounting(t, s)
}

// Records racing Close are either accepted and then written, or dropped:
// none is stranded in the queue (the gate in shut).
func TestConcurrentRecordAndClose(t *testing.T) {
	for round := range 20 {
		w := &fakeWriter{}
		r := start(t, w, Options{QueueSize: 1000, BatchSize: 50, FlushInterval: time.Millisecond})
		const workers, each = 8, 500
		var wg sync.WaitGroup
		for g := range workers {
			wg.Go(func() {
				for i := range each {
					r.Record(trace(g*each + i))
				}
			})
		}
		// The sleep is the subject: it moves Close to a different point
		// of the workers' run each round. synctest cannot cover it: in
		// a bubble the sleep would end only once every worker blocks,
		// so Close would never race them.
		time.Sleep(time.Duration(round%5) * 100 * time.Microsecond)
		if err := r.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		wg.Wait()
		s := r.Stats()
		if s.Recorded+s.Dropped != workers*each {
			t.Fatalf("Recorded %d + Dropped %d != %d attempts", s.Recorded, s.Dropped, workers*each)
		}
		if got := int64(len(w.all())); got != s.Written {
			t.Fatalf("writer got %d traces, Written says %d", got, s.Written)
		}
		checkAccounting(t, s)
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
	if _, err := New(&fakeWriter{}, Options{QueueSize: -1}); err == nil {
		t.Error("New with a bad option succeeded")
	}
}

// A trace the store refuses costs only itself: the batch is not retried
// but split around it.
func TestInvalidTraceIsIsolated(t *testing.T) {
	tests := []struct {
		name string
		bad  []int // positions of invalid traces in a batch of 10
	}{
		{"one", []int{3}},
		{"first and last", []int{0, 9}},
		{"neighbours", []int{4, 5}},
		{"all", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &fakeWriter{}
			r := start(t, w, Options{BatchSize: 10, FlushInterval: time.Minute})
			var want []store.Trace
			for i := range 10 {
				tr := trace(i)
				if slices.Contains(tt.bad, i) {
					tr.Tool = badTool
				} else {
					want = append(want, tr)
				}
				r.Record(tr)
			}
			if err := r.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if a := w.attemptSizes(); a[0] != 10 || slices.Contains(a[1:], 10) {
				t.Errorf("insert sizes %v: the whole batch was retried", a)
			}
			if got := w.all(); !slices.Equal(got, want) {
				t.Errorf("written %v, want the %d valid traces in order", got, len(want))
			}
			s := r.Stats()
			if s.Rejected != int64(len(tt.bad)) || s.LostInFailedBatches != 0 {
				t.Errorf("stats = %+v, want %d rejected, none lost", s, len(tt.bad))
			}
			checkAccounting(t, s)
		})
	}
}

// A Writer that ignores its context breaks the Writer contract; Close
// still returns, abortGrace after its context ends.
func TestCloseWithStubbornWriter(t *testing.T) {
	w := &fakeWriter{block: make(chan struct{}), stubborn: true, entered: make(chan struct{}, 1)}
	r := start(t, w, Options{BatchSize: 1})
	r.Record(trace(0))
	<-w.entered
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := r.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want a wrapped context.DeadlineExceeded", err)
	}
	close(w.block) // lets the writer go, for goleak
	<-r.done
}

// Sampling keeps that share of successful calls, every failed call, and
// counts what it leaves out. The random source walks 0, 1/100, 2/100 …
// of its range, so each hundred calls keep exactly rate·100.
func TestSampling(t *testing.T) {
	tests := []struct {
		name string
		rate *float64
		ok   int // of 200 successful calls, kept
	}{
		{"unset keeps every call", nil, 200},
		{"1 keeps every call", ptr(1.0), 200},
		{"a quarter", ptr(0.25), 50},
		{"0 keeps failed calls only", ptr(0.0), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Uint64
			step := uint64(math.MaxUint64/100 + 1)
			w := &fakeWriter{}
			r := start(t, w, Options{SampleRate: tt.rate, Rand: func() uint64 { return (n.Add(1) - 1) % 100 * step }})
			kept := 0
			for i := range 200 {
				if r.Record(trace(i)) {
					kept++
				}
			}
			failed := trace(1000)
			failed.Status, failed.ErrorCode = store.TraceError, "TOOL_TIMEOUT"
			for range 10 {
				if !r.Record(failed) {
					t.Fatal("a failed call's trace was not kept")
				}
				failed.ID = ""
			}
			if err := r.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			s := r.Stats()
			if kept != tt.ok || s.Recorded != int64(tt.ok+10) || s.SampledOut != int64(200-tt.ok) || s.Dropped != 0 {
				t.Errorf("kept %d of 200, stats %+v; want %d kept, %d sampled out and 10 failed calls recorded",
					kept, s, tt.ok, 200-tt.ok)
			}
			if got := len(w.all()); got != tt.ok+10 {
				t.Errorf("%d traces written, want %d", got, tt.ok+10)
			}
			checkAccounting(t, s)
		})
	}
}
