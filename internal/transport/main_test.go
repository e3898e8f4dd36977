package transport

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// transport's sweeper, stream writers, detached handlers, and the clients'
// connections must all be gone once every harness is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
