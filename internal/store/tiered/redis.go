package tiered

import (
	"cmp"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
)

// replayBatch is the scripts per pipeline when replaying invalidations
// or deleting many keys.
const replayBatch = 256

// tuning holds the timings and bounds tests shorten (Options.tune); New
// fills in what is zero from defaultTuning.
type tuning struct {
	tombstoneTTL           time.Duration // capped at RedisTTL
	maxPending             int           // remembered invalidations before "flush all"
	minBackoff, maxBackoff time.Duration // between replays, and between subscription attempts
	pubsubPoll             time.Duration // see subscriber.go
}

var defaultTuning = tuning{
	tombstoneTTL: 10 * time.Second,
	maxPending:   10_000,
	minBackoff:   time.Second,
	maxBackoff:   10 * time.Second,
	pubsubPoll:   time.Second,
}

func (t tuning) withDefaults() tuning {
	d := defaultTuning
	t.tombstoneTTL = cmp.Or(t.tombstoneTTL, d.tombstoneTTL)
	t.maxPending = cmp.Or(t.maxPending, d.maxPending)
	t.minBackoff = cmp.Or(t.minBackoff, d.minBackoff)
	t.maxBackoff = cmp.Or(t.maxBackoff, d.maxBackoff)
	t.pubsubPoll = cmp.Or(t.pubsubPoll, d.pubsubPoll)
	return t
}

// writeScript applies a write to a tier-2 key and publishes it; see
// doc.go. KEYS[1] is the key; ARGV: [1] the new value ("" for a
// tombstone), [2] its version, [3] its TTL in ms, [4] the tombstone TTL in
// ms, [5] the channel ("" for none), [6] the message. The comparison of a
// value with the current one makes a repeated write (a no-op session join)
// leave the cached value alone.
var writeScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
local val = ARGV[1]
local res = 'tombstone'
if val ~= '' and cur == val then
  res = 'same'
elseif val ~= '' then
  if not cur then
    res = 'value'
  else
    local v = string.match(cur, '^V(%-?%d+):')
    if v and tonumber(v) < tonumber(ARGV[2]) then res = 'value' end
  end
end
if res == 'value' then
  redis.call('SET', KEYS[1], val, 'PX', ARGV[3])
elseif res == 'tombstone' then
  redis.call('SET', KEYS[1], 'T', 'PX', ARGV[4])
