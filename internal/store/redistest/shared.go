package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
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

// EnvCluster names the Redis Cluster the cluster tests use: make test-go
// starts one on loopback (scripts/redis-cluster.sh) and sets it to the
// cluster's URL.
const EnvCluster = "MCP_TEST_REDIS_CLUSTER"

// ClusterURL returns the URL of the test Redis Cluster (redis.mode
// cluster). Without one the test is skipped, unless CI is set: there it
// fails, since make test always starts one and a skip would hide that
// nothing ran against a cluster.
func ClusterURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvCluster)
	switch {
	case u != "":
		return u
	case os.Getenv("CI") == "true":
		t.Fatalf("redistest: %s is not set in CI; make test-go starts a cluster and sets it", EnvCluster)
	default:
		t.Skipf("redistest: %s is not set: run scripts/redis-cluster.sh start and set it to $(scripts/redis-cluster.sh url), as make test-go does", EnvCluster)
	}
	return ""
}
