// Package redistest gives tests a Redis of their own: Start runs a private
// redis-server child process on a free port, so a test can kill and
// restart it without disturbing any other test; Shared returns the
// machine's shared Redis for tests that only need a server. To cut the
// network or make it hang, put an internal/netfault proxy in between.
//
// Private servers keep nothing on disk (--save "" --appendonly no), so a
// Restart comes back empty, like a cache node replaced by the orchestrator,
// and accept DEBUG from localhost, so a test can stall one with DEBUG
// SLEEP.
package redistest

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// startTimeout bounds how long Start and Restart wait for PING to answer.
const startTimeout = 10 * time.Second

// Server is a redis-server child process owned by one test.
type Server struct {
	t    testing.TB
	port int
	dir  string
	args []string // more arguments of redis-server (a cluster node's)

	mu   sync.Mutex
	proc *process // nil while stopped
}

// process is one run of redis-server. exited receives cmd.Wait's result
// once: a goroutine owns Wait so that start can notice an early exit.
type process struct {
	cmd    *exec.Cmd
	exited chan error
	out    *bytes.Buffer // the server's output, for failure messages
}

// Start runs a private redis-server on a free port and waits until it
// answers PING. It is killed when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redistest: redis-server is not on PATH (apt-get install redis-server): %v", err)
	}
	s := &Server{t: t, dir: t.TempDir()}
	// Another process may take the free port between our probe and the
	// server's bind, so try a few ports before giving up.
	var err error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			break
		}
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: start: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Stop kills the server with SIGKILL, as a crash or a lost node would, and
// waits for it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	_ = s.proc.cmd.Process.Kill()
	<-s.proc.exited // the error is the kill's
	s.proc = nil
}

// Stall stops the server with SIGSTOP until resume is called (SIGCONT):
// it keeps its connections and its data but answers nothing, as a server
// stuck in a long command or a fork under memory pressure would. Unlike
// DEBUG SLEEP, the stall is in force when Stall returns, so a test needs
// no pause for it to begin, and it lasts exactly until resume. A server
// still stalled when the test ends is killed like any other.
func (s *Server) Stall() (resume func()) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		s.t.Fatal("redistest: stall: the server is stopped")
	}
	p := s.proc
	if err := stop(p.cmd.Process); err != nil {
		s.t.Fatalf("redistest: stall: %v", err)
	}
	return func() {
		s.t.Helper()
		if err := cont(p.cmd.Process); err != nil {
			s.t.Fatalf("redistest: resume: %v", err)
		}
	}
}

// Restart stops the server if it runs and starts a new, empty one on the
// same port.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	// The killed process's listening socket can take a moment to go.
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.start()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: restart on port %d: %v", s.port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// start launches redis-server on s.port and waits for PING.
func (s *Server) start() error {
	p := &process{exited: make(chan error, 1), out: new(bytes.Buffer)}
	p.cmd = exec.Command("redis-server",
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		// Tests may stall the server with DEBUG SLEEP.
		"--enable-debug-command", "local",
	)
	p.cmd.Args = append(p.cmd.Args, s.args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	setParentDeath(p.cmd)
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("redis-server on port %d: %w", s.port, err)
	}
	go func() { p.exited <- p.cmd.Wait() }()

	addr := s.Addr()
	deadline := time.Now().Add(startTimeout)
	for ping(addr, time.Second) != nil {
		select {
		case err := <-p.exited:
			return fmt.Errorf("redis-server on port %d exited (%v): %s", s.port, err, p.out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = p.cmd.Process.Kill()
			<-p.exited
			return fmt.Errorf("redis-server on port %d did not answer PING within %v: %s", s.port, startTimeout, p.out)
		}
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// freePort asks the kernel for a port nobody listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
