// Package redisshare shares the transport's client sessions between
// replicas through Redis (DESIGN.md, Scale-out;
// docs/adr/0015-shared-client-sessions.md): it is the transport.Sharing a
// deployment of several replicas gives transport.Options.Share, so that
// any replica serves any request.
//
// A session's state and the event logs of its streams live in Redis; each
// replica keeps a copy of the sessions it serves (redisCopy, the copy's
// transport.Replicator), whose changes it writes through and whose GET
// stream reads the log in Redis (redisLog, log.go), and mirrors the
// streamed POST responses its handlers produce (postLog, postlog.go). The
// key layout is in sessions.go. The Lua scripts, in lua/*.lua behind the
// typed wrappers of luascripts.go, keep each change and its announcement
// one atomic step.
//
// The store keeps the contract of package sessiontest, which the
// transport's in-memory store keeps too.
package redisshare

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

// Options configure sharing client sessions through Redis.
type Options struct {
	// KeyPrefix starts every key and channel name (default
	// "mcp-runtime:"); replicas serving the same clients share it.
	KeyPrefix string
	// Timeout bounds each Redis call on a request's path (default
	// 100ms); creating, loading or claiming a session and opening a
	// stream get the session bound of Conn.
	Timeout time.Duration
	// Conn is Redis's health and the bounds of its operations, shared
	// with the process's other users of Redis; nil: each store makes its
	// own from the client, with Timeout as the hot bound.
	Conn *redisconn.Conn
	// tune: tests shorten the background timings.
	tune redisTuning
}

// Sharing shares client sessions through one Redis client: a
// transport.Sharing.
type Sharing struct {
	rdb  redis.UniversalClient
	opts Options
}

// New shares client sessions through rdb, which must be created with
// ContextTimeoutEnabled: true, so that Timeout bounds each call; it is
// not closed.
func New(rdb redis.UniversalClient, o Options) (*Sharing, error) {
	if !contextTimeouts(rdb) {
		return nil, errors.New("redisshare: the Redis client must be created with ContextTimeoutEnabled: true, or Timeout cannot bound its calls")
	}
	o.KeyPrefix = cmp.Or(o.KeyPrefix, "mcp-runtime:")
	o.Timeout = cmp.Or(o.Timeout, 100*time.Millisecond)
	o.tune.poll = cmp.Or(o.tune.poll, time.Second)
	o.tune.minBackoff = cmp.Or(o.tune.minBackoff, time.Second)
	o.tune.maxBackoff = cmp.Or(o.tune.maxBackoff, 10*time.Second)
	o.tune.heartbeat = cmp.Or(o.tune.heartbeat, time.Second)
	return &Sharing{rdb: rdb, opts: o}, nil
}

// Open starts the store of one transport's sessions, which end with ctx:
// its background work (the channel's subscriber, the sweeper, the log
// appender) runs until the store's Close.
func (s *Sharing) Open(ctx context.Context, cfg transport.SharingConfig) (transport.SharedStore, error) {
	return newRedisSessions(ctx, s.rdb, s.opts, cfg)
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
