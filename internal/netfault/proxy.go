// Package netfault simulates network faults for tests: a TCP proxy that
// can cut (a partition or a crashed peer, refused and reset) or freeze (a
// silent link) the connections through it, and a black hole that accepts
// and never answers. Redis, PostgreSQL and upstream-server outage tests
// all use it.
package netfault

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards TCP connections to target and can cut or freeze them, to
// stand for a network partition: the server behind it keeps its state, so
// a test can check what a client finds there once the partition heals.
type Proxy struct {
	t      testing.TB
	target string
	addr   string

	// every and delay, when every > 0, hold back every every-th chunk
	// of replies (target to client) for delay: a server that answers
	// slowly now and then, as a loaded Redis does.
	every, delay atomic.Int64
	replies      atomic.Int64 // reply chunks forwarded

	mu     sync.Mutex
	thawed *sync.Cond   // signalled by Thaw and Cut
	ln     net.Listener // nil while cut
	frozen bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// NewProxy starts a proxy to target on a free port; it is closed when the
// test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("netfault: proxy: %v", err)
	}
	p := &Proxy{t: t, target: target, addr: ln.Addr().String(), conns: make(map[net.Conn]struct{})}
	p.thawed = sync.NewCond(&p.mu)
	p.serve(ln)
	t.Cleanup(func() {
		p.Cut()
		p.Thaw()
		p.wg.Wait()
	})
	return p
}

// Addr is where clients connect.
func (p *Proxy) Addr() string { return p.addr }

// Cut closes every connection through the proxy and refuses new ones until
// Restore. Cutting a cut proxy does nothing.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return
	}
	_ = p.ln.Close()
	p.ln = nil
	for c := range p.conns {
		_ = c.Close()
	}
	p.thawed.Broadcast() // frozen copies notice the closed connections
}

// Freeze stops forwarding bytes, in both directions, on every connection,
// present and future, without closing any: a silent link, as a half-open
// connection or a black-holing network path is. Thaw forwards what was
// held back and resumes.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = true
}

// Thaw undoes Freeze.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = false
	p.thawed.Broadcast()
}

// SlowReplies holds back every every-th chunk of replies, counted over
// all connections, for delay before forwarding it; every 0 turns it off.
// A chunk is what one read from the target returned: with a
// request-reply protocol such as Redis's, a reply or a few pipelined ones.
func (p *Proxy) SlowReplies(every int, delay time.Duration) {
	p.delay.Store(int64(delay))
	p.every.Store(int64(every))
}

// Replies is the number of reply chunks forwarded so far.
func (p *Proxy) Replies() int64 { return p.replies.Load() }

// Restore accepts connections again, on the same address.
func (p *Proxy) Restore() {
	p.t.Helper()
	p.mu.Lock()
	cut := p.ln == nil
	p.mu.Unlock()
	if !cut {
		return
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("netfault: proxy: listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by Cut
			}
			p.forward(c)
		}
	}()
}

// forward pipes c to a new connection to the target, both ways, until
// either side closes or Cut closes both.
func (p *Proxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, up) {
		return
	}
	for _, pair := range [][2]net.Conn{{up, c}, {c, up}} {
		p.wg.Add(1)
		go func(dst, src net.Conn) {
			defer p.wg.Done()
			p.copy(dst, src, src == up)
			// Closing both ends makes the other copy stop too.
			_ = dst.Close()
			_ = src.Close()
			p.untrack(dst, src)
		}(pair[0], pair[1])
	}
}

// copy forwards src to dst until either fails, holding each chunk back
// while the proxy is frozen, and replies as SlowReplies says.
func (p *Proxy) copy(dst, src net.Conn, replies bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitThawed(src) {
				return
			}
			if every := p.every.Load(); replies && every > 0 && p.replies.Add(1)%every == 0 {
				time.Sleep(time.Duration(p.delay.Load())) // the fault itself: a slow reply
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitThawed blocks while the proxy is frozen; false if c was closed
// meanwhile (by Cut).
func (p *Proxy) waitThawed(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.frozen {
		if _, open := p.conns[c]; !open || p.ln == nil {
			return false
		}
		p.thawed.Wait()
	}
	return true
}

// track registers the pair, or closes it if the proxy was cut meanwhile.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

// Blackhole returns the address of a listener that accepts connections and
// never answers, like a server stuck in a long command or a network path
// that drops every reply. It is closed when the test ends.
func Blackhole(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("netfault: blackhole: %v", err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}
