// Package connlimit is the listener that bounds the connections an HTTP
// server holds open, and stops waiting for clients that have stopped
// sending.
//
// A connection is waiting while its read deadline is set. net/http sets
// one only while it waits for the client to send something — the TLS
// handshake, a request's headers, the next request on an idle keep-alive
// connection — and the server sets one while it waits for a request body
// (transport.readBodyTimeoutMs). While a handler works, and while a
// response streams, the read deadline is zero: the connection is busy.
// The listener sees every deadline as it is set, because net/http sets
// them on the connections Accept returned; a stream taken over from
// net/http that wakes itself with read deadlines sets them beneath, on
// Inner, and stays busy. An HTTP/2 connection sets none
// while it has no stream open: the ConnState hook counts it waiting then.
//
// At the cap, a new connection takes the place of the connection that has
// waited longest, at least MinWait: first one stalled inside a request or
// before its first one (a client whose request arrives whole never
// waits there for long), then one idle between requests. The one it
// replaces is closed at once. If every connection is busy or has only
// just started waiting, the new one is refused: answered 503 over plain
// HTTP, closed over TLS. So a client holding connections it sends nothing
// on cannot lock out one that uses its own, while connections doing work
// are never cut to make room.
//
// At shutdown, Drain ends every wait, present and future: a connection
// waiting for a body that never comes does not hold the server up until
// its deadline.
package connlimit

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Listener.
type Options struct {
	// Max is the most connections open at once; at least 1.
	Max int
	// MinWait is how long a connection must have waited for its client
	// before a new connection may take its place (default one second).
	MinWait time.Duration
	// Refusal is written to a connection refused at the cap before it is
	// closed (see ServiceUnavailable); nil closes it without a word, as
	// over TLS, where plain bytes would mean nothing to the client.
	Refusal []byte
	// Now is the clock that measures waits; nil means time.Now.
	Now func() time.Time
}

// Stats are a Listener's counters.
type Stats struct {
	// Open is the number of connections open now.
	Open int
	// Evicted counts connections closed to make room for a new one;
	// Refused, new connections turned away because none could be.
	Evicted, Refused int64
}

// Listener wraps a net.Listener; see the package documentation.
type Listener struct {
	net.Listener
	opts     Options
	mu       sync.Mutex
	conns    map[*conn]struct{}
	draining bool
	evicted  atomic.Int64
	refused  atomic.Int64
}

// New wraps inner.
func New(inner net.Listener, opts Options) (*Listener, error) {
	if opts.Max < 1 {
		return nil, fmt.Errorf("connlimit: Max %d: must be at least 1", opts.Max)
	}
	if opts.MinWait <= 0 {
		opts.MinWait = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Listener{Listener: inner, opts: opts, conns: make(map[*conn]struct{}, min(opts.Max, 1024))}, nil
}

// ServiceUnavailable is an HTTP/1.1 503 response carrying body (JSON),
// for Options.Refusal.
func ServiceUnavailable(body string) []byte {
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"+
		"X-Content-Type-Options: nosniff\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// Accept returns the next connection admitted under the cap.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c := l.admit(nc); c != nil {
			return c, nil
		}
	}
}

// admit counts nc in, making room at the cap, or refuses it (nil).
func (l *Listener) admit(nc net.Conn) *conn {
	c := &conn{Conn: nc, l: l}
	l.mu.Lock()
	var victim *conn
	if len(l.conns) >= l.opts.Max {
		if victim = l.longestWaiting(); victim == nil {
			l.mu.Unlock()
			l.refuse(nc)
			return nil
		}
		delete(l.conns, victim) // its place is the new one's from now
	}
	c.ended = l.draining
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	if victim != nil {
		l.evicted.Add(1)
		_ = victim.Close()
	}
	return c
}

// longestWaiting is the connection to give up for a new one, or nil: of
// those that have waited at least MinWait, the one stalled inside or
// before a request that has waited longest, else the one idle between
// requests for longest. One pass, and only at the cap. l.mu is held.
func (l *Listener) longestWaiting() *conn {
	cutoff := l.opts.Now().Add(-l.opts.MinWait).UnixNano()
	var stalled, idle *conn
	var stalledSince, idleSince int64
	for c := range l.conns {
		since := c.since.Load()
		if since == 0 || since > cutoff {
			continue
		}
		if c.idle.Load() {
			if idle == nil || since < idleSince {
				idle, idleSince = c, since
			}
		} else if stalled == nil || since < stalledSince {
			stalled, stalledSince = c, since
		}
	}
	if stalled != nil {
		return stalled
	}
	return idle
}

