package config

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
)

// The storage sections load from YAML, keep their defaults for what is
// not set, and the URLs come from the environment as a Deployment sets
// them from a Secret.
func TestLoadStorageSections(t *testing.T) {
	path := writeConfig(t, `
cache: {maxSizeBytes: 1048576, evictionPolicy: lfu, defaultTtlMs: 1000}
store: {participantLimit: 3}
redis: {timeoutMs: 20, sessionTimeoutMs: 700, keyPrefix: "team-a:"}
traces: {retentionDays: 30, batchSize: 100, maxInMemory: 5000, sampleRate: 0.1}
`)
	env := map[string]string{
		EnvDatabaseURL: "postgres://u:secret@db:5432/mcp",
		EnvRedisURL:    "redis://sentinel-1:26379?addr=sentinel-2:26379&master_name=cache",
		EnvRedisMode:   "sentinel",
	}
	cfg, err := load([]string{"-config", path}, env)
	if err != nil {
		t.Fatal(err)
	}
	cc := cfg.Cache.CacheConfig()
	if cc.MaxSizeBytes != 1<<20 || cc.EvictionPolicy != "lfu" || cc.DefaultTTL != time.Second || cc.MaxEntries != 10_000 {
		t.Errorf("cache = %+v", cc)
	}
	if cfg.Store.ParticipantLimit != 3 || cfg.Store.MaxValueBytes != 1<<20 {
		t.Errorf("store = %+v", cfg.Store)
	}
	want := redisconn.Timeouts{Hot: 20 * time.Millisecond, Session: 700 * time.Millisecond, Background: 5 * time.Second}
	if cfg.Redis.Timeouts() != want || cfg.Redis.TTL() != 5*time.Minute || cfg.Redis.KeyPrefix != "team-a:" || cfg.Redis.Mode != "sentinel" {
		t.Errorf("redis = %+v", cfg.Redis)
	}
	if cfg.Traces.Retention() != 30*24*time.Hour || cfg.Traces.BatchSize != 100 || cfg.Traces.QueueSize != 10_000 ||
		cfg.Traces.MaxInMemory != 5000 || cfg.Traces.SampleRate != 0.1 {
		t.Errorf("traces = %+v", cfg.Traces)
	}
	if cfg.DatabaseURL != env[EnvDatabaseURL] || cfg.RedisURL != env[EnvRedisURL] {
		t.Errorf("urls = %q %q", cfg.DatabaseURL, cfg.RedisURL)
	}
}

// Every feature runs on Redis Cluster, client sessions included: the mode
// is accepted with a cluster's URL.
func TestValidateClusterMode(t *testing.T) {
	c := Default()
	c.Redis.Mode, c.RedisURL = "cluster", "redis://n1:6379?addr=n2:6379&addr=n3:6379"
	if err := c.Validate(); err != nil {
		t.Fatalf("cluster mode: %v", err)
	}
}

