package redisshare

import (
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	"github.com/mcp-runtime/mcp-runtime/internal/transport/sessiontest"
	"github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// The store keeps the contract of every session store (package
// sessiontest), as the transport's in-memory one does.
func TestSessionStoreContract(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T, mods ...func(*transport.Options)) (*transport.Transport, *transporttest.Harness) {
		rdb := testRedis(t, testRedisAddr)
		h := replica(t, rdb, testPrefix(t, rdb), func(c *replicaConfig) {
			for _, m := range mods {
				m(&c.Options)
			}
		})
		return h.tr, h.Harness
	})
}
