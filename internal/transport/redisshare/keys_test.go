package redisshare

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisKeys is the Redis key layout of shared client sessions under a
// prefix (sessions.go draws it): the tests that read or write Redis
// behind the store's back name keys through it and nowhere else.
type redisKeys string

// session is the hash of client session sid.
func (k redisKeys) session(sid string) string { return string(k) + "cs:{" + sid + "}" }

// stream is the log of sid's stream name: "g" for the GET stream, p<n>
// for a POST response.
func (k redisKeys) stream(sid, name string) string { return k.session(sid) + ":" + name }

// answers matches the mailboxes of sid's server-to-client requests.
func (k redisKeys) answers(sid string) string { return k.session(sid) + ":a:*" }

// subs is the reverse index of tenant's sessions subscribed to uri.
func (k redisKeys) subs(tenant, uri string) string {
	return string(k) + "subs:" + strconv.Itoa(len(tenant)) + ":" + tenant + ":" + uri
}

// all matches every key under the prefix.
func (k redisKeys) all() string { return string(k) + "*" }

// The readers below fail the test on a Redis error, so that an error
// never reads as "absent" and lets a negative assertion pass.

func hget(t testing.TB, rdb redis.UniversalClient, key, field string) string {
	t.Helper()
	v, err := rdb.HGet(context.Background(), key, field).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("HGET %s %s: %v", key, field, err)
	}
	return v
}

func hgetInt(t testing.TB, rdb redis.UniversalClient, key, field string) int {
	t.Helper()
	v := hget(t, rdb, key, field)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("HGET %s %s: %q is no number", key, field, v)
	}
	return n
}

func exists(t testing.TB, rdb redis.UniversalClient, key string) bool {
	t.Helper()
	n, err := rdb.Exists(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

func isMember(t testing.TB, rdb redis.UniversalClient, set, member string) bool {
	t.Helper()
	in, err := rdb.SIsMember(context.Background(), set, member).Result()
	if err != nil {
		t.Fatalf("SISMEMBER %s: %v", set, err)
	}
	return in
}

// keysMatching lists the keys matching pattern, on every master of a
// cluster.
func keysMatching(t testing.TB, rdb redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		keys, err := rdb.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatalf("KEYS %s: %v", pattern, err)
		}
		return keys
	}
	var mu sync.Mutex
	var keys []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		k, err := node.Keys(ctx, pattern).Result()
		mu.Lock()
		keys = append(keys, k...)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatalf("KEYS %s on each master: %v", pattern, err)
	}
	return keys
}

func hgetAll(t testing.TB, rdb redis.UniversalClient, key string) map[string]string {
	t.Helper()
	h, err := rdb.HGetAll(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	return h
}

// pttl is the key's time to live; negative when the key has none or is
// missing, as PTTL answers.
func pttl(t testing.TB, rdb redis.UniversalClient, key string) time.Duration {
	t.Helper()
	d, err := rdb.PTTL(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return d
}

// mustRedis fails the test if cmd failed: a write that sets up a test's
// state must not fail unnoticed and leave the test asserting on another.
func mustRedis(t testing.TB, cmd redis.Cmder) {
	t.Helper()
	if err := cmd.Err(); err != nil {
		t.Fatalf("%v: %v", cmd.Args(), err)
	}
}
