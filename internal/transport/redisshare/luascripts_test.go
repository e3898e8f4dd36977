package redisshare

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Every script is embedded, and Redis compiles it, as written (PUBLISH)
// and as a store on a cluster loads it (SPUBLISH): a script that does
// not would fail only on the path that first runs it.
func TestLuaScriptsLoad(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	for _, sharded := range []bool{false, true} {
		l, err := loadLuaScripts(sharded)
		if err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]*redis.Script{
			"append": l.append, "flushed": l.flushed, "post_open": l.postOpen, "post_append": l.postAppend,
			"post_orphan": l.postOrphan, "update": l.update, "delete": l.delete, "refresh": l.refresh,
			"rewrite": l.rewrite, "epoch": l.epoch, "await": l.await, "forward": l.forward, "cap_add": l.capAdd,
		} {
			if err := s.Load(context.Background(), rdb).Err(); err != nil {
				t.Errorf("script %s (sharded %v): %v", name, sharded, err)
			}
		}
	}
}

// A script publishes only through publishCall, which a store on a
// cluster turns into SPUBLISH: a PUBLISH written any other way would
// stay a cluster-wide broadcast, on a channel no replica subscribes to.
func TestLuaScriptsPublishOneWay(t *testing.T) {
	err := fs.WalkDir(luaFiles, "lua", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := luaFiles.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(src)
		if n, calls := strings.Count(text, "PUBLISH"), strings.Count(text, publishCall); n != calls {
			t.Errorf("%s: %d mentions of PUBLISH, %d of them %q", path, n, calls, publishCall)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
