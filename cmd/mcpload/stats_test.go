package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramIndexRoundTrip(t *testing.T) {
	prevHi := uint64(0)
	for idx := range histBuckets {
		lo, hi := histBounds(idx)
		if idx > 0 && lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", idx, lo, prevHi)
		}
		if hi < lo {
			t.Fatalf("bucket %d: hi %d < lo %d", idx, hi, lo)
		}
		for _, v := range []uint64{lo, hi, lo + (hi-lo)/2} {
			if got := histIndex(v); got != idx {
				t.Fatalf("histIndex(%d) = %d, want %d", v, got, idx)
			}
		}
		prevHi = hi
	}
	if prevHi != histMaxUS {
		t.Fatalf("last bucket ends at %d, want %d", prevHi, uint64(histMaxUS))
	}
}

// exactPercentile is the nearest-rank percentile of sorted values.
func exactPercentile(sorted []uint64, q float64) uint64 {
	rank := int(math.Ceil(q / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func TestHistogramPercentiles(t *testing.T) {
	tests := []struct {
		name   string
		values []uint64 // µs
	}{
		{"single", []uint64{42}},
		{"small exact", []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"zero", []uint64{0, 0, 0}},
		{"uniform 1..1000", seq(1, 1000)},
		{"log-normal", logNormal(50000, 7, 1.5)},
		{"bimodal", append(repeat(200, 9900), repeat(250000, 100)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistogram()
			for _, v := range tt.values {
				h.Record(time.Duration(v) * time.Microsecond)
			}
			sorted := slices.Sorted(slices.Values(tt.values))
			for _, q := range []float64{1, 50, 90, 99, 99.9, 100} {
				want := exactPercentile(sorted, q)
				got := h.Percentile(q)
				// Exact below histSubCount, within one bucket width above.
				tol := uint64(0)
				if want >= histSubCount {
					tol = want >> (histSubBits - 1)
				}
				if got < want || got > want+tol {
					t.Errorf("p%v = %d, want %d (+%d)", q, got, want, tol)
				}
			}
			if h.Max() != sorted[len(sorted)-1] {
				t.Errorf("max = %d, want %d", h.Max(), sorted[len(sorted)-1])
			}
			if h.Count() != uint64(len(tt.values)) {
				t.Errorf("count = %d, want %d", h.Count(), len(tt.values))
			}
		})
	}
}

func TestHistogramMergeAndEdges(t *testing.T) {
	a, b := newHistogram(), newHistogram()
	if a.Percentile(50) != 0 || a.Max() != 0 || a.Mean() != 0 {
		t.Fatal("empty histogram should report zeros")
	}
	for i := range 100 {
		a.Record(time.Duration(i) * time.Millisecond)
		b.Record(time.Duration(i+100) * time.Millisecond)
	}
	a.Merge(b)
	a.Merge(newHistogram())
	if a.Count() != 200 {
		t.Fatalf("count = %d, want 200", a.Count())
	}
	if got := a.Percentile(50); got < 99_000 || got > 99_000+99_000>>9 {
		t.Errorf("p50 = %d, want about 99000", got)
	}
	if a.Max() != 199_000 {
		t.Errorf("max = %d, want 199000", a.Max())
	}
	h := newHistogram()
	h.Record(-time.Second)
	h.Record(1000 * time.Hour) // beyond the cap
	if h.Percentile(1) != 0 || h.Max() != histMaxUS {
		t.Errorf("clamping: p1 = %d, max = %d", h.Percentile(1), h.Max())
	}
}

func seq(from, to uint64) []uint64 {
	var s []uint64
	for v := from; v <= to; v++ {
		s = append(s, v)
	}
	return s
}

func repeat(v uint64, n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func logNormal(n int, mu, sigma float64) []uint64 {
	r := rand.New(rand.NewPCG(1, 2))
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(math.Exp(mu + sigma*r.NormFloat64()))
	}
	return s
}
