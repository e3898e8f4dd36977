package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/memstore"
)

// memTrace returns trace i of tenant, started i seconds after a fixed
// instant, as the Recorder would write it.
func memTrace(tenant string, i int) store.Trace {
	return store.Trace{
		ID: store.NewID(), Tenant: tenant, Tool: "runtime.echo", ClientSession: fmt.Sprintf("session-%06d-xxxxxxxxxx", i),
		Status: store.TraceOK, DurationMs: 0.25, ArgBytes: 14, ResultBytes: 120,
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(i) * time.Second),
	}
}

// held returns which of traces the store still holds.
func held(t *testing.T, s *memstore.Store, traces []store.Trace) []bool {
	t.Helper()
	out := make([]bool, len(traces))
	for i, tr := range traces {
		_, err := s.GetTrace(context.Background(), tr.Tenant, tr.ID)
		switch {
		case err == nil:
			out[i] = true
		case !errors.Is(err, store.ErrNotFound):
			t.Fatalf("GetTrace %d: %v", i, err)
		}
	}
	return out
}

// The embedded store holds at most MaxTracesInMemory traces of all
// tenants together; the earliest written go first, and are counted.
func TestTraceLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New(store.Options{MaxTracesInMemory: 5})
	var all []store.Trace
	for i := range 12 {
		tenant := "a"
		if i%3 == 0 {
			tenant = "b"
		}
		all = append(all, memTrace(tenant, i))
	}
	// In batches of different sizes, with a retried batch (duplicates are
	// skipped and neither evict nor count).
	for _, part := range [][]store.Trace{all[:3], all[:3], all[3:4], all[4:11], all[11:]} {
		if err := s.InsertTraces(ctx, part); err != nil {
			t.Fatal(err)
		}
	}
	want := make([]bool, len(all))
	for i := len(all) - 5; i < len(all); i++ {
		want[i] = true
	}
	if got := held(t, s, all); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("held %v, want only the last five written", got)
	}
	if st := s.TraceStats(); st != (memstore.TraceStats{Held: 5, Evicted: 7}) {
		t.Errorf("TraceStats = %+v, want 5 held and 7 evicted", st)
	}
	page, err := s.ListTraces(ctx, "a", store.ListTraces{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 4 { // 7, 8, 10 and 11 of the last five are a's
		t.Errorf("tenant a lists %d traces, want 4", len(page.Items))
	}

	// A purge frees room: after it the bound counts only what is left,
	// and the order of the rest is kept.
	n, err := s.PurgeTraces(ctx, all[9].StartedAt)
	if err != nil || n != 2 {
		t.Fatalf("PurgeTraces = %d, %v; want 2 (traces 7 and 8)", n, err)
	}
	more := []store.Trace{memTrace("a", 20), memTrace("b", 21), memTrace("a", 22)}
	if err := s.InsertTraces(ctx, more); err != nil {
		t.Fatal(err)
	}
	all = append(all, more...)
	// 9 dropped for 22: 10, 11, 20, 21 and 22 are held.
	want = []bool{false, false, false, false, false, false, false, false, false, false, true, true, true, true, true}
	if got := held(t, s, all); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the purge held %v, want %v", got, want)
	}
	if st := s.TraceStats(); st != (memstore.TraceStats{Held: 5, Evicted: 8}) {
		t.Errorf("TraceStats = %+v, want 5 held and 8 evicted", st)
	}
}

// What a held trace costs, which the README's traces.maxInMemory row
// and store.DefaultMaxTracesInMemory quote: the store's part (the trace,
// its record in the ring and its entry in the tenant's index), at
// the bound, as the Recorder writes them in batches. Not parallel: it
// reads the heap.
func TestTraceFootprint(t *testing.T) {
	const n, batch = 20_000, 500
	// About 105 bytes today (an 80-byte record in the ring, 16 of them the
	// OpenTelemetry trace id, and the index); the bound catches a change
	// that would make the documented figure wrong.
	const maxBytesPerTrace = 110
	// Replacing every trace this many times is the churn of a busy
	// server's first minutes (a trace written and the earliest dropped on
	// every call): a Go map from id to slot doubled after about thirty.
	const replacements = 40
	ctx := context.Background()
	s := memstore.New(store.Options{MaxTracesInMemory: n})
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	next := 0
	write := func() { // n more traces
		b := make([]store.Trace, 0, batch)
		for range n {
			b = append(b, memTrace("default", next))
			next++
			if len(b) == batch {
				if err := s.InsertTraces(ctx, b); err != nil {
					t.Fatal(err)
				}
				b = b[:0]
			}
		}
	}
	before := heap()
	// Filled, then every trace replaced once.
	write()
	write()
	steady := heap()
	for range replacements {
		write()
	}
	after := heap()
	perTrace := float64(steady-before) / n
	t.Logf("%.0f bytes per held trace; heap +%d KiB at the bound, +%d KiB after %d more traces",
		perTrace, (steady-before)>>10, (after-before)>>10, replacements*n)
	if perTrace > maxBytesPerTrace {
		t.Errorf("a held trace costs %.0f bytes, more than the %d documented", perTrace, maxBytesPerTrace)
	}
	if after > steady+steady/20 {
		t.Errorf("heap grew from %d KiB to %d KiB while the store was at its bound", steady>>10, after>>10)
	}
	if st := s.TraceStats(); st.Held != n || st.Evicted != (replacements+1)*n {
		t.Errorf("TraceStats = %+v, want %d held and %d evicted", st, n, (replacements+1)*n)
	}
	runtime.KeepAlive(s)
}
