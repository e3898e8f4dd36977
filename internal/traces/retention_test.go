package traces

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
)

// syncBuffer is a log sink the writer goroutines and the test may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The purge loop's timers are the subject of these tests, so they run on
// synctest's clock: with a PurgeInterval of a second (the least Validate
// allows) the purges run at 1s, 2s, 3s… exactly, and no test waits.
func TestRetentionCutoff(t *testing.T) {
	synctest.Test(t, testRetentionCutoff)
}

func testRetentionCutoff(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	w := &fakeWriter{purgeErr: errDown, purgeN: 42}
	var logs syncBuffer
	r := start(t, w, Options{
		Retention:     48 * time.Hour,
		PurgeInterval: time.Second,
		Now:           func() time.Time { return now },
		Log:           zerolog.New(&logs).Level(zerolog.DebugLevel),
	})

	// The first purge (at 1s) fails; the loop carries on and the second
	// (at 2s) succeeds.
	time.Sleep(2500 * time.Millisecond)
	synctest.Wait()
	if n := len(w.purgeCutoffs()); n != 2 {
		t.Fatalf("%d purges in 2.5s, want 2 (at 1s and 2s)", n)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := now.Add(-48 * time.Hour)
	for i, c := range w.purgeCutoffs() {
		if !c.Equal(want) {
			t.Errorf("purge %d cutoff = %v, want now - Retention = %v", i, c, want)
		}
	}
	s := r.Stats()
	if s.PurgeErrors != 1 || s.Purged != 42*int64(len(w.purgeCutoffs())-1) {
		t.Errorf("stats = %+v, want 1 purge error and 42 per successful purge", s)
	}
	out := logs.String()
	if !strings.Contains(out, "trace purge failed") || !strings.Contains(out, `"purged":42`) {
		t.Errorf("log lacks the purge failure or the purged count:\n%s", out)
	}
}

// Close cancels a purge in progress rather than waiting for it.
func TestCloseCancelsPurge(t *testing.T) {
	synctest.Test(t, testCloseCancelsPurge)
}

func testCloseCancelsPurge(t *testing.T) {
	w := &fakeWriter{purgeCtx: true}
	r := start(t, w, Options{PurgeInterval: time.Second})
	time.Sleep(time.Second) // the first purge starts, and waits for Close
	synctest.Wait()
	if n := len(w.purgeCutoffs()); n != 1 {
		t.Fatalf("%d purges started after 1s, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if s := r.Stats(); s.PurgeErrors != 0 {
		t.Errorf("a purge cancelled by Close counted as an error: %+v", s)
	}
}
