package ratelimit

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// gcraScript is gcra in Redis, on Redis's own clock (TIME), so replicas
// whose clocks disagree still share one bucket. The key holds the
// arrival time in microseconds and expires once the bucket is full again.
// ARGV: interval µs, tolerance µs. Returns {allowed, retry-after µs}.
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval, tolerance = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local nxt = tat + interval
local allowAt = nxt - interval - tolerance
if allowAt > now then return {0, allowAt - now} end
redis.call('SET', KEYS[1], nxt, 'PX', math.ceil((nxt - now) / 1000) + 1)
return {1, 0}
`)

// Redis is the bucket store shared by the replicas. Buckets are keys
// <prefix>rl:<key>; a call Redis cannot answer within timeout is decided
// by the in-process fallback and counted.
type Redis struct {
	rdb      redis.UniversalClient
	prefix   string
	timeout  time.Duration
	fallback *Local
	log      zerolog.Logger
	// fallbacks counts decisions taken locally because Redis failed.
	fallbacks atomic.Int64
	// down is set while Redis fails, so the outage is logged once.
	down atomic.Bool
}

// NewRedis returns a store over rdb; fallback decides while Redis cannot.
func NewRedis(rdb redis.UniversalClient, prefix string, timeout time.Duration, fallback *Local, log zerolog.Logger) *Redis {
	return &Redis{rdb: rdb, prefix: prefix + "rl:", timeout: timeout, fallback: fallback, log: log}
}

// Allow spends one request of key's bucket at rate r.
func (s *Redis) Allow(ctx context.Context, key string, r Rate) Decision {
	if r.Off() {
		return Decision{Allowed: true}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := gcraScript.Run(ctx, s.rdb, []string{s.prefix + key},
		strconv.FormatInt(r.interval().Microseconds(), 10), strconv.FormatInt(r.tolerance().Microseconds(), 10)).Int64Slice()
	if err != nil || len(res) != 2 {
		s.fallbacks.Add(1)
		if s.down.CompareAndSwap(false, true) {
			s.log.Warn().Err(err).Msg("rate limits: Redis did not answer; each replica limits on its own until it does")
		}
		return s.fallback.Allow(key, r)
	}
	if s.down.CompareAndSwap(true, false) {
		s.log.Info().Msg("rate limits: Redis answers again; limits are shared by the replicas")
	}
	if res[0] == 1 {
		return Decision{Allowed: true}
	}
	return Decision{RetryAfter: time.Duration(res[1]) * time.Microsecond}
}

// Fallbacks is the number of decisions taken without Redis.
func (s *Redis) Fallbacks() int64 { return s.fallbacks.Load() }
