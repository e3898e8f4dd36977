package connlimit

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is a Listener on loopback whose Accept runs in the background:
// each admitted connection arrives on accepted, in order.
type harness struct {
	t        *testing.T
	l        *Listener
	clock    *clock
	accepted chan net.Conn
}

func newHarness(t *testing.T, max int) *harness {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	l, err := New(inner, Options{Max: max, Now: clk.Now, Refusal: ServiceUnavailable(`{"error":"full"}`)})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, l: l, clock: clk, accepted: make(chan net.Conn, max+4)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			h.accepted <- c
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for {
			select {
			case c := <-h.accepted:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return h
}

// dial connects a client.
func (h *harness) dial() net.Conn {
	h.t.Helper()
	c, err := net.Dial("tcp", h.l.Addr().String())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	return c
}

// admitted dials and returns the server's side of the admitted connection.
func (h *harness) admitted() (client, server net.Conn) {
	h.t.Helper()
	client = h.dial()
	select {
	case server = <-h.accepted:
	case <-time.After(10 * time.Second):
		h.t.Fatal("the connection was not admitted")
	}
	return client, server
}

// readAll reads what the server sends until it closes the connection.
func readAll(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a hang guard, not an expectation
	b, err := io.ReadAll(c)
	if err != nil && !isReset(err) {
		t.Fatalf("read: %v (got %q)", err, b)
	}
	return string(b)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

// At the cap, with every connection busy or only just waiting, a new
// connection is answered 503 and closed; once one has waited MinWait, a
// new connection takes its place and it is closed.
func TestCapRefusesThenEvicts(t *testing.T) {
	h := newHarness(t, 2)
	stalledClient, stalled := h.admitted()
	_ = stalled.SetReadDeadline(h.clock.Now().Add(time.Hour)) // waits for its client
	busyClient, busy := h.admitted()
	_ = busy.SetReadDeadline(time.Time{}) // a handler works

	if got := readAll(t, h.dial()); !strings.HasPrefix(got, "HTTP/1.1 503 ") || !strings.HasSuffix(got, `{"error":"full"}`) {
		t.Fatalf("a connection over the cap got %q, want the 503", got)
	}
	if s := h.l.Stats(); s.Open != 2 || s.Refused != 1 || s.Evicted != 0 {
		t.Fatalf("stats %+v after a refusal", s)
	}

	h.clock.advance(time.Second)
	_, _ = h.admitted()
	if got := readAll(t, stalledClient); got != "" {
		t.Errorf("the evicted connection got %q, want it closed", got)
	}
	if s := h.l.Stats(); s.Open != 2 || s.Evicted != 1 {
		t.Fatalf("stats %+v after an eviction", s)
	}
	// The busy connection was not touched: its client's bytes arrive.
	if _, err := busyClient.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := busy.Read(make([]byte, 1)); err != nil {
		t.Fatalf("the busy connection: %v", err)
	}
}

// A connection stalled inside a request is given up before one idle
// between requests, even if the idle one has waited longer; among equals
// the longest wait goes first.
func TestEvictionOrder(t *testing.T) {
	h := newHarness(t, 3)
	idleClient, idle := h.admitted()
	_ = idle.SetReadDeadline(h.clock.Now().Add(time.Hour))
	h.l.ConnState(idle, http.StateIdle)
	h.clock.advance(time.Second)
	olderClient, older := h.admitted()
	_ = older.SetReadDeadline(h.clock.Now().Add(time.Hour))
	h.clock.advance(time.Second)
	newerClient, newer := h.admitted()
	_ = newer.SetReadDeadline(h.clock.Now().Add(time.Hour))
	h.clock.advance(time.Second)

	for i, want := range []net.Conn{olderClient, newerClient, idleClient} {
		_, fresh := h.admitted()
		_ = fresh.SetReadDeadline(time.Time{}) // busy: never given up
		if got := readAll(t, want); got != "" {
			t.Fatalf("eviction %d: got %q", i, got)
		}
	}
	if got := readAll(t, h.dial()); !strings.HasPrefix(got, "HTTP/1.1 503 ") {
		t.Fatalf("with every connection busy: %q, want 503", got)
	}
}

// Drain cuts the reads of waiting connections at once, and of those that
// wait later, and leaves busy ones alone.
func TestDrain(t *testing.T) {
	h := newHarness(t, 4)
	_, waiting := h.admitted()
	_ = waiting.SetReadDeadline(time.Now().Add(time.Hour))
	busyClient, busy := h.admitted()
	_ = busy.SetReadDeadline(time.Time{})
	cut := make(chan error, 1)
	go func() {
		_, err := waiting.Read(make([]byte, 1))
		cut <- err
	}()

	h.l.Drain()
	if err := <-cut; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("waiting read after Drain: %v, want a deadline error", err)
	}
	if _, err := busyClient.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := busy.Read(make([]byte, 1)); err != nil {
		t.Fatalf("busy read after Drain: %v", err)
	}
	_ = busy.SetReadDeadline(time.Now().Add(time.Hour)) // starts waiting after Drain
	if _, err := busy.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a wait begun after Drain: %v, want a deadline error", err)
	}
}

// Closing a connection frees its place; closing it twice is harmless.
func TestCloseFreesThePlace(t *testing.T) {
	h := newHarness(t, 1)
	_, c := h.admitted()
	_ = c.SetReadDeadline(time.Time{})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	_, _ = h.admitted()
	if s := h.l.Stats(); s.Open != 1 || s.Refused != 0 || s.Evicted != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestNewRefusesNoCap(t *testing.T) {
	if _, err := New(nil, Options{}); err == nil {
		t.Fatal("Max 0 accepted")
	}
}

// An HTTP/2 connection idle between streams sets no read deadline, yet it
// is waiting for its client: at the cap a new client takes its place, so
// idle HTTP/2 connections cannot hold every place until their idle timeout.
func TestIdleHTTP2ConnectionGivesWay(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	l, err := New(inner, Options{Max: 1, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}))
	ts.Listener = l
	ts.EnableHTTP2 = true
	idle := make(chan struct{}, 8)
	ts.Config.ConnState = func(c net.Conn, s http.ConnState) {
		l.ConnState(c, s)
		if s == http.StateIdle {
			idle <- struct{}{}
		}
	}
	ts.StartTLS()
	defer ts.Close()

	get := func(c *http.Client) (string, error) {
		resp, err := c.Get(ts.URL)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	first := ts.Client()
	if proto, err := get(first); err != nil || proto != "HTTP/2.0" {
		t.Fatalf("first client: %q, %v", proto, err)
	}
	// The server marks the connection idle when it starts serving
	// HTTP/2, and again once the stream is closed.
	for i := range 2 {
		select {
		case <-idle:
		case <-time.After(10 * time.Second): // a hang guard
			t.Fatalf("idle state %d never came", i+1)
		}
	}
	clk.advance(2 * time.Second)
	second := &http.Client{Transport: first.Transport.(*http.Transport).Clone()}
	defer second.CloseIdleConnections()
	if proto, err := get(second); err != nil || proto != "HTTP/2.0" {
		t.Fatalf("a new client at the cap: %q, %v; want the idle HTTP/2 connection to give way", proto, err)
	}
	if s := l.Stats(); s.Evicted != 1 {
		t.Errorf("stats %+v, want one eviction", s)
	}
}
