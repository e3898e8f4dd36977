package upstream

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Backoff bounds of retries and reconnects (INV-MCP-ECO-101). Reconnects
// are capped by Options.MaxBackoff instead of backoffCap.
const (
	backoffBase = 100 * time.Millisecond
	backoffCap  = 5 * time.Second
	// DefaultMaxBackoff is federation.maxBackoffMs's default: a server
	// that comes back is reconnected within about ten seconds.
	DefaultMaxBackoff = 10 * time.Second
)

// backoffFunc returns the pause before retry number n (n >= 1).
type backoffFunc func(n int) time.Duration

// fullJitter is exponential backoff with full jitter: a uniform pause in
// [0, min(cap, base*2^(n-1))]. The jitter keeps many replicas (or many
// servers failing at once) from retrying in lock step.
func fullJitter(n int) time.Duration {
	d := exponential(n, backoffCap)
	return time.Duration(rand.Int64N(int64(d) + 1))
}

// exponential is min(cap, base*2^(n-1)), the pause before attempt n
// (n >= 1) before jitter.
func exponential(n int, cap time.Duration) time.Duration {
	d := backoffBase
	for i := 1; i < n && d < cap; i++ {
		d *= 2
	}
	return min(d, cap)
}

// equalJitter is the pause before reconnect attempt n (n >= 1): uniform in
// [d/2, d] for d = min(cap, base*2^(n-1)). Half of it is jitter, so
// replicas do not reconnect in lock step; the other half keeps a dead
// server from being dialled in a tight loop.
func equalJitter(n int, cap time.Duration) time.Duration {
	d := exponential(n, cap)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// permanentError stops retrying: the failure would repeat (a protocol
// error from the server) or repeating the operation is unsafe.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err} }

// retry runs op at most attempts times, pausing with backoff between
// attempts, and stops early when op succeeds, returns a permanent error or
// ctx ends. It returns the number of attempts made; an *Error in the final
// error gets Attempts set to it, so the message reports it
// (INV-MCP-ECO-101: bounded, and the final failure says how many).
func retry(ctx context.Context, attempts int, backoff backoffFunc, op func(ctx context.Context) error) (int, error) {
	attempts = max(attempts, 1)
	var err error
	n := 0
	for n < attempts {
		if n > 0 {
			t := time.NewTimer(backoff(n))
			select {
			case <-ctx.Done():
				t.Stop()
				return n, withAttempts(err, n)
			case <-t.C:
			}
		}
		n++
		err = op(ctx)
		if err == nil {
			return n, nil
		}
		var p permanentError
		if errors.As(err, &p) {
			return n, withAttempts(p.err, n)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return n, withAttempts(err, n)
}

// withAttempts records n attempts in err's *Error unless it already
// counts more: a call sent once after its connection needed three
// attempts reports three.
func withAttempts(err error, n int) error {
	var e *Error
	if errors.As(err, &e) {
		e.Attempts = max(e.Attempts, n)
	}
	return err
}
