package cache

import (
	"encoding/json"
	"testing"
	"time"
)

func TestStats(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig()
	cfg.MaxSizeBytes = 1000
	c := mustNew(t, cfg, WithClock[string, []byte](clk.Now), WithSizer(lenSizer[string]))
	_ = c.Set("a", make([]byte, 100))
	_ = c.Set("b", make([]byte, 150))
	c.Get("a")
	c.Get("a")
	c.Get("a")
	c.Get("missing")
	s := c.Stats()
	if s.EntryCount != 2 || s.CurrentSizeBytes != 250 || s.MaxSizeBytes != 1000 ||
		s.HitCount != 3 || s.MissCount != 1 || s.HitRate != 0.75 ||
		s.EvictionCount != 0 || !s.LastCleanupAt.IsZero() || s.PressureLevel != PressureLow {
		t.Fatalf("Stats = %+v", s)
	}
	if it, _ := c.Peek("a"); it.AccessCount != 3 || it.SizeBytes != 100 || it.Priority != Normal || it.TTL != time.Hour {
		t.Fatalf("Peek = %+v", it)
	}
	if c.Stats().HitCount != 3 {
		t.Fatal("Peek counted as a hit")
	}

	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"entryCount", "currentSizeBytes", "maxSizeBytes", "hitCount", "missCount", "hitRate", "evictionCount", "pressureLevel"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON %s lacks %s", raw, k)
		}
	}
	if _, ok := m["lastCleanupAt"]; ok {
		t.Errorf("JSON %s has lastCleanupAt before any cleanup", raw)
	}
	c.cleanup()
	raw, _ = json.Marshal(c.Stats())
	m = nil
	_ = json.Unmarshal(raw, &m)
	if got, want := m["lastCleanupAt"], float64(clk.Now().UnixMilli()); got != want {
		t.Errorf("lastCleanupAt = %v, want %v (Unix ms)", got, want)
	}
}

func TestPressureLevel(t *testing.T) {
	def := DefaultConfig()
	def.MaxSizeBytes = 1000
	low := def
	low.HighWaterMark, low.LowWaterMark = 0.6, 0.3
	for _, tc := range []struct {
		cfg  Config
		size int64
		want PressureLevel
	}{
		{def, 0, PressureLow},
		{def, 499, PressureLow},
		{def, 500, PressureMedium},
		{def, 749, PressureMedium},
		{def, 750, PressureHigh},
		{def, 899, PressureHigh},
		{def, 900, PressureCritical}, // the high water mark
		{def, 1000, PressureCritical},
		// The thresholds follow the mark: 5/9, 5/6 and 1 times 0.6.
		{low, 333, PressureLow},
		{low, 334, PressureMedium},
		{low, 499, PressureMedium},
		{low, 500, PressureHigh},
		{low, 599, PressureHigh},
		{low, 600, PressureCritical},
	} {
		if got := tc.cfg.pressure(tc.size); got != tc.want {
			t.Errorf("high mark %v, size %d/1000: %s, want %s", tc.cfg.HighWaterMark, tc.size, got, tc.want)
		}
	}
}
