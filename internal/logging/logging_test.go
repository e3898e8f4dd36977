package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
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

// TestNew_FlushesOnInterval: a line reaches the output without Close.
func TestNew_FlushesOnInterval(t *testing.T) {
	out := &lockedBuffer{}
	log, closer, err := New(out, Options{Level: "info", FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	log.Info().Msg("hello")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if text, _ := out.snapshot(); strings.Contains(text, "hello") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("line not flushed within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNew_RejectsUnknownLevel(t *testing.T) {
	if _, _, err := New(&bytes.Buffer{}, Options{Level: "loud"}); err == nil || !strings.Contains(err.Error(), "loud") {
		t.Fatalf("err = %v, want one naming the level", err)
	}
}
