package traces

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestReporterRateLimit(t *testing.T) {
	var logs strings.Builder
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var dropped atomic.Int64
	p := newReporter(zerolog.New(&logs), func() time.Time { return now }, &dropped)

	lines := func() []map[string]any {
		var out []map[string]any
		for l := range strings.Lines(logs.String()) {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("bad log line %q: %v", l, err)
			}
			out = append(out, m)
		}
		return out
	}

	p.wrote() // nothing to say
	if n := len(lines()); n != 0 {
		t.Fatalf("%d lines after a success, want 0", n)
	}
	p.failed(errDown) // the first failure is logged at once
	for range 9 {
		now = now.Add(100 * time.Millisecond)
		p.failed(errDown)
	}
	p.lostBatch(500)
	dropped.Add(7)
	if n := len(lines()); n != 1 {
		t.Fatalf("%d lines within %v, want 1", n, reportEvery)
	}

	now = now.Add(reportEvery)
	p.wrote()
	got := lines()
	if len(got) != 2 {
		t.Fatalf("%d lines after %v, want 2", len(got), reportEvery)
	}
	last := got[1]
	if last["writeFailures"] != 9.0 || last["lostTraces"] != 500.0 || last["droppedTraces"] != 7.0 || last["writing"] != true {
		t.Errorf("second line = %v, want the counts since the first line and writing again", last)
	}

	// Counts left over when the writer stops are flushed regardless.
	now = now.Add(time.Second)
	p.failed(errDown)
	p.failed(errDown)
	if n := len(lines()); n != 2 {
		t.Fatalf("%d lines, want 2 until flush", n)
	}
	p.flush()
	if got := lines(); len(got) != 3 || got[2]["writeFailures"] != 2.0 {
		t.Errorf("flush logged %v", got[len(got)-1])
	}
}
