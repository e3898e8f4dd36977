package cache

import (
	"errors"
	"fmt"
	"time"
)

// Eviction policies, the values of Config.EvictionPolicy
// (docs/spec/optimization-prd.md, Feature 1: evictionPolicy).
const (
	PolicyLRU  = "lru"  // least recently used (Get moves an entry to the front)
	PolicyLFU  = "lfu"  // least frequently used, ties broken by recency
	PolicyFIFO = "fifo" // insertion order (Get does not reorder)
)

// Config is the cache section of the server configuration. Each field
// mirrors a PRD key (MCPCacheConfigSchema); the *Ms keys are durations here.
// The configuration file loader owns the YAML names and converts.
type Config struct {
	// MaxSizeBytes is the hard bound on CurrentSizeBytes
	// (cache.maxSizeBytes, INV-MCP-CACHE-001).
	MaxSizeBytes int64
	// MaxEntries is the hard bound on the entry count
	// (cache.maxEntries, INV-MCP-CACHE-002).
	MaxEntries int
	// DefaultTTL applies to a Set without WithTTL; 0 means no expiry
	// (cache.defaultTtlMs).
	DefaultTTL time.Duration
	// EvictionPolicy is PolicyLRU, PolicyLFU or PolicyFIFO
	// (cache.evictionPolicy).
	EvictionPolicy string
	// HighWaterMark is the fraction of MaxSizeBytes whose crossing by an
	// insert triggers eviction down to LowWaterMark (cache.highWaterMark,
	// 0.5–1).
	HighWaterMark float64
	// LowWaterMark is the fraction of MaxSizeBytes that eviction brings the
	// cache down to (cache.lowWaterMark, 0.1–0.9, below HighWaterMark).
	LowWaterMark float64
	// CleanupInterval is how often the background sweep removes expired
	// entries and recomputes the size (cache.cleanupIntervalMs).
	CleanupInterval time.Duration
}

// DefaultConfig returns the PRD defaults: 100 MiB, 10,000 entries, a one
// hour TTL, LRU, water marks 0.9 and 0.7, cleanup every minute.
func DefaultConfig() Config {
	return Config{
		MaxSizeBytes:    100 << 20,
		MaxEntries:      10_000,
		DefaultTTL:      time.Hour,
		EvictionPolicy:  PolicyLRU,
		HighWaterMark:   0.9,
		LowWaterMark:    0.7,
		CleanupInterval: time.Minute,
	}
}

// A ConfigError reports one invalid Config field. Validate returns one per
// problem, joined with errors.Join; use errors.As to inspect them.
type ConfigError struct {
	// Key is the camelCase configuration key, e.g. "cache.maxSizeBytes".
	Key string
	// Value is the rejected value.
	Value any
	// Want says what would have been accepted.
	Want string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s: invalid value %v: want %s", e.Key, e.Value, e.Want)
}

// Validate checks every field against the PRD's ranges and reports each
// bad one by its configuration key.
func (c Config) Validate() error {
	var errs []error
	bad := func(key string, v any, want string) {
		errs = append(errs, &ConfigError{Key: key, Value: v, Want: want})
	}
	if c.MaxSizeBytes <= 0 {
		bad("cache.maxSizeBytes", c.MaxSizeBytes, "a positive number of bytes")
	}
	if c.MaxEntries <= 0 {
		bad("cache.maxEntries", c.MaxEntries, "a positive number of entries")
	}
	if c.DefaultTTL < 0 {
		bad("cache.defaultTtlMs", c.DefaultTTL, "0 (no expiry) or more")
	}
	switch c.EvictionPolicy {
	case PolicyLRU, PolicyLFU, PolicyFIFO:
	default:
		bad("cache.evictionPolicy", fmt.Sprintf("%q", c.EvictionPolicy), `"lru", "lfu" or "fifo"`)
	}
	// Written as !(in range) so that NaN is rejected too.
	highOK := c.HighWaterMark >= 0.5 && c.HighWaterMark <= 1
	lowOK := c.LowWaterMark >= 0.1 && c.LowWaterMark <= 0.9
	if !highOK {
		bad("cache.highWaterMark", c.HighWaterMark, "a fraction in [0.5, 1]")
	}
	if !lowOK {
		bad("cache.lowWaterMark", c.LowWaterMark, "a fraction in [0.1, 0.9]")
	}
	if highOK && lowOK && c.LowWaterMark >= c.HighWaterMark {
		bad("cache.lowWaterMark", c.LowWaterMark, fmt.Sprintf("less than cache.highWaterMark (%v)", c.HighWaterMark))
	}
	if c.CleanupInterval <= 0 {
		bad("cache.cleanupIntervalMs", c.CleanupInterval, "a positive interval")
	}
	return errors.Join(errs...)
}