func TestValidateStorageNamesKeys(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Config)
		key  string
	}{
		{"cache size", func(c *Config) { c.Cache.MaxSizeBytes = 0 }, "cache.maxSizeBytes"},
		{"cache policy", func(c *Config) { c.Cache.EvictionPolicy = "random" }, "cache.evictionPolicy"},
		{"cache marks", func(c *Config) { c.Cache.LowWaterMark = 0.95 }, "cache.lowWaterMark"},
		{"cache cleanup", func(c *Config) { c.Cache.CleanupIntervalMs = 0 }, "cache.cleanupIntervalMs"},
		{"participants", func(c *Config) { c.Store.ParticipantLimit = 0 }, "store.participantLimit"},
		{"value bytes", func(c *Config) { c.Store.MaxValueBytes = -1 }, "store.maxValueBytes"},
		{"value bytes past what jsonb takes", func(c *Config) { c.Store.MaxValueBytes = 16<<20 + 1 }, "store.maxValueBytes"},
		{"value depth", func(c *Config) { c.Store.MaxValueDepth = 0 }, "store.maxValueDepth"},
		{"value depth too deep", func(c *Config) { c.Store.MaxValueDepth = 1001 }, "store.maxValueDepth"},
		{"number length too short for an int64", func(c *Config) { c.Store.MaxNumberLength = 19 }, "store.maxNumberLength"},
		{"number length past numeric's", func(c *Config) { c.Store.MaxNumberLength = 16384 }, "store.maxNumberLength"},
		{"redis value bytes", func(c *Config) { c.Redis.MaxValueBytes = 0 }, "redis.maxValueBytes"},
		{"redis value bytes past a Redis string", func(c *Config) { c.Redis.MaxValueBytes = 512<<20 + 1 }, "redis.maxValueBytes"},
		{"purge", func(c *Config) { c.Store.PurgeIntervalMs = 10 }, "store.purgeIntervalMs"},
		{"redis timeout", func(c *Config) { c.Redis.TimeoutMs = 0 }, "redis.timeoutMs"},
		{"redis session timeout", func(c *Config) { c.Redis.SessionTimeoutMs = 0 }, "redis.sessionTimeoutMs"},
		{"redis background timeout", func(c *Config) { c.Redis.BackgroundTimeoutMs = 60_001 }, "redis.backgroundTimeoutMs"},
		{"redis mode", func(c *Config) { c.Redis.Mode = "ring" }, "redis.mode"},
		{"sentinel url without its master", func(c *Config) { c.Redis.Mode, c.RedisURL = "sentinel", "redis://s1:26379" }, "redisURL"},
		{"cluster url with a database", func(c *Config) { c.Redis.Mode, c.RedisURL = "cluster", "redis://n1:6379?db=1" }, "redisURL"},
		{"redis ttl", func(c *Config) { c.Redis.TtlMs = 1 }, "redis.ttlMs"},
		{"redis prefix empty", func(c *Config) { c.Redis.KeyPrefix = "" }, "redis.keyPrefix"},
		{"redis prefix with a brace", func(c *Config) { c.Redis.KeyPrefix = "team{a}:" }, "redis.keyPrefix"},
		{"redis prefix with a space", func(c *Config) { c.Redis.KeyPrefix = "team a:" }, "redis.keyPrefix"},
		{"redis prefix too long", func(c *Config) { c.Redis.KeyPrefix = strings.Repeat("p", 65) }, "redis.keyPrefix"},
		{"trace queue", func(c *Config) { c.Traces.QueueSize = 0 }, "traces.queueSize"},
		{"trace retention", func(c *Config) { c.Traces.RetentionDays = 0 }, "traces.retentionDays"},
		{"no traces in memory", func(c *Config) { c.Traces.MaxInMemory = 0 }, "traces.maxInMemory"},
		{"too many traces in memory", func(c *Config) { c.Traces.MaxInMemory = 10_000_001 }, "traces.maxInMemory"},
		{"negative sample rate", func(c *Config) { c.Traces.SampleRate = -0.5 }, "traces.sampleRate"},
		{"sample rate above 1", func(c *Config) { c.Traces.SampleRate = 2 }, "traces.sampleRate"},
		{"NaN sample rate", func(c *Config) { c.Traces.SampleRate = math.NaN() }, "traces.sampleRate"},
		{"telemetry endpoint without a scheme", func(c *Config) { c.Telemetry.Endpoint = "collector:4318" }, "telemetry.endpoint"},
		{"telemetry endpoint of another scheme", func(c *Config) { c.Telemetry.Endpoint = "ftp://u:pw@collector" }, "telemetry.endpoint"},
		{"telemetry protocol", func(c *Config) { c.Telemetry.Protocol = "thrift" }, "telemetry.protocol"},
		{"telemetry metric interval", func(c *Config) { c.Telemetry.MetricIntervalMs = 10 }, "telemetry.metricIntervalMs"},
		{"database url", func(c *Config) { c.DatabaseURL = "mysql://u:pw@h/db" }, "databaseURL"},
		{"redis url", func(c *Config) { c.RedisURL = "http://u:pw@h" }, "redisURL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("err = %v, want one naming %s", err, tc.key)
			}
			// A URL usually carries a password: it is never echoed.
			if strings.Contains(err.Error(), "pw") {
				t.Errorf("the error echoes a secret: %v", err)
			}
		})
	}
	for _, ok := range []string{"postgres://h/db", "postgresql://u@h:5432/db?sslmode=disable", "host=h dbname=db user=u"} {
		c := Default()
		c.DatabaseURL = ok
		if err := c.Validate(); err != nil {
			t.Errorf("databaseURL %q rejected: %v", ok, err)
		}
	}
}

func TestStateSyncSection(t *testing.T) {
	if err := Default().StateSync.validate(); err != nil {
		t.Fatalf("shipped policies invalid: %v", err)
	}
	path := writeConfig(t, `
stateSync:
  defaults: {cacheControl: immutable}
  policies:
    - {match: "billing.pay", invalidates: ["billing.invoices.*", "reports.balance"]}
`)
	cfg, err := load([]string{"-config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.StateSync.SyncConfig()
	if !cfg.StateSync.Enabled || len(sc.Policies) != 1 || sc.Defaults.CacheControl != "immutable" || len(sc.Policies[0].Invalidates) != 2 {
		t.Errorf("stateSync = %+v", sc)
	}
	for _, tc := range []struct{ name, yaml, key string }{
		{"empty match", `{match: "", cacheControl: no-store}`, "stateSync.policies[0].match"},
		{"bad directive", `{match: "a.b", cacheControl: max-age}`, "stateSync.policies[0].cacheControl"},
		{"bad segment", `{match: "a..b", cacheControl: no-store}`, "stateSync.policies[0].match"},
		{"bad invalidates", `{match: "a.b", invalidates: ["x.*", ""]}`, "stateSync.policies[0].invalidates[1]"},
	} {
		path := writeConfig(t, "stateSync:\n  policies:\n    - "+tc.yaml+"\n")
		_, err := load([]string{"-config", path}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: err = %v, want one naming %s", tc.name, err, tc.key)
		}
	}
	// Disabled, the policies are not used and not checked.
	path = writeConfig(t, "stateSync:\n  enabled: false\n  policies:\n    - {match: \"\"}\n")
	if _, err := load([]string{"-config", path}, nil); err != nil {
		t.Errorf("disabled stateSync rejected: %v", err)
	}
}
