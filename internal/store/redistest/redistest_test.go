package redistest

import (
	"bufio"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/netfault"
)

func TestStartStopRestart(t *testing.T) {
	s := Start(t)
	if err := ping(s.Addr(), time.Second); err != nil {
		t.Fatalf("started server: %v", err)
	}
	set(t, s.Addr(), "k", "v")
	s.Stop()
	if err := ping(s.Addr(), 200*time.Millisecond); err == nil {
		t.Fatal("stopped server still answers")
	}
	s.Stop() // idempotent
	s.Restart()
	if err := ping(s.Addr(), time.Second); err != nil {
		t.Fatalf("restarted server: %v", err)
	}
	if got := command(t, s.Addr(), "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"); got != "$-1" && got != "_" {
		t.Fatalf("restarted server kept data: GET k = %q", got)
	}
}

// A stalled server accepts connections (the kernel does) but answers
// nothing until it is resumed, and keeps its data.
func TestStall(t *testing.T) {
	s := Start(t)
	set(t, s.Addr(), "k", "v")
	resume := s.Stall()
	err := ping(s.Addr(), 200*time.Millisecond)
	if ne, ok := errors.AsType[net.Error](err); !ok || !ne.Timeout() {
		t.Fatalf("PING to a stalled server: got %v, want a timeout", err)
	}
	resume()
	if err := ping(s.Addr(), time.Second); err != nil {
		t.Fatalf("after resume: %v", err)
	}
	if got := command(t, s.Addr(), "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"); got != "$1" {
		t.Fatalf("after resume, GET k = %q, want the value kept", got)
	}
}

func TestShared(t *testing.T) {
	if addr := Shared(t); addr != SharedAddr {
		t.Fatalf("Shared = %q", addr)
	}
}

func TestProxy(t *testing.T) {
	s := Start(t)
	p := netfault.NewProxy(t, s.Addr())
	if err := ping(p.Addr(), time.Second); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	set(t, p.Addr(), "k", "v")

	p.Cut()
	if err := ping(p.Addr(), 200*time.Millisecond); err == nil {
		t.Fatal("a cut proxy still forwards")
	}
	p.Restore()
	if got := command(t, p.Addr(), "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"); got != "$1" {
		t.Fatalf("after Restore, GET k = %q, want the value kept by the server", got)
	}

	p.Freeze()
	if err := ping(p.Addr(), 200*time.Millisecond); err == nil {
		t.Fatal("a frozen proxy still forwards")
	}
	p.Thaw()
	if err := ping(p.Addr(), time.Second); err != nil {
		t.Fatalf("after Thaw: %v", err)
	}
}

func TestBlackhole(t *testing.T) {
	addr := netfault.Blackhole(t)
	start := time.Now()
	if err := ping(addr, 200*time.Millisecond); err == nil {
		t.Fatal("the black hole answered")
	}
	if time.Since(start) < 150*time.Millisecond {
		t.Fatal("the black hole refused instead of hanging")
	}
}

// command sends one RESP command and returns the first line of the reply.
func command(t *testing.T, addr, resp string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(resp)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(line)
}

func set(t *testing.T, addr, k, v string) {
	t.Helper()
	resp := "*3\r\n$3\r\nSET\r\n$" + strconv.Itoa(len(k)) + "\r\n" + k + "\r\n$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"
	if got := command(t, addr, resp); got != "+OK" {
		t.Fatalf("SET %s: %q", k, got)
	}
}
