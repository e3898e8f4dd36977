package redisshare

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Every script is embedded, and Redis compiles it: a script that does
// not would fail only on the path that first runs it.
func TestLuaScriptsLoad(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	l, err := loadLuaScripts()
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*redis.Script{
		"append": l.append, "flushed": l.flushed, "post_open": l.postOpen, "post_append": l.postAppend,
		"post_orphan": l.postOrphan, "update": l.update, "delete": l.delete, "refresh": l.refresh,
		"rewrite": l.rewrite, "epoch": l.epoch, "await": l.await, "forward": l.forward, "cap_add": l.capAdd,
	} {
		if err := s.Load(context.Background(), rdb).Err(); err != nil {
			t.Errorf("script %s: %v", name, err)
		}
	}
}
