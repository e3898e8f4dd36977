package redisshare

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// stores' subscribers, sweepers and appenders, the transports' stream
// writers and handlers, and the clients' connections must all be gone
// once every replica is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
