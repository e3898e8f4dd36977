package traces

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// discard is a Writer that accepts everything at once, so the benchmark
// measures Record and not a store.
type discard struct{}

func (discard) InsertTraces(context.Context, []store.Trace) error { return nil }
func (discard) PurgeTraces(context.Context, time.Time) (int64, error) {
	return 0, nil
}

// BenchmarkRecord is the hot-path cost of tracing a call. "new id" is
// what the pipeline pays (Record makes the id); "given id" isolates the
// queueing; "sampled out" is a successful call that sampling does not
// keep (it must allocate nothing). A fast writer keeps up with some of
// the load, so part of it is dropped: see the drop% metric.
func BenchmarkRecord(b *testing.B) {
	none := 0.0
	for _, bc := range []struct {
		name string
		id   string
		rate *float64
	}{{"new id", "", nil}, {"given id", "0194c3f2-7d1e-7b3a-9c2d-5e6f7a8b9c0d", nil}, {"sampled out", "", &none}} {
		b.Run(bc.name, func(b *testing.B) {
			r, err := New(discard{}, Options{SampleRate: bc.rate})
			if err != nil {
				b.Fatal(err)
			}
			tr := store.Trace{ID: bc.id, Tenant: "default", Tool: "memory.store", Status: store.TraceOK, DurationMs: 1.5, ArgBytes: 120, ResultBytes: 300}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r.Record(tr)
				}
			})
			b.StopTimer()
			if err := r.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			s := r.Stats()
			if s.Recorded+s.Dropped > 0 {
				b.ReportMetric(100*float64(s.Dropped)/float64(s.Recorded+s.Dropped), "drop%")
			}
		})
	}
}
