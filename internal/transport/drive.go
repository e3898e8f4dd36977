package transport

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// A stream's writer (streamWriter, listenWriter) writes what is due a
// pass at a time; producers tell it there is something by a kick, which
// its driver gives them through a hook. Two drivers:
//
//   - drive, for a stream taken over from net/http (detach.go): its
//     connection's goroutine waits in a read for the client to close it
//     and makes a pass in between; a kick makes that read time out (a
//     read deadline in the past). A writer goroutine parked on channels,
//     beside a reader parked on the connection, cost an idle stream a
//     second stack and g, a ticker and channels, about as much as the
//     rest of the stream (BENCHMARKS.md, "10,000 subscribers on one
//     replica").
//   - serveWaiting, for a stream its handler serves (HTTP/2, POST
//     responses): the handler's goroutine waits on a channel a kick
//     fills, the keep-alive ticker and the client's going away.

// serveWaiting serves a stream through its handler: hook gives the
// stream's producers the function that tells it of something to write,
// and pass writes what is due (with a keep-alive comment when ping is
// set) and reports whether the stream has ended. It returns then, or
// when the client has gone away.
func (t *Transport) serveWaiting(s waitingSink, pass func(ping bool) (ended bool), hook func(kick func())) {
	wake := make(chan struct{}, 1)
	hook(func() {
		select {
		case wake <- struct{}{}:
		default: // one pending is enough: a pass writes all that is due
		}
	})
	keepAlive := time.NewTicker(t.opts.KeepAliveInterval)
	defer keepAlive.Stop()
	ping := false
	for !pass(ping) {
		ping = false
		select {
		case <-wake:
		case <-keepAlive.C:
			ping = true
		case <-s.gone():
			return
		}
	}
}

// drive serves a stream taken over from net/http: hook gives the
// stream's producers the function that tells it of something to write,
// and pass writes what is due (with a keep-alive comment when ping is
// set) and reports whether the stream has ended. It returns once the
// client has closed the connection or sent anything on it, a pass ended
// the stream, or the stream's read deadlines turned out not to be its
// own (maxIdleWakes).
func (t *Transport) drive(s *connSink, pass func(ping bool) (ended bool), hook func(kick func())) {
	// The client sends nothing more on the connection: one that sends
	// anything (or had, in what net/http read already) ends its stream,
	// rather than have the server read whatever it sends a byte at a
	// time.
	if s.pending != nil {
		return
	}
	wake := ownDeadlines(s.conn)
	var kicked atomic.Bool
	var kicks atomic.Uint64 // every kick, for the spin guard below
	hook(func() {
		kicks.Add(1)
		// Once per pass: a kick already pending has set the deadline,
		// or is about to.
		if !kicked.Swap(true) {
			_ = wake.SetReadDeadline(time.Unix(1, 0)) // passed: the read ends at once
		}
	})
	// The connection's deadlines are on the wall clock, as a ticker's
	// are: the transport's clock (Options.Now) may be a test's.
	keepAlive := time.Now().Add(t.opts.KeepAliveInterval)
	ping := false
	idle := 0 // reads in a row that timed out with nothing due
	seen := kicks.Load()
	var b [1]byte
	for {
		// The deadline before the flag: a kick that comes after the flag
		// is cleared sets its deadline after this one, so the read below
		// ends; one that came before it is seen by the pass.
		_ = wake.SetReadDeadline(keepAlive)
		kicked.Store(false)
		if pass(ping) {
			return
		}
		ping = false
		if _, err := s.conn.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
			return // the client closed the connection, or sent something
		}
		switch now := time.Now(); {
		case !now.Before(keepAlive):
			ping, keepAlive, idle = true, now.Add(t.opts.KeepAliveInterval), 0
		case kicks.Load() != seen:
			idle = 0
		default:
			// A kick can time a read out once more after the pass that
			// saw it; many reads in a row that no kick since the last
			// explains mean the deadline is not the stream's own (a
			// wrapper ownDeadlines cannot see beneath moves it), and
			// serving on would spin, whether or not events flow. The
			// client reconnects.
			if idle++; idle == maxIdleWakes {
				t.log.Warn().Msg("sse: a taken-over stream's read deadline is not its own; the stream is ended")
				return
			}
		}
		seen = kicks.Load()
	}
}

// maxIdleWakes is how many reads in a row may time out with nothing due
// before a stream is taken to be spinning.
const maxIdleWakes = 100

// ownDeadlines is the connection beneath c to set the stream's own read
// deadlines on: beneath TLS (whose reads honour them) and beneath a
// listener that reads a read deadline as the connection waiting for its
// client (package connlimit: waiting connections are evicted at the cap
// and cut at shutdown; a stream is busy).
func ownDeadlines(c net.Conn) net.Conn {
	for {
		switch u := c.(type) {
		case interface{ Inner() net.Conn }:
			c = u.Inner()
		case interface{ NetConn() net.Conn }: // *tls.Conn
			c = u.NetConn()
		default:
			return c
		}
	}
}
