package cache

import (
	"encoding/json"
	"time"
)

// PressureLevel grades how full the cache is (MCPCacheStatsSchema
// pressureLevel), read by the guard's memory-pressure gate.
type PressureLevel string

// The levels are fixed fractions of the high water mark, the point where
// eviction starts. With u = CurrentSizeBytes / MaxSizeBytes and H =
// HighWaterMark:
//
//	low       u < 5/9 H    (0.5 with the default H = 0.9)
//	medium    u < 5/6 H    (0.75)
//	high      u < H        (0.9)
//	critical  u >= H
//
// so the defaults give the guard's process-memory thresholds (0.5, 0.75,
// 0.9), and a cache configured to evict earlier reports pressure earlier.
// An insert that would cross H evicts down to LowWaterMark (0.7 by
// default: a cache that has just evicted is medium), so the cache is
// critical only when it sits exactly at H.
const (
	PressureLow      PressureLevel = "low"
	PressureMedium   PressureLevel = "medium"
	PressureHigh     PressureLevel = "high"
	PressureCritical PressureLevel = "critical"
)

// Stats is a snapshot of the cache (MCPCacheStatsSchema), taken under the
// lock so that its fields agree with one another (INV-MCP-CACHE-005).
type Stats struct {
	EntryCount       int
	CurrentSizeBytes int64
	MaxSizeBytes     int64
	HitCount         uint64 // Get hits since New
	MissCount        uint64 // Get misses since New, expired entries included
	HitRate          float64
	EvictionCount    uint64    // entries evicted for room since New
	ExpiredCount     uint64    // entries removed because their TTL passed
	LastCleanupAt    time.Time // zero until the first cleanup
	PressureLevel    PressureLevel
}

// Stats returns a consistent snapshot of the counters and sizes.
func (c *Cache[K, V]) Stats() Stats {
	c.mu.Lock()
	s := Stats{
		EntryCount:       len(c.items),
		CurrentSizeBytes: c.curSize,
		MaxSizeBytes:     c.cfg.MaxSizeBytes,
		HitCount:         c.hits,
		MissCount:        c.misses,
		EvictionCount:    c.evictions,
		ExpiredCount:     c.expirations,
	}
	if c.cleaned {
		s.LastCleanupAt = c.epoch.Add(time.Duration(c.lastCleanup))
	}
	c.mu.Unlock()
	if n := s.HitCount + s.MissCount; n > 0 {
		s.HitRate = float64(s.HitCount) / float64(n)
	}
	s.PressureLevel = c.cfg.pressure(s.CurrentSizeBytes)
	return s
}

// pressure grades size against the limits; see PressureLevel.
func (c Config) pressure(size int64) PressureLevel {
	u, h := float64(size)/float64(c.MaxSizeBytes), c.HighWaterMark
	switch { // h*5/6 rather than u/h >= 5/6: exact for the default 0.9
	case u >= h:
		return PressureCritical
	case u >= h*5/6:
		return PressureHigh
	case u >= h*5/9:
		return PressureMedium
	}
	return PressureLow
}

// MarshalJSON writes the PRD's stats schema: camelCase keys, lastCleanupAt
// in Unix milliseconds and omitted before the first cleanup, plus
// expiredCount.
func (s Stats) MarshalJSON() ([]byte, error) {
	type wire struct {
		EntryCount       int           `json:"entryCount"`
		CurrentSizeBytes int64         `json:"currentSizeBytes"`
		MaxSizeBytes     int64         `json:"maxSizeBytes"`
		HitCount         uint64        `json:"hitCount"`
		MissCount        uint64        `json:"missCount"`
		HitRate          float64       `json:"hitRate"`
		EvictionCount    uint64        `json:"evictionCount"`
		ExpiredCount     uint64        `json:"expiredCount"`
		LastCleanupAt    int64         `json:"lastCleanupAt,omitempty"`
		PressureLevel    PressureLevel `json:"pressureLevel"`
	}
	w := wire{
		EntryCount: s.EntryCount, CurrentSizeBytes: s.CurrentSizeBytes, MaxSizeBytes: s.MaxSizeBytes,
		HitCount: s.HitCount, MissCount: s.MissCount, HitRate: s.HitRate,
		EvictionCount: s.EvictionCount, ExpiredCount: s.ExpiredCount, PressureLevel: s.PressureLevel,
	}
	if !s.LastCleanupAt.IsZero() {
		w.LastCleanupAt = s.LastCleanupAt.UnixMilli()
	}
	return json.Marshal(w)
}
