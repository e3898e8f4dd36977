package netfault

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends one line through addr and reports whether it came back
// within d.
func roundTrip(addr string, d time.Duration) bool {
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "ping\n"
}

func TestProxyCutRestoreFreeze(t *testing.T) {
	p := NewProxy(t, echoServer(t))
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"open", func() {}, true},
		{"cut", p.Cut, false},
		{"cut twice", p.Cut, false},
		{"restored", p.Restore, true},
		{"frozen", p.Freeze, false},
		{"thawed", p.Thaw, true},
	}
	for _, s := range steps {
		s.do()
		if got := roundTrip(p.Addr(), 300*time.Millisecond); got != s.want {
			t.Fatalf("%s: round trip %v, want %v", s.name, got, s.want)
		}
	}
}

func TestBlackholeHangs(t *testing.T) {
	addr := Blackhole(t)
	start := time.Now()
	if roundTrip(addr, 200*time.Millisecond) {
		t.Fatal("the black hole answered")
	}
	if time.Since(start) < 150*time.Millisecond {
		t.Fatal("the black hole refused instead of hanging")
	}
}

// SlowReplies holds back every n-th reply and forwards it intact; requests
// are never held.
func TestProxySlowReplies(t *testing.T) {
	p := NewProxy(t, echoServer(t))
	p.SlowReplies(3, 10*time.Millisecond)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for i := range 9 {
		line := string(rune('a'+i)) + "\n"
		if _, err := c.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadString('\n')
		if err != nil || got != line {
			t.Fatalf("reply %d = %q, %v; want %q", i, got, err, line)
		}
	}
	if n := p.replies.Load(); n != 9 {
		t.Fatalf("%d reply chunks counted, want 9 (3 of them held back)", n)
	}
}
