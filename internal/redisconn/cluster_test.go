package redisconn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

// A group's keys live in one slot, so a script over all of them runs on
// the cluster; without the tag the same script is refused (CROSSSLOT).
// Sharded pub/sub reaches a subscriber through the node owning the slot.
func TestCluster(t *testing.T) {
	c, err := Open(Options{Mode: Cluster, URL: redistest.ClusterURL(t), KeyPrefix: "redisconn-test:", Timeouts: DefaultTimeouts(), Breaker: DefaultBreaker()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc, ok := c.Client().(*redis.ClusterClient)
	if !ok {
		t.Fatalf("cluster mode built a %T", c.Client())
	}
	if err := cc.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error { return shard.Ping(ctx).Err() }); err != nil {
		t.Fatalf("pinging every shard: %v", err)
	}

	script := redis.NewScript(`redis.call('SET', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[1]); return redis.call('MGET', KEYS[1], KEYS[2])`)
	k := c.Keys()
	id := "s-" + strings.ReplaceAll(t.Name(), "/", "-")
	tagged := []string{k.Tagged("session", id, "a"), k.Tagged("session", id, "b")}
	t.Cleanup(func() { cc.Del(context.Background(), tagged...) })
	if err := c.Do(ctx, Session, func(ctx context.Context) error { return script.Run(ctx, c.Client(), tagged, "v").Err() }); err != nil {
		t.Fatalf("a script over one group's keys: %v", err)
	}
	var untagged []string
	for i := 0; len(untagged) < 2; i++ { // two keys in different slots
		key := k.Key("loose", id, string(rune('a'+i)))
		if len(untagged) == 0 || Slot(key) != Slot(untagged[0]) {
			untagged = append(untagged, key)
		}
	}
	err = c.Do(ctx, Session, func(ctx context.Context) error { return script.Run(ctx, c.Client(), untagged, "v").Err() })
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over keys of two slots = %v, want CROSSSLOT", err)
	}
	if !c.Available() {
		t.Fatal("a command's own error (CROSSSLOT) opened the breaker")
	}

	channel := k.Tagged("events", id)
	sub := cc.SSubscribe(ctx, channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatalf("ssubscribe: %v", err)
	}
	if err := cc.SPublish(ctx, channel, "hello").Err(); err != nil {
		t.Fatalf("spublish: %v", err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "hello" {
		t.Fatalf("sharded message = %v, %v", msg, err)
	}
}
