package redisconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// Kind is what an operation is for, which sets how long it may wait.
type Kind int

const (
	// Hot operations are on a request's path and have a fallback: cache
	// reads and writes (the database answers), rate limits (the replica
	// counts alone), appending to a session's event log.
	Hot Kind = iota
	// Session operations are what a client waits for and has no
	// fallback for: creating, claiming or loading a shared session,
	// opening a stream.
	Session
	// Background operations run off any request: sweeps, recovery,
	// invalidation fan-out, probes.
	Background
)

// Timeouts bound each kind of operation.
type Timeouts struct {
	Hot, Session, Background time.Duration
}

// DefaultTimeouts are met by a Redis on a loaded host (replies of up to
// about 100 ms were seen on a busy 2-core machine; BENCHMARKS.md), so one
// slow reply is not taken for an outage: the hot path waits at most
// 100 ms, a client's session 1 s.
func DefaultTimeouts() Timeouts {
	return Timeouts{Hot: 100 * time.Millisecond, Session: time.Second, Background: 5 * time.Second}
}

// orDefaults fills each unset bound with DefaultTimeouts' (a zero bound
// would fail every operation, and the probe, at once).
func (t Timeouts) orDefaults() Timeouts {
	d := DefaultTimeouts()
	if t.Hot <= 0 {
		t.Hot = d.Hot
	}
	if t.Session <= 0 {
		t.Session = d.Session
	}
	if t.Background <= 0 {
		t.Background = d.Background
	}
	return t
}

func (t Timeouts) of(k Kind) time.Duration {
	switch k {
	case Session:
		return t.Session
	case Background:
		return t.Background
	}
	return t.Hot
}

// ErrUnavailable is returned without contacting Redis while the breaker
// is open: callers take their fallback at once.
var ErrUnavailable = errors.New("redis unavailable")

// Options configure a Conn.
type Options struct {
	Mode      Mode
	URL       string
	KeyPrefix string
	Timeouts  Timeouts
	Breaker   BreakerOptions
	Log       zerolog.Logger
	// OnHealth, when set, is called with false when the breaker opens and
	// with true when a probe closes it (a metric, a test's signal). It
	// must not block.
	OnHealth func(available bool)
}

// Conn is the process's connection to Redis, shared by its users.
type Conn struct {
	client   redis.UniversalClient
	keys     Keys
	timeouts Timeouts
	breaker  *Breaker
	log      zerolog.Logger
	ping     func(ctx context.Context) error // the probe; a test's stand-in
	owns     bool                            // Close closes the client (Open made it)
	watchers []*func(available bool)         // under mu

	mu      sync.Mutex
	probing bool
	closed  chan struct{}
	wg      sync.WaitGroup
}

// Open builds the client for o (it connects lazily) and a closed breaker.
func Open(o Options) (*Conn, error) {
	client, err := NewClient(o.Mode, o.URL)
	if err != nil {
		return nil, err
	}
	c := New(client, o)
	c.owns = true
	return c, nil
}

// New wraps client, which its caller keeps owning (Close leaves it open),
// as Open does; o.Mode and o.URL are not used.
func New(client redis.UniversalClient, o Options) *Conn {
	o.Timeouts = o.Timeouts.orDefaults()
	c := &Conn{client: client, keys: NewKeys(o.KeyPrefix), timeouts: o.Timeouts,
		breaker: NewBreaker(o.Breaker, time.Now), log: o.Log, closed: make(chan struct{}),
		ping: func(ctx context.Context) error { return client.Ping(ctx).Err() }}
	if o.OnHealth != nil {
		c.watchers = append(c.watchers, &o.OnHealth)
	}
	return c
}

// Client is the go-redis client, for operations Do runs.
func (c *Conn) Client() redis.UniversalClient { return c.client }

// Keys names the deployment's keys.
func (c *Conn) Keys() Keys { return c.keys }

