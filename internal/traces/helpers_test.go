package traces

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// Recorder must stop its writer and purger on Close (INV-MCP-XC-003).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = errors.New("database down")

// badTool is a tool name the fake store refuses, as pgstore refuses one
// that is too long: with a *store.FieldError for the whole batch.
const badTool = "bad"

// fakeWriter records what the Recorder asks of the store. By default it
// accepts everything; failN, block and purgeErr make it misbehave.
type fakeWriter struct {
	mu       sync.Mutex
	batches  [][]store.Trace // copies: the Recorder reuses its slice
	attempts []int           // sizes of all InsertTraces calls, failed ones included
	failN    int             // fail this many more calls
	failAll  bool            // fail every call
	block    chan struct{}   // non-nil: InsertTraces waits for it or ctx
	stubborn bool            // with block: ignore ctx, as a broken store would
	entered  chan struct{}   // non-nil: signalled when InsertTraces starts
	cutoffs  []time.Time
	purgeErr error // returned by the next PurgeTraces, then cleared
	purgeN   int64
	purgeCtx bool // PurgeTraces waits for ctx to end
}

func (f *fakeWriter) InsertTraces(ctx context.Context, batch []store.Trace) error {
	f.mu.Lock()
	f.attempts = append(f.attempts, len(batch))
	block, entered, stubborn := f.block, f.entered, f.stubborn
	fail := f.failAll || f.failN > 0
	if f.failN > 0 {
		f.failN--
	}
	f.mu.Unlock()
	if entered != nil {
		select {
		case entered <- struct{}{}:
		default:
		}
	}
	if block != nil && stubborn {
		<-block
	} else if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return fmt.Errorf("fake insert: %w", ctx.Err())
		}
	}
	if fail {
		return errDown
	}
	for i, t := range batch {
		if t.Tool == badTool {
			return store.Invalid(fmt.Sprintf("traces[%d].tool", i), "too long")
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, append([]store.Trace(nil), batch...))
	return nil
}

func (f *fakeWriter) PurgeTraces(ctx context.Context, cutoff time.Time) (int64, error) {
	f.mu.Lock()
	f.cutoffs = append(f.cutoffs, cutoff)
	err, n, wait := f.purgeErr, f.purgeN, f.purgeCtx
	f.purgeErr = nil
	f.mu.Unlock()
	if wait {
		<-ctx.Done()
		return 0, fmt.Errorf("fake purge: %w", ctx.Err())
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

func (f *fakeWriter) attemptSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.attempts)
}

func (f *fakeWriter) sizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s []int
	for _, b := range f.batches {
		s = append(s, len(b))
	}
	return s
}

func (f *fakeWriter) all() []store.Trace {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []store.Trace
	for _, b := range f.batches {
		all = append(all, b...)
	}
	return all
}

func (f *fakeWriter) purgeCutoffs() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.cutoffs...)
}

// start makes a Recorder that the test closes on cleanup (a second Close
// is harmless).
func start(t *testing.T, w Writer, opts Options) *Recorder {
	t.Helper()
	r, err := New(w, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Close(ctx)
	})
	return r
}

// trace returns a distinct trace numbered i.
func trace(i int) store.Trace {
	return store.Trace{
		ID:         fmt.Sprintf("t%06d", i),
		Tenant:     "default",
		Tool:       "memory.store",
		Status:     store.TraceOK,
		DurationMs: float64(i),
		StartedAt:  time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// checkAccounting asserts that every accepted trace was written, lost or
// abandoned exactly once, after Close.
func checkAccounting(t *testing.T, s Stats) {
	t.Helper()
	if got := s.Written + s.LostInFailedBatches + s.Rejected + s.Abandoned; got != s.Recorded || s.Queued != 0 {
		t.Errorf("Written %d + Lost %d + Rejected %d + Abandoned %d = %d, want Recorded %d (queued %d): %+v",
			s.Written, s.LostInFailedBatches, s.Rejected, s.Abandoned, got, s.Recorded, s.Queued, s)
	}
}
