package traces

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
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

// The purge loop uses real timers (PurgeInterval of a second, the least
// Validate allows), so these tests run in parallel.
func TestRetentionCutoff(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	w := &fakeWriter{purgeErr: errDown, purgeN: 42}
	var logs syncBuffer
	r := start(t, w, Options{
		Retention:     48 * time.Hour,
		PurgeInterval: time.Second,
		Now:           func() time.Time { return now },
		Log:           zerolog.New(&logs).Level(zerolog.DebugLevel),
	})

	// The first purge fails; the loop carries on and the second succeeds.
	testutil.Eventually(t, testutil.Wait, "two purges", func() bool { return len(w.purgeCutoffs()) >= 2 })
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
	t.Parallel()
	w := &fakeWriter{purgeCtx: true}
	r := start(t, w, Options{PurgeInterval: time.Second})
	testutil.Eventually(t, testutil.Wait, "a purge to start", func() bool { return len(w.purgeCutoffs()) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if s := r.Stats(); s.PurgeErrors != 0 {
		t.Errorf("a purge cancelled by Close counted as an error: %+v", s)
	}
}
