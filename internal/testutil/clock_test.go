package testutil

import (
	"sync"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	start := time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		step time.Duration
		want []time.Time // three readings, an Advance(time.Hour), a fourth
	}{
		{"still", 0, []time.Time{start, start, start, start.Add(time.Hour)}},
		{"stepping", time.Microsecond, []time.Time{
			start.Add(time.Microsecond), start.Add(2 * time.Microsecond), start.Add(3 * time.Microsecond),
			start.Add(time.Hour + 4*time.Microsecond),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := NewClock(start, c.step)
			var got []time.Time
			for range 3 {
				got = append(got, clk.Now())
			}
			clk.Advance(time.Hour)
			got = append(got, clk.Now())
			for i := range got {
				if !got[i].Equal(c.want[i]) {
					t.Fatalf("reading %d: got %v, want %v", i, got[i], c.want[i])
				}
			}
		})
	}
}

// Readings taken concurrently are all distinct when the clock steps.
func TestClockConcurrentReadingsDistinct(t *testing.T) {
	clk := NewClock(time.Time{}, time.Microsecond)
	const n = 8
	readings := make([][]time.Time, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for range 100 {
				readings[i] = append(readings[i], clk.Now())
			}
		})
	}
	wg.Wait()
	seen := map[time.Time]bool{}
	for _, rs := range readings {
		for _, r := range rs {
			if seen[r] {
				t.Fatalf("reading %v taken twice", r)
			}
			seen[r] = true
		}
	}
}
