package ratelimit

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
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
// <prefix>rl:<key>, each alone in its slot (one key per script call, so
// Redis Cluster needs no hash tag). A call Redis cannot answer within the
// connection's hot bound, or any call while the connection's breaker is
// open, is decided by the in-process fallback and counted: rate limits
// never wait on a Redis that is down (docs/adr/0044-one-redis-foundation.md).
type Redis struct {
	conn     *redisconn.Conn
	fallback *Local
	log      zerolog.Logger
	// fallbacks counts decisions taken locally because Redis failed.
	fallbacks atomic.Int64
	// down is set while Redis fails, so the outage is logged once.
	down atomic.Bool
}

// NewRedis returns a store over conn; fallback decides while Redis cannot.
func NewRedis(conn *redisconn.Conn, fallback *Local, log zerolog.Logger) *Redis {
	return &Redis{conn: conn, fallback: fallback, log: log}
}

// Allow spends one request of key's bucket at rate r.
func (s *Redis) Allow(ctx context.Context, key string, r Rate) Decision {
	if r.Off() {
		return Decision{Allowed: true}
	}
	var res []int64
	err := s.conn.Do(ctx, redisconn.Hot, func(ctx context.Context) error {
		var err error
		res, err = gcraScript.Run(ctx, s.conn.Client(), []string{s.conn.Keys().Key("rl", key)},
			strconv.FormatInt(r.interval().Microseconds(), 10), strconv.FormatInt(r.tolerance().Microseconds(), 10)).Int64Slice()
		return err
	})
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