// refuse answers nc, if the listener has words for it, and closes it.
func (l *Listener) refuse(nc net.Conn) {
	l.refused.Add(1)
	if l.opts.Refusal != nil {
		// A new connection's send buffer is empty: the write does not
		// wait for the client, and the deadline makes sure of it.
		_ = nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = nc.Write(l.opts.Refusal)
	}
	_ = nc.Close()
}

// ConnState is the http.Server's ConnState hook: it tells the listener
// which waiting connections are idle between requests, the last to be
// given up for a new one.
//
// An HTTP/2 connection sets no read deadline while it has no stream open
// (its idle timeout is a timer), so its deadlines alone would show it busy
// for as long as the client keeps it: idle starts its wait here, and a
// stream opening (active) ends it. Over HTTP/1 this agrees with the
// deadlines: idle comes just before the keep-alive deadline is set, and
// active once a request's headers are read and the deadline cleared.
func (l *Listener) ConnState(nc net.Conn, state http.ConnState) {
	if tc, ok := nc.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		nc = tc.NetConn()
	}
	c, ok := nc.(*conn)
	if !ok || c.l != l {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle.Store(state == http.StateIdle)
	switch state {
	case http.StateIdle:
		if c.since.Load() == 0 {
			c.since.Store(l.opts.Now().UnixNano())
		}
	case http.StateActive:
		c.since.Store(0)
	}
}

// Drain ends the wait of every connection waiting for its client, and of
// every one that starts waiting later: its pending read fails at once,
// and net/http answers or closes it as at its own deadline. Call it when
// shutdown begins; requests being handled are not touched.
func (l *Listener) Drain() {
	l.mu.Lock()
	l.draining = true
	all := make([]*conn, 0, len(l.conns))
	for c := range l.conns {
		all = append(all, c)
	}
	l.mu.Unlock()
	for _, c := range all {
		c.end()
	}
}

// Stats returns the listener's counters.
func (l *Listener) Stats() Stats {
	l.mu.Lock()
	open := len(l.conns)
	l.mu.Unlock()
	return Stats{Open: open, Evicted: l.evicted.Load(), Refused: l.refused.Load()}
}

// aLongTimeAgo is a read deadline that has passed: the read fails at once.
var aLongTimeAgo = time.Unix(1, 0)

// conn is an admitted connection.
type conn struct {
	net.Conn
	l *Listener
	// since is when the connection started waiting for its client (unix
	// nanoseconds), 0 while it is busy; idle is set between requests.
	since atomic.Int64
	idle  atomic.Bool
	// mu orders deadline changes with end: a connection that turned busy
	// in between must not have its read cut.
	mu    sync.Mutex
	ended bool // every wait fails at once (Drain)
	once  sync.Once
}

// SetReadDeadline records whether the connection is waiting.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setReadDeadlineLocked(t)
}

func (c *conn) setReadDeadlineLocked(t time.Time) error {
	switch {
	case t.IsZero():
		c.since.Store(0)
	case c.since.Load() == 0:
		c.since.Store(c.l.opts.Now().UnixNano())
	}
	if c.ended && !t.IsZero() {
		t = aLongTimeAgo
	}
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline is SetReadDeadline and SetWriteDeadline.
func (c *conn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.Conn.SetWriteDeadline(t))
}

// end makes every wait of the connection, the current one included,
// fail at once.
func (c *conn) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if c.since.Load() != 0 {
		_ = c.Conn.SetReadDeadline(aLongTimeAgo)
	}
}

// Inner is the connection beneath the listener's accounting: a read
// deadline set on it is not a wait for the client. A response stream
// that sets its own read deadlines to wake itself (package transport) is
// busy, and must not be counted waiting, evicted at the cap or cut by
// Drain.
func (c *conn) Inner() net.Conn { return c.Conn }

// CloseWrite half-closes a TCP connection, as net/http does before it
// closes one whose client may still be sending (so the client reads the
// answer rather than a reset).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close closes the connection and frees its place.
func (c *conn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		err = c.Conn.Close()
	})
	return err
}
