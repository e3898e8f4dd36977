package tiered

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// probe runs until stop: whenever Redis turns degraded it waits a backoff
// (tune.minBackoff doubling to tune.maxBackoff), PINGs, replays the
// invalidations Redis missed, and only then lets calls use Redis again.
func (t *tier2) probe(stop <-chan struct{}) {
	backoff := t.tune.minBackoff
	for {
		select {
		case <-stop:
			return
		case <-t.wake:
		}
		for t.degraded.Load() {
			if !sleep(stop, backoff) {
				return
			}
			if err := t.recover(stop); err != nil {
				t.log.Debug().Err(err).Dur("backoff", backoff).Msg("tiered: redis still unavailable")
				backoff = min(2*backoff, t.tune.maxBackoff)
				continue
			}
			backoff = t.tune.minBackoff
		}
	}
}

// recover replays what is pending until nothing is, then clears degraded
// under the same lock writers take to add to pending.
func (t *tier2) recover(stop <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), bgTimeout)
	err := t.rdb.Ping(ctx).Err()
	cancel()
	if err != nil {
		return fmt.Errorf("ping: %w", err)
	}
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
		t.mu.Unlock()

		if err := t.replay(stop, keys, all); err != nil {
			t.mu.Lock()
			if all {
				t.flushAll = true
				clear(t.pending)
			}
			for k := range keys {
				t.rememberLocked(k)
			}
			t.mu.Unlock()
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
		if err := t.tombstoneBatches(context.Background(), list, bgTimeout); err != nil {
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
		ctx, cancel := context.WithTimeout(context.Background(), bgTimeout)
		err := t.rdb.Publish(ctx, t.channel, flushMessage).Err()
		cancel()
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
		ctx, cancel := context.WithTimeout(context.Background(), bgTimeout)
		keys, next, err := c.Scan(ctx, cursor, match, 1000).Result()
		if err == nil && len(keys) > 0 {
			err = c.Unlink(ctx, keys...).Err()
		}
		cancel()
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

// sleep waits d; false if stop closed first.
func sleep(stop <-chan struct{}, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-stop:
		return false
	case <-tm.C:
		return true
	}
}
