package redisshare

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// stores' subscribers, sweepers and appenders, the transports' stream
// writers and handlers, and the clients' connections must all be gone
// once every replica is closed.
//
// One goroutine of go-redis is let be: after a dial fails (a cluster node
// the failover tests stop), its pool redials once a second and notices
// that the client was closed only when its sleep ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
