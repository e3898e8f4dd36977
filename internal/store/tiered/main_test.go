package tiered

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

// discardLogger silences go-redis's own logging (dial failures while a
// test has Redis down), which would otherwise bury test output.
type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

// TestMain fails the package if a test leaves a goroutine behind: every
// Store must stop its subscriber and prober on Close.
func TestMain(m *testing.M) {
	silenceRedis()
	goleak.VerifyTestMain(m)
}
