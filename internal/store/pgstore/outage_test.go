package pgstore

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
)

// tcpProxy forwards a local address to PostgreSQL and can drop every
// connection and stop listening, the way a failover or a network
// partition looks to the pool.
type tcpProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
}

func startTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *tcpProxy) forward(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	go func() { _, _ = io.Copy(server, client); server.Close() }()
	_, _ = io.Copy(client, server)
	client.Close()
}

// stop closes the listener and every forwarded connection.
func (p *tcpProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// restart listens again on the same address.
func (p *tcpProxy) restart(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(ln)
}

// With the database gone mid-flight every call fails promptly as
// unavailable and writes nothing; once it is back the same store works.
func TestOutageAndRecovery(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	px := startTCPProxy(t, u.Host)
	u.Host = px.addr
	s := must(Open(t.Context(), u.String(), store.Options{}))(t)
	t.Cleanup(s.Close)
	put := func(ctx context.Context, key string) error {
		_, err := s.PutMemory(ctx, "t", store.PutMemory{Namespace: "ns", Key: key, Value: []byte(`1`)})
		return err
	}
	if err := put(t.Context(), "before"); err != nil {
		t.Fatal(err)
	}

	px.stop()
	for _, key := range []string{"during-1", "during-2", "during-3"} {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		start := time.Now()
		err := put(ctx, key)
		cancel()
		if !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("put during the outage: got %v, want ErrUnavailable", err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("put during the outage took %v", took)
		}
	}

	px.restart(t)
	deadline := time.Now().Add(10 * time.Second)
	for put(t.Context(), "after") != nil {
		if time.Now().After(deadline) {
			t.Fatal("the store did not recover after the database came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, key := range []string{"during-1", "during-2", "during-3"} {
		if _, err := s.GetMemory(t.Context(), "t", "ns", key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a put refused during the outage left %s: %v", key, err)
		}
	}
}