// Timeout is the bound of operations of kind k.
func (c *Conn) Timeout(k Kind) time.Duration { return c.timeouts.of(k) }

// Available reports whether operations go to Redis now (the breaker is
// closed).
func (c *Conn) Available() bool { return c.breaker.Allow() }

// Do runs fn with ctx bounded by kind k's timeout, unless the breaker is
// open (then ErrUnavailable at once), and counts its outcome towards
// Redis's health. redis.Nil and replies that are the command's own error
// (a script's, a wrong type) are answers from a working Redis; a
// cancelled caller says nothing about Redis either.
func (c *Conn) Do(ctx context.Context, k Kind, fn func(ctx context.Context) error) error {
	if !c.breaker.Allow() {
		return ErrUnavailable
	}
	octx, cancel := context.WithTimeout(ctx, c.timeouts.of(k))
	err := fn(octx)
	cancel()
	if ctx.Err() != nil && err != nil {
		// The caller gave up (or its own deadline came first): that says
		// nothing about Redis.
		return err
	}
	c.Observe(err)
	if Unhealthy(err) {
		return fmt.Errorf("redis: %w", err)
	}
	return err
}

// Observe counts the outcome of an operation run without Do (one bounded
// by Timeout, say) towards Redis's health, classified as Do does: nil is
// a success, an Unhealthy error a failure, anything else an answer. A
// cancelled operation counts for nothing.
func (c *Conn) Observe(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	c.record(Unhealthy(err))
}

// Watch adds fn to what is called with false when the breaker opens and
// with true when a probe closes it; fn must not block. The returned stop
// removes it.
func (c *Conn) Watch(fn func(available bool)) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &fn
	c.watchers = append(c.watchers, w)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.watchers = slices.DeleteFunc(c.watchers, func(x *func(bool)) bool { return x == w })
	}
}

// Unhealthy reports whether err says Redis could not serve — a timeout,
// a connection that failed or was closed, an exhausted pool, a node
// loading, failing over or without a master — rather than answering the
// command with an error of its own. Any other error is the caller's (a
// value it could not decode, say): Redis answered.
func Unhealthy(err error) bool {
	switch {
	case err == nil, errors.Is(err, redis.Nil), errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, redis.ErrClosed),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "BUSY "} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
	}
	return false
}

func (c *Conn) record(failed bool) {
	if !c.breaker.Record(failed) {
		return
	}
	c.log.Warn().Msg("redis: too many operations failed; not waiting on it until a probe succeeds")
	c.mu.Lock()
	defer c.mu.Unlock()
	// Under mu, as the probe's call: the calls are in the order of the
	// changes.
	for _, w := range c.watchers {
		(*w)(false)
	}
	select {
	case <-c.closed:
		return
	default:
	}
	if c.probing {
		return
	}
	c.probing = true
	c.wg.Add(1)
	go c.probe()
}

// probe pings Redis while the breaker is open, waiting longer after each
// failure, and closes it on the first success.
func (c *Conn) probe() {
	defer c.wg.Done()
	for {
		t := time.NewTimer(c.breaker.NextProbe())
		select {
		case <-c.closed:
			t.Stop()
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.timeouts.Background)
		err := c.ping(ctx)
		cancel()
		if err != nil {
			c.breaker.Probed(false)
			continue
		}
		since, _ := c.breaker.OpenSince()
		// Closed and no longer probing in one step: a failure that opens
		// the breaker again right after starts a new probe.
		c.mu.Lock()
		c.breaker.Probed(true)
		c.probing = false
		for _, w := range c.watchers {
			(*w)(true)
		}
		c.mu.Unlock()
		c.log.Info().Dur("after", time.Since(since)).Msg("redis: answering again")
		return
	}
}

// Close stops probing, and closes the client when Open made it.
func (c *Conn) Close() error {
	c.mu.Lock()
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	c.mu.Unlock()
	c.wg.Wait()
	if !c.owns {
		return nil
	}
	return c.client.Close()
}
