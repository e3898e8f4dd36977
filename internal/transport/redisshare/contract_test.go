package redisshare

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	"github.com/mcp-runtime/mcp-runtime/internal/transport/sessiontest"
	"github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// The store keeps the contract of every session store (package
// sessiontest), as the transport's in-memory one does, on a single Redis
// and on a Redis Cluster.
func TestSessionStoreContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		sessiontest.Run(t, func(t *testing.T, mods ...func(*transport.Options)) (*transport.Transport, *transporttest.Harness) {
			h := replica(t, rdb, testPrefix(t, rdb), func(c *replicaConfig) {
				for _, m := range mods {
					m(&c.Options)
				}
			})
			return h.tr, h.Harness
		})
	})
}