end
if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[5], ARGV[6]) end
return res
`)

// tier2 is the Redis tier and its failure handling. Its operations go
// through the process's one connection to Redis (redisconn), with the
// hot bound on a caller's path and the background bound off it; while the
// connection's breaker is open, calls skip Redis without waiting.
type tier2 struct {
	conn    *redisconn.Conn
	rdb     redis.UniversalClient // conn's client
	prefix  string
	channel string
	ttl     time.Duration // a value's longest life in Redis
	maxSize int           // a value's longest tier-2 form
	tombTTL time.Duration
	guard   time.Duration    // the longest a read may take and still populate
	now     func() time.Time // Options.Clock: what an entry's expiresAt is judged against
	tune    tuning
	log     zerolog.Logger

	hits, misses, errs, published atomic.Uint64
	oversized                     atomic.Uint64 // values kept out of Redis for their size

	// degraded is set when a write could not reach Redis: until the
	// invalidations it missed are replayed, Redis may hold what the write
	// replaced, and no call may read it there. It is read on every call
	// without the lock; it changes, and pending is touched, only under
	// mu, so that an invalidation cannot be remembered after the prober
	// found nothing left to replay.
	degraded atomic.Bool
	mu       sync.Mutex
	pending  map[ckey]struct{}
	flushAll bool // pending overflowed: drop every key of ours instead
	// replaying and replayingAll are what the prober took out of pending
	// and is replaying now: still owed to Redis until the replay
	// succeeds, so Stats counts them (a replay may start while a call is
	// still failing; pending alone would read 0 meanwhile).
	replaying    int
	replayingAll bool
	since        time.Time // when Redis turned degraded
	wake         chan struct{}
}

func newTier2(o Options, log zerolog.Logger) *tier2 {
	tune := o.tune.withDefaults()
	t := &tier2{
		conn: o.Redis, rdb: o.Redis.Client(), prefix: o.KeyPrefix, channel: o.Channel,
		ttl: o.RedisTTL, maxSize: o.RedisMaxValueBytes, tombTTL: min(tune.tombstoneTTL, o.RedisTTL),
		tune: tune, log: log, now: o.Clock,
		pending: make(map[ckey]struct{}), wake: make(chan struct{}, 1),
	}
	t.guard = t.tombTTL / 2
	return t
}

func (t *tier2) key(k ckey) string { return redisKey(t.prefix, k) }

// usable reports whether a call may read Redis now; a call that may not
// is a fallback and counted as such.
func (t *tier2) usable() bool {
	if t.degraded.Load() || !t.conn.Available() {
		t.errs.Add(1)
		return false
	}
	return true
}

// get reads a key: redis.Nil when absent.
func (t *tier2) get(ctx context.Context, rkey string) (string, error) {
	var v string
	err := t.conn.Do(ctx, redisconn.Hot, func(ctx context.Context) error {
		var err error
		v, err = t.rdb.Get(ctx, rkey).Result()
		return err
	})
	return v, err
}

// populateRedis stores a value read from the store at start, with SET NX
// so that it never overwrites a newer value or a tombstone, and only if
// the read was quick enough for that to hold (see doc.go).
func populateRedis[T entity](ctx context.Context, t *tier2, rkey string, v *T, start time.Time) {
	if time.Since(start) > t.guard {
		return
	}
	_, expires := meta(v)
	ttl, ok := lifetime(expires, t.ttl, t.now())
	if !ok || ttl < time.Millisecond {
		return
	}
	payload, ok := redisPayload(t, v)
	if !ok {
		return
	}
	// A failed populate leaves nothing stale behind (SET NX never
	// replaces a value): it counts as a fallback, and towards Redis's
	// health through the connection, but does not stop reads.
	err := t.conn.Do(ctx, redisconn.Hot, func(ctx context.Context) error { return t.rdb.SetNX(ctx, rkey, payload, ttl).Err() })
	if err != nil && ctx.Err() == nil { // a caller that gave up is no sign of trouble
		t.errs.Add(1)
	}
}

// writeRedis applies a successful write of v, made at start, to k's
// tier-2 key and publishes the invalidation if publish is set. It stores v
// when that is safe and a tombstone otherwise (see doc.go). It runs even
// if the caller has given up: the write is committed, and Redis must not
// go on serving what it replaced.
func writeRedis[T entity](ctx context.Context, t *tier2, k ckey, v *T, start time.Time, publish bool) {
	payload, version, ttl := "", int64(0), time.Duration(0)
	if v != nil && time.Since(start) <= t.guard {
		var expires *time.Time
		version, expires = meta(v)
		var ok bool
		if ttl, ok = lifetime(expires, t.ttl, t.now()); ok && ttl >= t.tombTTL {
			payload, _ = redisPayload(t, v) // "": the tombstone
		}
	}
	t.mu.Lock()
	if t.degraded.Load() {
		t.rememberLocked(k)
		t.mu.Unlock()
		t.errs.Add(1)
		return
	}
	t.mu.Unlock()

	err := t.conn.Do(context.WithoutCancel(ctx), redisconn.Hot, func(ctx context.Context) error {
		return writeScript.Run(ctx, t.rdb, []string{t.key(k)}, t.scriptArgs(k, payload, version, ttl, publish)...).Err()
	})
	if err != nil {
		t.mu.Lock()
		t.rememberLocked(k)
		t.mu.Unlock()
		t.fail(err)
		return
	}
	if publish {
		t.published.Add(1)
	}
}

// redisPayload returns v's tier-2 form, or false when v must not be
// written to Redis: its form would be longer than maxSize (counted), or
// it cannot be encoded (logged). A value whose JSON alone is too long is
// not encoded at all.
func redisPayload[T entity](t *tier2, v *T) (string, bool) {
	if jsonLen(v) > t.maxSize {
		t.oversized.Add(1)
		return "", false
	}
	payload, err := encodeValue(v)
	if err != nil {
		t.log.Error().Err(err).Msg("tiered: encode a value for redis")
		return "", false
	}
	if len(payload) > t.maxSize {
		t.oversized.Add(1)
		return "", false
	}
	return payload, true
}

// tombstones drops keys from tier 2 and publishes each, for deletes.
func (t *tier2) tombstones(ctx context.Context, keys []ckey) {
	t.mu.Lock()
	if t.degraded.Load() {
		for _, k := range keys {
			t.rememberLocked(k)
		}
		t.mu.Unlock()
		t.errs.Add(1)
		return
	}
	t.mu.Unlock()
	// As in writeRedis, the delete is done: the caller's cancellation no
	// longer matters.
	if err := t.tombstoneBatches(context.WithoutCancel(ctx), keys, redisconn.Hot); err != nil {
		t.mu.Lock()
		for _, k := range keys { // re-sending the ones that made it is harmless
			t.rememberLocked(k)
		}
		t.mu.Unlock()
		t.fail(err)
	}
}

// tombstoneBatches pipelines the write script over keys, replayBatch at a
// time, each batch within kind's bound: a prefix delete of many keys costs
// a round trip per batch, and must not be mistaken for a slow Redis.
func (t *tier2) tombstoneBatches(ctx context.Context, keys []ckey, kind redisconn.Kind) error {
	for len(keys) > 0 {
		n := min(replayBatch, len(keys))
		err := t.evalBatch(ctx, keys[:n], kind)
		if redis.HasErrorPrefix(err, "NOSCRIPT") { // Redis restarted: scripts are gone
			err = t.conn.Do(ctx, kind, func(ctx context.Context) error { return writeScript.Load(ctx, t.rdb).Err() })
			if err == nil {
				err = t.evalBatch(ctx, keys[:n], kind)
			}
		}
		if err != nil {
			return err
		}
		t.published.Add(uint64(n))
		keys = keys[n:]
	}
	return nil
}

func (t *tier2) evalBatch(ctx context.Context, keys []ckey, kind redisconn.Kind) error {
	return t.conn.Do(ctx, kind, func(ctx context.Context) error {
		_, err := t.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				writeScript.EvalSha(ctx, p, []string{t.key(k)}, t.scriptArgs(k, "", 0, 0, true)...)
			}
			return nil
		})
		return err
	})
}

func (t *tier2) scriptArgs(k ckey, payload string, version int64, ttl time.Duration, publish bool) []any {
	channel, msg := "", ""
	if publish {
		channel, msg = t.channel, encodeMessage(k)
	}
	return []any{
		payload, strconv.FormatInt(version, 10),
		strconv.FormatInt(max(ttl.Milliseconds(), 1), 10), strconv.FormatInt(t.tombTTL.Milliseconds(), 10),
		channel, msg,
	}
}

// rememberLocked notes an invalidation to replay when Redis is back; past
// tune.maxPending keys it gives up on keys and remembers to drop them all.
func (t *tier2) rememberLocked(k ckey) {
	if t.flushAll {
		return
	}
	// The keys being replayed are owed too: counting pending alone let a
	// replay that keeps failing hold maxPending keys more than the bound.
	if len(t.pending)+t.replaying >= t.tune.maxPending {
		t.flushAll = true
		clear(t.pending)
		return
	}
	t.pending[k] = struct{}{}
}

// fail records a write that failed to reach Redis and, on the
// transition, turns the tier degraded and wakes the prober, which replays
// what was missed.
func (t *tier2) fail(err error) {
	t.errs.Add(1)
	t.mu.Lock()
	first := !t.degraded.Load()
	if first {
		t.degraded.Store(true)
		t.since = time.Now()
	}
	t.mu.Unlock()
	if first {
		t.log.Warn().Err(err).Msg("tiered: redis unavailable; serving from the store and skipping redis until it answers again")
		t.nudge()
	}
}

// nudge wakes the prober; it never blocks.
func (t *tier2) nudge() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}
