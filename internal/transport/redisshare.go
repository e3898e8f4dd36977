package transport

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
)

// redisOptions configure sharing client sessions through Redis.
type redisOptions struct {
	// keyPrefix starts every key and channel name (default
	// "mcp-runtime:"); replicas serving the same clients share it.
	keyPrefix string
	// timeout bounds each Redis call on a request's path (default
	// 100ms); creating, loading or claiming a session and opening a
	// stream get the session bound of conn.
	timeout time.Duration
	// conn is Redis's health and the bounds of its operations, shared
	// with the process's other users of Redis; nil: each store makes its
	// own from the client, with timeout as the hot bound.
	conn *redisconn.Conn
	// tune: tests shorten the background timings.
	tune redisTuning
}

// redisSharing shares client sessions between replicas through Redis
// (docs/adr/0015-shared-client-sessions.md): their state and their
// streams' event logs live in Redis, so any replica serves any request.
type redisSharing struct {
	rdb  redis.UniversalClient
	opts redisOptions
}

// newRedisSharing shares client sessions through rdb, which must be
// created with ContextTimeoutEnabled: true, so that the timeout bounds
// each call; it is not closed.
func newRedisSharing(rdb redis.UniversalClient, o redisOptions) (*redisSharing, error) {
	if !contextTimeouts(rdb) {
		return nil, errors.New("the Redis client must be created with ContextTimeoutEnabled: true, or RedisTimeout cannot bound its calls")
	}
	o.keyPrefix = cmp.Or(o.keyPrefix, "mcp-runtime:")
	o.timeout = cmp.Or(o.timeout, 100*time.Millisecond)
	o.tune.poll = cmp.Or(o.tune.poll, time.Second)
	o.tune.minBackoff = cmp.Or(o.tune.minBackoff, time.Second)
	o.tune.maxBackoff = cmp.Or(o.tune.maxBackoff, 10*time.Second)
	o.tune.heartbeat = cmp.Or(o.tune.heartbeat, time.Second)
	return &redisSharing{rdb: rdb, opts: o}, nil
}

// Open starts the store of one transport's sessions: its background work
// (the channel's subscriber, the sweeper, the log appender) runs until its
// Close.
func (r *redisSharing) Open(ctx context.Context, cfg SharingConfig) (SharedStore, error) {
	return newRedisSessions(ctx, r.rdb, r.opts, cfg)
}

// contextTimeouts reports whether the client lets a context deadline
// bound its socket reads; clients it cannot inspect get the benefit of
// the doubt.
func contextTimeouts(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return true
}
