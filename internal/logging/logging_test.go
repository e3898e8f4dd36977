package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.buf.Write(p)
}

func (l *lockedBuffer) snapshot() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String(), l.writes
}

// TestNew_BatchesLinesAndFlushesOnClose: every line arrives, as valid JSON,
// in far fewer writes than lines, and nothing is lost at Close.
func TestNew_BatchesLinesAndFlushesOnClose(t *testing.T) {
	out := &lockedBuffer{}
	log, closer, err := New(out, Options{Level: "info", FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for i := range n {
		log.Info().Int("i", i).Msg("line")
	}
	log.Debug().Msg("below the level")
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	text, writes := out.snapshot()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != n {
		t.Fatalf("got %d lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		var v struct {
			I   int    `json:"i"`
			Msg string `json:"message"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.I != i {
			t.Fatalf("line %d = %q (%v)", i, l, err)
		}
	}
	if writes >= n/10 {
		t.Errorf("%d writes for %d lines: not batched", writes, n)
	}
}

// TestNew_FlushesOnInterval: a line reaches the output without Close,
// within the diode's poll (5ms) and one flush interval. Time is the
// subject, so it runs on synctest's clock.
func TestNew_FlushesOnInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &lockedBuffer{}
		log, closer, err := New(out, Options{Level: "info", FlushInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		log.Info().Msg("hello")
		time.Sleep(15 * time.Millisecond)
		synctest.Wait()
		if text, _ := out.snapshot(); !strings.Contains(text, "hello") {
			t.Fatalf("line not flushed within 15ms; output %q", text)
		}
	})
}

func TestNew_RejectsUnknownLevel(t *testing.T) {
	if _, _, err := New(&bytes.Buffer{}, Options{Level: "loud"}); err == nil || !strings.Contains(err.Error(), "loud") {
		t.Fatalf("err = %v, want one naming the level", err)
	}
}

// failingOnce is an output whose first write fails (a full disk, a closed
// pipe), then recovers. failed is closed after that first write.
type failingOnce struct {
	lockedBuffer
	once   sync.Once
	failed chan struct{}
}

func (f *failingOnce) Write(p []byte) (int, error) {
	first := false
	f.once.Do(func() { first = true })
	if first {
		defer close(f.failed)
		return 0, errors.New("write /var/log/mcp.log: no space left on device")
	}
	return f.lockedBuffer.Write(p)
}

// After the output fails once, later lines still arrive: the failure costs
// the lines buffered at the time, not the log for the rest of the process
// (bufio.Writer keeps its first error forever unless reset). The test waits
// for the lines to be written by the batcher (an interval flush, or a full
// buffer), not by Close.
func TestNew_OutputRecoversAfterAFailedWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		every time.Duration
		lines int // logged before and after: enough to fill the 64 KiB buffer, or one for a flush
	}{
		{"failed interval flush", 5 * time.Millisecond, 1},
		{"failed write of a full buffer", time.Hour, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				out := &failingOnce{failed: make(chan struct{})}
				log, closer, err := New(out, Options{Level: "info", FlushInterval: tc.every})
				if err != nil {
					t.Fatal(err)
				}
				defer closer.Close()
				pad := strings.Repeat("x", 100)
				for i := range tc.lines {
					log.Info().Int("i", i).Str("pad", pad).Msg("before the failure")
				}
				select {
				case <-out.failed:
				case <-time.After(5 * time.Second):
					t.Fatal("the output was never written to")
				}
				for i := range 3 {
					log.Info().Int("i", i).Msg("after the failure")
				}
				for i := 1; i < tc.lines; i++ { // fill the buffer again, so it is written out
					log.Info().Int("i", i).Str("pad", pad).Msg("filler")
				}
				// The diode polls every 5ms and the batcher writes on its
				// interval or a full buffer; on synctest's clock 20ms is
				// enough for either, and the wait is exact.
				time.Sleep(20 * time.Millisecond)
				synctest.Wait()
				text, _ := out.snapshot()
				if n := strings.Count(text, "after the failure"); n != 3 {
					t.Fatalf("%d of the 3 lines logged after the failed write arrived within 20ms; output %q", n, truncate(text, 300))
				}
			})
		})
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
