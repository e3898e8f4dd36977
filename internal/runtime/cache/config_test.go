package cache

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfig(t *testing.T) {
	want := Config{
		MaxSizeBytes:    104_857_600,
		MaxEntries:      10_000,
		DefaultTTL:      3_600_000 * time.Millisecond,
		EvictionPolicy:  "lru",
		HighWaterMark:   0.9,
		LowWaterMark:    0.7,
		CleanupInterval: 60_000 * time.Millisecond,
	}
	if got := DefaultConfig(); got != want {
		t.Fatalf("DefaultConfig() = %+v, want the PRD defaults %+v", got, want)
	}
	if err := want.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		keys  []string // every key the error must name
		valid bool
	}{
		{"maxSizeBytes 0", func(c *Config) { c.MaxSizeBytes = 0 }, []string{"cache.maxSizeBytes"}, false},
		{"maxEntries negative", func(c *Config) { c.MaxEntries = -1 }, []string{"cache.maxEntries"}, false},
		{"defaultTtlMs negative", func(c *Config) { c.DefaultTTL = -time.Millisecond }, []string{"cache.defaultTtlMs"}, false},
		{"defaultTtlMs 0 (no expiry)", func(c *Config) { c.DefaultTTL = 0 }, nil, true},
		{"evictionPolicy unknown", func(c *Config) { c.EvictionPolicy = "LRU" }, []string{"cache.evictionPolicy"}, false},
		{"evictionPolicy lfu", func(c *Config) { c.EvictionPolicy = PolicyLFU }, nil, true},
		{"evictionPolicy fifo", func(c *Config) { c.EvictionPolicy = PolicyFIFO }, nil, true},
		{"highWaterMark below 0.5", func(c *Config) { c.HighWaterMark = 0.49 }, []string{"cache.highWaterMark"}, false},
		{"highWaterMark above 1", func(c *Config) { c.HighWaterMark = 1.01 }, []string{"cache.highWaterMark"}, false},
		{"highWaterMark NaN", func(c *Config) { c.HighWaterMark = math.NaN() }, []string{"cache.highWaterMark"}, false},
		{"highWaterMark 1", func(c *Config) { c.HighWaterMark = 1 }, nil, true},
		{"lowWaterMark below 0.1", func(c *Config) { c.LowWaterMark = 0.05 }, []string{"cache.lowWaterMark"}, false},
		{"lowWaterMark above 0.9", func(c *Config) { c.LowWaterMark = 0.95; c.HighWaterMark = 1 }, []string{"cache.lowWaterMark"}, false},
		{"low equal to high", func(c *Config) { c.LowWaterMark, c.HighWaterMark = 0.6, 0.6 }, []string{"cache.lowWaterMark"}, false},
		{"low above high", func(c *Config) { c.LowWaterMark, c.HighWaterMark = 0.8, 0.7 }, []string{"cache.lowWaterMark"}, false},
		{"cleanupIntervalMs 0", func(c *Config) { c.CleanupInterval = 0 }, []string{"cache.cleanupIntervalMs"}, false},
		{"several at once", func(c *Config) { c.MaxSizeBytes, c.MaxEntries, c.CleanupInterval = -1, 0, -1 },
			[]string{"cache.maxSizeBytes", "cache.maxEntries", "cache.cleanupIntervalMs"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(&cfg)
			err := cfg.Validate()
			if tc.valid {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%v is not a *ConfigError", err)
			}
			for _, k := range tc.keys {
				if !strings.Contains(err.Error(), k+":") {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
			if got := strings.Count(err.Error(), "cache."); got < len(tc.keys) {
				t.Errorf("error %q names %d keys, want %d", err, got, len(tc.keys))
			}
			if _, nerr := New[string, string](cfg); nerr == nil || !errors.As(nerr, &ce) {
				t.Errorf("New accepted an invalid config: %v", nerr)
			}
		})
	}
}

func TestPriority(t *testing.T) {
	for _, p := range []Priority{Low, Normal, High} {
		got, err := ParsePriority(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePriority(%q) = %v, %v", p.String(), got, err)
		}
	}
	if p, err := ParsePriority(""); err != nil || p != Normal {
		t.Errorf(`ParsePriority("") = %v, %v; want Normal (the PRD default)`, p, err)
	}
	if _, err := ParsePriority("urgent"); err == nil {
		t.Error(`ParsePriority("urgent") accepted`)
	}
}
