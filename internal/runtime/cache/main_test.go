package cache

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// cache a test creates must be closed (INV-MCP-XC-003).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
