package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/cache"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// Environment variables for the storage back ends: a Kubernetes Deployment
// takes them from a Secret, so they are read from the environment and
// never printed.
const (
	EnvDatabaseURL = "DATABASE_URL"   // databaseURL
	EnvRedisURL    = "REDIS_URL"      // redisURL
	EnvRedisMode   = "MCP_REDIS_MODE" // redis.mode
)

// Cache is the in-process cache, the first tier in front of Redis and the
// database (INV-MCP-CACHE-001…006; docs/adr/0043-two-tier-cache.md).
type Cache struct {
	MaxSizeBytes      int64   `yaml:"maxSizeBytes"`
	MaxEntries        int     `yaml:"maxEntries"`
	DefaultTtlMs      int64   `yaml:"defaultTtlMs"`
	EvictionPolicy    string  `yaml:"evictionPolicy"`
	HighWaterMark     float64 `yaml:"highWaterMark"`
	LowWaterMark      float64 `yaml:"lowWaterMark"`
	CleanupIntervalMs int64   `yaml:"cleanupIntervalMs"`
}

// Store holds the limits of the durable state.
type Store struct {
	// ParticipantLimit caps the participants of a collaboration session,
	// the initiator included.
	ParticipantLimit int `yaml:"participantLimit"`
	// MaxValueBytes caps a memory value's (and a metadata object's) JSON,
	// both as received and as stored: numbers are stored written out in
	// full (1e3 as 1000), so the stored form can be the longer one.
	MaxValueBytes int `yaml:"maxValueBytes"`
	// MaxValueDepth caps the nesting of objects and arrays in every JSON
	// document the store keeps.
	MaxValueDepth int `yaml:"maxValueDepth"`
	// MaxNumberLength caps a stored number's length in characters, written
	// out in full as PostgreSQL's jsonb keeps it, and the magnitude of its
	// exponent: jsonb turns the 8 bytes of 1e131071 into 131,072 digits.
	MaxNumberLength int `yaml:"maxNumberLength"`
	// PurgeIntervalMs is how often expired memory entries are deleted.
	PurgeIntervalMs int64 `yaml:"purgeIntervalMs"`
}

// Redis tunes the second cache tier and the shared client sessions.
type Redis struct {
	// KeyPrefix starts every Redis key and channel name of this
	// deployment: the cache tier's, the client sessions' and their
	// subscription index. Deployments sharing one Redis (and database
	// number) must each have their own, or they read each other's cache
	// and notify each other's sessions.
	KeyPrefix string `yaml:"keyPrefix"`
	// Mode is how the deployment runs Redis: single (one node), sentinel
	// or cluster; REDIS_URL is in go-redis's URL form for that mode
	// (docs/adr/0044-one-redis-foundation.md).
	Mode string `yaml:"mode"`
	// TimeoutMs bounds a Redis operation on a request's path that has a
	// fallback: cache reads and writes (the database answers), rate
	// limits (the replica counts alone), appending to a shared session's
	// log. A slower reply counts as a failure towards Redis's health; one
	// alone does not take Redis out of use (INV-MCP-XC-002).
	TimeoutMs int64 `yaml:"timeoutMs"`
	// SessionTimeoutMs bounds what a client waits for and has no fallback
	// for: creating, claiming or loading a shared client session, opening
	// a stream.
	SessionTimeoutMs int64 `yaml:"sessionTimeoutMs"`
	// BackgroundTimeoutMs bounds work of the cache tier off any request
	// (replaying missed invalidations, flushing every key) and the probe
	// that finds Redis back. The shared client sessions' sweeps and
	// write-backs are still bounded by TimeoutMs, plus a millisecond per
	// session.
	BackgroundTimeoutMs int64 `yaml:"backgroundTimeoutMs"`
	// TtlMs is the lifetime of an entry in Redis.
	TtlMs int64 `yaml:"ttlMs"`
	// MaxValueBytes caps an entry the cache tier writes to Redis; larger
	// ones are served from the process's own tier and the database only.
	MaxValueBytes int `yaml:"maxValueBytes"`
}

// Traces configures the trace of tool calls.
type Traces struct {
	// QueueSize bounds the traces waiting to be written; beyond it they are
	// dropped and counted, never blocking a call.
	QueueSize       int   `yaml:"queueSize"`
	BatchSize       int   `yaml:"batchSize"`
	FlushIntervalMs int64 `yaml:"flushIntervalMs"`
	// RetentionDays is how long traces are kept.
	RetentionDays   int   `yaml:"retentionDays"`
	PurgeIntervalMs int64 `yaml:"purgeIntervalMs"`
	// MaxInMemory bounds the traces the embedded store holds (all
	// tenants together); beyond it the earliest written are dropped and
	// counted. PostgreSQL ignores it.
	MaxInMemory int `yaml:"maxInMemory"`
	// SampleRate is the share of successful calls traced, 0 to 1, with
	// either store; failed calls are always traced.
	SampleRate float64 `yaml:"sampleRate"`
}

