package tiered

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
)

// probe runs until stop: whenever the tier turns degraded it replays the
// invalidations Redis missed, and only then lets calls use Redis again.
// It replays at once while the connection deems Redis healthy (one write
// lost to a slow reply costs a moment, not a backoff); otherwise, and
// after a failed replay, it waits a backoff (tune.minBackoff doubling to
// tune.maxBackoff) or until the connection's probe finds Redis back
// (the wake the tier's Watch sends), whichever comes first.
func (t *tier2) probe(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-t.wake:
		}
		backoff := t.tune.minBackoff
		for t.degraded.Load() {
			if t.conn.Available() {
				err := t.recover(stop)
				if err == nil {
					break
				}
				t.log.Debug().Err(err).Dur("backoff", backoff).Msg("tiered: redis still unavailable")
			}
			if !wait(stop, t.wake, backoff) {
				return
			}
			backoff = min(2*backoff, t.tune.maxBackoff)
		}
	}
}

// recover replays what is pending until nothing is, then clears degraded
// under the same lock writers take to add to pending.
func (t *tier2) recover(stop <-chan struct{}) error {
	for {
		t.mu.Lock()
		keys, all := t.pending, t.flushAll
		if len(keys) == 0 && !all {
			t.degraded.Store(false)
			down := time.Since(t.since)
			t.mu.Unlock()
			t.log.Info().Dur("degradedFor", down).Msg("tiered: redis is back; using it again")
			return nil
		}
		t.pending, t.flushAll = make(map[ckey]struct{}), false
		t.replaying, t.replayingAll = len(keys), all
		t.mu.Unlock()

		err := t.replay(stop, keys, all)
		t.mu.Lock()
		t.replaying, t.replayingAll = 0, false
		if err != nil { // owed again, in the same critical section
			if all {
				t.flushAll = true
				clear(t.pending)
			}
			for k := range keys {
				t.rememberLocked(k)
			}
		}
		t.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// replay applies missed invalidations: a tombstone and a message per key,
// or, after an overflow, two passes that drop every key of ours,
// populateGuard apart, so that a populate already on its way when the
// first ran cannot survive, each followed by a message that empties every
// replica's tier 1.
func (t *tier2) replay(stop <-chan struct{}, keys map[ckey]struct{}, all bool) error {
	if !all {
		list := make([]ckey, 0, len(keys))
		for k := range keys {
			list = append(list, k)
		}
		if err := t.tombstoneBatches(context.Background(), list, redisconn.Background); err != nil {
			return fmt.Errorf("replay %d invalidations: %w", len(list), err)
		}
		return nil
	}
	for pass := range 2 {
		if pass == 1 && !sleep(stop, t.guard) {
			return fmt.Errorf("flush: %w", context.Canceled)
		}
		if err := t.dropAll(); err != nil {
			return fmt.Errorf("flush every cached key: %w", err)
		}
		err := t.conn.Do(context.Background(), redisconn.Background, func(ctx context.Context) error {
			return t.rdb.Publish(ctx, t.channel, flushMessage).Err()
		})
		if err != nil {
			return fmt.Errorf("publish flush: %w", err)
		}
		t.published.Add(1)
	}
	t.log.Warn().Int("limit", t.tune.maxPending).Msg("tiered: too many invalidations missed while redis was down; dropped every cached key")
	return nil
}

// dropAll unlinks every key under the prefix, on every node of a cluster
// or ring.
func (t *tier2) dropAll() error {
	ctx := context.Background()
	switch c := t.rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return t.dropAllOn(n) })
	case *redis.Ring:
		return c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return t.dropAllOn(n) })
	}
	return t.dropAllOn(t.rdb)
}

func (t *tier2) dropAllOn(c redis.Cmdable) error {
	match := globEscape(t.prefix) + "*"
	var cursor uint64
	for {
		var next uint64
		err := t.conn.Do(context.Background(), redisconn.Background, func(ctx context.Context) error {
			var keys []string
			var err error
			keys, next, err = c.Scan(ctx, cursor, match, 1000).Result()
			if err != nil || len(keys) == 0 {
				return err
			}
			// One UNLINK per key, pipelined: a cluster node refuses one
			// command over keys of several slots (CROSSSLOT), and a
			// page of SCAN holds keys of any slot the node owns.
			_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range keys {
					p.Unlink(ctx, k)
				}
				return nil
			})
			return err
		})
		if err != nil {
			return err
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// globEscape quotes the characters SCAN's MATCH treats as patterns.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// wait waits d or until wake (a nil wake never comes); false if stop
// closed first.
func wait(stop <-chan struct{}, wake <-chan struct{}, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-stop:
		return false
	case <-wake:
		return true
	case <-tm.C:
		return true
	}
}

// sleep waits d; false if stop closed first.
func sleep(stop <-chan struct{}, d time.Duration) bool { return wait(stop, nil, d) }
