package redistest

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// SharedAddr is the Redis every developer machine and CI keeps running.
const SharedAddr = "127.0.0.1:6379"

// sharedStartCmd starts the shared Redis; Shared prints it when the server
// does not answer.
const sharedStartCmd = `redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no`

// Shared returns the shared Redis's address after checking that it answers
// PING, and fails the test with the command that starts it otherwise.
// Other packages' tests use it at the same time: a test must keep to keys
// and channels with a prefix of its own, and must never FLUSHALL.
func Shared(t testing.TB) string {
	t.Helper()
	if err := ping(SharedAddr, 2*time.Second); err != nil {
		t.Fatalf("redistest: the shared Redis at %s does not answer (%v); start it with:\n\t%s", SharedAddr, err, sharedStartCmd)
	}
	return SharedAddr
}

// ping sends PING over RESP and waits for +PONG. It speaks the protocol by
// hand so that this package needs no client library.
func ping(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}