func defaultCache() Cache {
	d := cache.DefaultConfig()
	return Cache{
		MaxSizeBytes: d.MaxSizeBytes, MaxEntries: d.MaxEntries, DefaultTtlMs: d.DefaultTTL.Milliseconds(),
		EvictionPolicy: d.EvictionPolicy, HighWaterMark: d.HighWaterMark, LowWaterMark: d.LowWaterMark,
		CleanupIntervalMs: d.CleanupInterval.Milliseconds(),
	}
}

func defaultStore() Store {
	return Store{
		ParticipantLimit: 10, MaxValueBytes: 1 << 20, PurgeIntervalMs: 60_000,
		MaxValueDepth: store.DefaultMaxValueDepth, MaxNumberLength: store.DefaultMaxNumberLength,
	}
}

func defaultRedis() Redis {
	d := redisconn.DefaultTimeouts()
	return Redis{KeyPrefix: "mcp-runtime:", Mode: string(redisconn.Single),
		TimeoutMs: d.Hot.Milliseconds(), SessionTimeoutMs: d.Session.Milliseconds(), BackgroundTimeoutMs: d.Background.Milliseconds(),
		TtlMs: 5 * 60_000, MaxValueBytes: 1 << 20}
}

// StoreOptions returns the store section as the stores take it.
func (s Store) StoreOptions() store.Options {
	return store.Options{MaxValueBytes: s.MaxValueBytes, MaxValueDepth: s.MaxValueDepth, MaxNumberLength: s.MaxNumberLength}
}

func defaultTraces() Traces {
	return Traces{QueueSize: 10_000, BatchSize: 500, FlushIntervalMs: 200, RetentionDays: 7, PurgeIntervalMs: 3_600_000,
		MaxInMemory: store.DefaultMaxTracesInMemory, SampleRate: 1}
}

// CacheConfig returns the cache section as runtime/cache takes it.
func (c Cache) CacheConfig() cache.Config {
	return cache.Config{
		MaxSizeBytes: c.MaxSizeBytes, MaxEntries: c.MaxEntries, DefaultTTL: ms(c.DefaultTtlMs),
		EvictionPolicy: c.EvictionPolicy, HighWaterMark: c.HighWaterMark, LowWaterMark: c.LowWaterMark,
		CleanupInterval: ms(c.CleanupIntervalMs),
	}
}

// PurgeInterval returns PurgeIntervalMs as a duration.
func (s Store) PurgeInterval() time.Duration { return ms(s.PurgeIntervalMs) }

// Timeouts returns the bounds of each kind of Redis operation.
func (r Redis) Timeouts() redisconn.Timeouts {
	return redisconn.Timeouts{Hot: ms(r.TimeoutMs), Session: ms(r.SessionTimeoutMs), Background: ms(r.BackgroundTimeoutMs)}
}

// TTL returns TtlMs as a duration.
func (r Redis) TTL() time.Duration { return ms(r.TtlMs) }

// FlushInterval returns FlushIntervalMs as a duration.
func (t Traces) FlushInterval() time.Duration { return ms(t.FlushIntervalMs) }

// Retention returns RetentionDays as a duration.
func (t Traces) Retention() time.Duration { return time.Duration(t.RetentionDays) * 24 * time.Hour }

// PurgeInterval returns PurgeIntervalMs as a duration.
func (t Traces) PurgeInterval() time.Duration { return ms(t.PurgeIntervalMs) }

