package tiered

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/cache"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/memstore"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

func silenceRedis() { redis.SetLogger(discardLogger{}) }

// counting is the wrapped store of the tests: memstore, counting the
// point reads that reach it, so a test can tell which tier answered.
// Replicas share one, as they would share one database.
type counting struct {
	store.Store
	gets   atomic.Int64
	closed atomic.Int64
}

func newBackend() *counting { return newBackendAt(nil) }

// newBackendAt is newBackend reading the time from clock (nil: the wall
// clock); a replica over it takes the same clock, withClock.
func newBackendAt(clock func() time.Time) *counting {
	return &counting{Store: memstore.New(store.Options{Clock: clock})}
}

// stillClock returns a clock that moves only when the test advances it,
// so a TTL's remaining life is exactly what the test set.
func stillClock() *testutil.Clock {
	return testutil.NewClock(time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC), 0)
}

// shortTimeout gives a replica the product's default Redis bounds, for
// the tests whose subject is how long a call waits on a Redis that does
// not answer.
func shortTimeout(t testing.TB) func(*Options) {
	return func(o *Options) { o.Redis = newConn(t, o.Redis.Client(), redisconn.DefaultTimeouts()) }
}

// newConn is a process's connection to Redis over client, with bounds
// timeouts, closed when the test ends (its prober is a goroutine).
func newConn(t testing.TB, client redis.UniversalClient, timeouts redisconn.Timeouts) *redisconn.Conn {
	c := redisconn.New(client, redisconn.Options{Timeouts: timeouts, Log: zerolog.Nop()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// withClock makes a replica judge expiry by clock, its backend's.
func withClock(clock func() time.Time) func(*Options) {
	return func(o *Options) { o.Clock = clock }
}

func (c *counting) GetMemory(ctx context.Context, tenant, ns, key string) (store.MemoryEntry, error) {
	c.gets.Add(1)
	return c.Store.GetMemory(ctx, tenant, ns, key)
}

func (c *counting) GetSession(ctx context.Context, tenant, id string) (store.Session, error) {
	c.gets.Add(1)
	return c.Store.GetSession(ctx, tenant, id)
}

func (c *counting) GetAgent(ctx context.Context, tenant, id string) (store.Agent, error) {
	c.gets.Add(1)
	return c.Store.GetAgent(ctx, tenant, id)
}

// Close is counted, not passed on: replicas share the backend.
func (c *counting) Close() { c.closed.Add(1) }

// newClient returns a client for addr as a deployment would create it,
// closed when the test ends.
func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		DialTimeout:           time.Second,
		MaxRetries:            -1, // a retry would only spend the timeout again
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newReplica is one server process's Store over backend; addr "" means no
// Redis. It is closed when the test ends.
func newReplica(t testing.TB, backend store.Store, addr string, tune ...func(*Options)) *Store {
	t.Helper()
	o := Options{
		L1:        cache.DefaultConfig(),
		Log:       zerolog.Nop(),
		Channel:   "test:" + t.Name() + ":invalidate",
		KeyPrefix: "test:" + t.Name() + ":c:",
	}
	if addr != "" {
		// The default hot bound (100ms) is a latency budget a loaded
		// test machine may overrun, counting against Redis's health in
		// the middle of a test about something else. The tests about a
		// slow or silent Redis set it back with shortTimeout.
		o.Redis = newConn(t, newClient(t, addr), redisconn.Timeouts{Hot: time.Second})
	}
	for _, f := range tune {
		f(&o)
	}
	s, err := New(context.Background(), backend, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// live waits until s's tier 1 is in use, i.e. its subscription is
// confirmed; without that, a test's tier-1 expectations would race the
// subscriber.
func live(t testing.TB, s *Store) {
	t.Helper()
	testutil.Eventually(t, testutil.Wait, "the subscription to be confirmed", func() bool { return s.Stats().L1Live })
}

func put(t testing.TB, s store.Store, tenant, ns, key, value string, ttl time.Duration) store.MemoryEntry {
	t.Helper()
	e, err := s.PutMemory(context.Background(), tenant, store.PutMemory{
		Namespace: ns, Key: key, Value: json.RawMessage(value), Tags: []string{"t"}, TTL: ttl,
	})
	if err != nil {
		t.Fatalf("PutMemory(%s/%s/%s): %v", tenant, ns, key, err)
	}
	return e
}

// get looks up a memory entry and fails the test on an error.
func get(t testing.TB, s *Store, tenant, ns, key string) (store.MemoryEntry, bool) {
	t.Helper()
	e, cached, err := s.LookupMemory(context.Background(), tenant, ns, key)
	if err != nil {
		t.Fatalf("LookupMemory(%s/%s/%s): %v", tenant, ns, key, err)
	}
	return e, cached
}

// wantValue fails unless e holds value.
func wantValue(t testing.TB, e store.MemoryEntry, value string) {
	t.Helper()
	if string(e.Value) != value {
		t.Fatalf("got value %s (version %d), want %s", e.Value, e.Version, value)
	}
}

// rawRedis reads a tier-2 key directly.
func rawRedis(t testing.TB, s *Store, k ckey) (string, bool) {
	t.Helper()
	v, err := s.t2.rdb.Get(context.Background(), s.t2.key(k)).Result()
	if errors.Is(err, redis.Nil) { // absent; any other error fails the test
		return "", false
	}
	if err != nil {
		t.Fatalf("GET %s: %v", s.t2.key(k), err)
	}
	return v, true
}

// logBuffer collects a Store's log lines; zerolog writes from several
// goroutines, hence the lock.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count reports how many lines contain s.
func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// logTo sends a replica's log to l.
func logTo(l *logBuffer) func(*Options) {
	return func(o *Options) { o.Log = zerolog.New(l) }
}
