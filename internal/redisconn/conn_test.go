package redisconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/netfault"
)

// redisAddr is the Redis the tests use (the one make test starts).
const redisAddr = "127.0.0.1:6379"

func oneStrike() BreakerOptions {
	return BreakerOptions{Window: time.Second, MinOps: 1, FailureRate: 1, Consecutive: 1,
		OpenFor: 50 * time.Millisecond, MaxOpenFor: 50 * time.Millisecond}
}

// Only failures of Redis itself count against its health: not a missing
// key, not a command's own error, not a caller that gave up.
func TestDoCountsOnlyRedisFailures(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		cancel bool // the caller's context ends before fn returns
		opens  bool
	}{
		{"success", nil, false, false},
		{"missing key", redis.Nil, false, false},
		{"the command's own error", fmt.Errorf("eval: %w", proto("ERR wrong number of arguments")), false, false},
		{"a script's error", proto("NOSCRIPT No matching script"), false, false},
		{"our timeout", context.DeadlineExceeded, false, true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, false, true},
		{"a connection cut", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), false, true},
		{"the pool closed", redis.ErrClosed, false, true},
		{"the caller's own error (a value it could not decode)", errors.New("decoding the cached entry: unexpected end of JSON input"), false, false},
		{"a node loading its data", proto("LOADING Redis is loading the dataset in memory"), false, true},
		{"a cluster without a master for a slot", proto("CLUSTERDOWN The cluster is down"), false, true},
		{"a replica promoted away", proto("READONLY You can't write against a read only replica."), false, true},
		{"the caller gave up", context.Canceled, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(redis.NewClient(&redis.Options{Addr: redisAddr}), Options{Timeouts: DefaultTimeouts(), Breaker: oneStrike()})
			t.Cleanup(func() { c.Close(); c.Client().Close() })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := c.Do(ctx, Hot, func(context.Context) error {
				if tt.cancel {
					cancel()
				}
				return tt.err
			})
			if !errors.Is(err, tt.err) {
				t.Fatalf("Do = %v, want %v", err, tt.err)
			}
			if got := !c.Available(); got != tt.opens {
				t.Fatalf("open = %v, want %v", got, tt.opens)
			}
		})
	}
}

// proto is an error as go-redis returns a Redis error reply.
type proto string

func (e proto) Error() string { return string(e) }
func (proto) RedisError()     {}

// Options left at zero take the defaults: a zero bound would fail every
// operation, and the probe, at once, and leave the breaker open for good.
func TestZeroOptions(t *testing.T) {
	c := New(redis.NewClient(&redis.Options{Addr: redisAddr}), Options{})
	t.Cleanup(func() { c.Close(); c.Client().Close() })
	for range 10 {
		if err := c.Do(context.Background(), Hot, func(ctx context.Context) error { return c.Client().Ping(ctx).Err() }); err != nil {
			t.Fatalf("Do with zero options: %v", err)
		}
	}
	if c.Timeout(Hot) != DefaultTimeouts().Hot || !c.Available() {
		t.Fatalf("hot bound %v, available %v", c.Timeout(Hot), c.Available())
	}
}

// Each kind of operation gets its own bound.
func TestDoBoundsEachKind(t *testing.T) {
	c := New(redis.NewClient(&redis.Options{Addr: redisAddr}), Options{
		Timeouts: Timeouts{Hot: 10 * time.Millisecond, Session: 20 * time.Second, Background: 30 * time.Second},
		Breaker:  DefaultBreaker()})
	t.Cleanup(func() { c.Close(); c.Client().Close() })
	for k, want := range map[Kind]time.Duration{Hot: 10 * time.Millisecond, Session: 20 * time.Second, Background: 30 * time.Second} {
		_ = c.Do(context.Background(), k, func(ctx context.Context) error {
			d, ok := ctx.Deadline()
			if left := time.Until(d); !ok || left > want || left < want-time.Second {
				t.Errorf("kind %d: %v left, want about %v", k, left, want)
			}
			return nil
		})
	}
}

// While Redis does not answer, nothing waits on it: after the failures
// that open the breaker, operations fail at once without reaching Redis,
// and the probe closes it when Redis answers again.
func TestBreakerOpensAndProbeCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		health := make(chan bool, 4)
		pings := 0
		c := New(redis.NewClient(&redis.Options{Addr: redisAddr}), Options{Timeouts: DefaultTimeouts(),
			Breaker:  BreakerOptions{Window: 10 * time.Second, MinOps: 20, FailureRate: 0.5, Consecutive: 3, OpenFor: time.Second, MaxOpenFor: 4 * time.Second},
			OnHealth: func(ok bool) { health <- ok }})
		c.ping = func(context.Context) error {
			if pings++; pings < 3 {
				return errors.New("connection refused")
			}
			return nil
		}
		down := func(context.Context) error { return context.DeadlineExceeded }
		for range 3 {
			_ = c.Do(context.Background(), Hot, down)
		}
		if <-health {
			t.Fatal("first health change was not to unavailable")
		}
		called := false
		start := time.Now()
		err := c.Do(context.Background(), Session, func(context.Context) error { called = true; return nil })
		if !errors.Is(err, ErrUnavailable) || called {
			t.Fatalf("Do while open = %v (fn called: %v), want ErrUnavailable without calling fn", err, called)
		}
		if !<-health {
			t.Fatal("second health change was not to available")
		}
		// Probes after 1 s, 2 s (failed) and 4 s (succeeded).
		if got := time.Since(start); got != 7*time.Second {
			t.Fatalf("closed after %v, want 7s", got)
		}
		if err := c.Do(context.Background(), Hot, func(context.Context) error { return nil }); err != nil {
			t.Fatalf("Do after recovery: %v", err)
		}
		c.Close()
		c.Client().Close() // New leaves the client to its owner
	})
}

// Against a real Redis behind a link that stops answering: a hot
// operation gives up at its bound, and the breaker, once open, closes by
// itself when the link answers again.
func TestFrozenRedis(t *testing.T) {
	p := netfault.NewProxy(t, redisAddr)
	health := make(chan bool, 4)
	c := New(redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1}), Options{
		Timeouts: Timeouts{Hot: 50 * time.Millisecond, Session: time.Second, Background: time.Second},
		Breaker:  BreakerOptions{Window: 10 * time.Second, MinOps: 20, FailureRate: 0.5, Consecutive: 3, OpenFor: 20 * time.Millisecond, MaxOpenFor: 100 * time.Millisecond},
		OnHealth: func(ok bool) { health <- ok }})
	t.Cleanup(func() { c.Close(); c.Client().Close() })
	ping := func(ctx context.Context) error { return c.Client().Ping(ctx).Err() }
	if err := c.Do(context.Background(), Hot, ping); err != nil {
		t.Fatalf("ping through the proxy: %v", err)
	}
	p.Freeze()
	for range 3 {
		start := time.Now()
		if err := c.Do(context.Background(), Hot, ping); err == nil {
			t.Fatal("a frozen Redis answered")
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("a hot operation waited %v, bound 50ms", d)
		}
	}
	if ok := <-health; ok {
		t.Fatal("the breaker did not open")
	}
	if err := c.Do(context.Background(), Hot, ping); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Do while open = %v, want ErrUnavailable", err)
	}
	p.Thaw()
	if ok := <-health; !ok {
		t.Fatal("the breaker did not close")
	}
	if err := c.Do(context.Background(), Hot, ping); err != nil {
		t.Fatalf("ping after the link came back: %v", err)
	}
}