// validateStorage checks the storage sections. The URLs are checked for
// shape only (the drivers parse them at start-up) and never echoed, since
// they usually carry a password.
func (c Config) validateStorage(bad func(key string, value any, want string), intRange func(key string, v, lo, hi int64, want string)) []error {
	if c.DatabaseURL != "" && !validDSN(c.DatabaseURL, "postgres", "postgresql") {
		bad("databaseURL", "(hidden)", "a postgres:// URL or a key=value connection string")
	}
	switch m := redisconn.Mode(c.Redis.Mode); {
	case !m.Valid():
		bad("redis.mode", c.Redis.Mode, "single, sentinel or cluster")
	case c.RedisURL == "":
	case !validDSN(c.RedisURL, "redis", "rediss", "unix") || redisconn.CheckURL(m, c.RedisURL) != nil:
		schemes := "a redis:// or rediss:// URL"
		if m == redisconn.Single || m == "" {
			schemes = "a redis://, rediss:// or unix:// URL"
		}
		bad("redisURL", "(hidden)", schemes+" in go-redis's form for redis.mode "+c.Redis.Mode)
	}
	var errs []error
	if err := c.Cache.CacheConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	intRange("cache.defaultTtlMs", c.Cache.DefaultTtlMs, 0, maxDurationMs, fmt.Sprintf("0 to %d milliseconds", maxDurationMs))
	intRange("cache.cleanupIntervalMs", c.Cache.CleanupIntervalMs, 1, maxDurationMs, fmt.Sprintf("1 to %d milliseconds", maxDurationMs))
	intRange("store.participantLimit", int64(c.Store.ParticipantLimit), 1, 10_000, "1 to 10000")
	// PostgreSQL's jsonb fails on some documents a little larger than
	// 32 MiB (an array of 24 million zeros needs a 1 GiB allocation to
	// parse), so the bound keeps well below.
	intRange("store.maxValueBytes", int64(c.Store.MaxValueBytes), 1, 16<<20, "1 to 16777216 (16 MiB)")
	intRange("store.maxValueDepth", int64(c.Store.MaxValueDepth), 1, 1000, "1 to 1000")
	// Below 20 a 64-bit integer would not fit; above 16383 PostgreSQL's
	// numeric cannot hold the fraction digits.
	intRange("store.maxNumberLength", int64(c.Store.MaxNumberLength), 20, 16383, "20 to 16383 characters")
	intRange("store.purgeIntervalMs", c.Store.PurgeIntervalMs, 1000, maxDurationMs, fmt.Sprintf("1000 to %d milliseconds", maxDurationMs))
	if !validKeyPrefix(c.Redis.KeyPrefix) {
		bad("redis.keyPrefix", c.Redis.KeyPrefix, "1 to 64 printable ASCII characters without spaces, braces or '*'")
	}
	intRange("redis.timeoutMs", c.Redis.TimeoutMs, 1, 60_000, "1 to 60000 milliseconds")
	intRange("redis.sessionTimeoutMs", c.Redis.SessionTimeoutMs, 1, 60_000, "1 to 60000 milliseconds")
	intRange("redis.backgroundTimeoutMs", c.Redis.BackgroundTimeoutMs, 1, 60_000, "1 to 60000 milliseconds")
	intRange("redis.ttlMs", c.Redis.TtlMs, 1000, maxDurationMs, fmt.Sprintf("1000 to %d milliseconds", maxDurationMs))
	intRange("redis.maxValueBytes", int64(c.Redis.MaxValueBytes), 1024, 512<<20, "1024 to 536870912 (512 MiB, Redis's largest string)")
	intRange("traces.queueSize", int64(c.Traces.QueueSize), 1, 10_000_000, "1 to 10000000")
	intRange("traces.batchSize", int64(c.Traces.BatchSize), 1, 100_000, "1 to 100000")
	intRange("traces.flushIntervalMs", c.Traces.FlushIntervalMs, 1, 3_600_000, "1 to 3600000 milliseconds")
	intRange("traces.retentionDays", int64(c.Traces.RetentionDays), 1, 36_500, "1 to 36500 days")
	intRange("traces.purgeIntervalMs", c.Traces.PurgeIntervalMs, 1000, maxDurationMs, fmt.Sprintf("1000 to %d milliseconds", maxDurationMs))
	// About 100 bytes of heap each (store.DefaultMaxTracesInMemory): ten
	// million are 1 GB, more than any embedded deployment should hold.
	intRange("traces.maxInMemory", int64(c.Traces.MaxInMemory), 1, 10_000_000, "1 to 10000000 (about 100 bytes each)")
	if r := c.Traces.SampleRate; !(r >= 0 && r <= 1) { // NaN too
		bad("traces.sampleRate", r, "a number from 0 (failed calls only) to 1 (every call)")
	}
	return errs
}

// validKeyPrefix keeps a prefix out of Redis's way: no braces (they
// would change the cluster hash tag of the session keys), no glob
// characters, nothing invisible.
func validKeyPrefix(p string) bool {
	if p == "" || len(p) > 64 {
		return false
	}
	for _, r := range p {
		if r <= ' ' || r > '~' || strings.ContainsRune("{}*?[]", r) {
			return false
		}
	}
	return true
}

// validDSN accepts a URL with one of schemes, or (for PostgreSQL) a
// key=value connection string.
func validDSN(s string, schemes ...string) bool {
	u, err := url.Parse(s)
	if err == nil {
		for _, sc := range schemes {
			if strings.EqualFold(u.Scheme, sc) {
				return true
			}
		}
	}
	return schemes[0] == "postgres" && strings.Contains(s, "=") && !strings.Contains(s, "://")
}
