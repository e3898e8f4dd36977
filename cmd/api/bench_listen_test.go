package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

// The performance targets of subscriptions/listen across replicas,
// recorded in BENCHMARKS.md ("Listen streams"): measurements, not tests
// (MCP_SCALEOUT_BENCH=1), since a figure depends on the machine.

// listenBody is a subscriptions/listen request naming uri.
func listenBody(id int, uri string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"_meta":{"%s":"%s","%s":{}},"notifications":{"resourceSubscriptions":[%q]}}}`,
		id, protocol.MetaProtocolVersion, protocol.Version20260728, protocol.MetaClientCapabilities, uri)
}

// openListenConn opens a listen on a raw connection to addr (host:port)
// and reads up to its acknowledgement; the returned reader continues the
// stream.
func openListenConn(addr string, id int, uri string) (net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	body := listenBody(id, uri)
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Protocol-Version: %s\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s",
		addr, protocol.Version20260728, len(body), body)
	r := bufio.NewReaderSize(c, 1024)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, nil, fmt.Errorf("listen %d: %w", id, err)
		}
		if strings.Contains(line, protocol.NotificationSubscriptionsAcknowledged) {
			_ = c.SetReadDeadline(time.Time{})
			return c, r, nil
		}
		if strings.HasPrefix(line, "HTTP/1.1 ") && !strings.HasPrefix(line, "HTTP/1.1 200") {
			c.Close()
			return nil, nil, fmt.Errorf("listen %d: %s", id, strings.TrimSpace(line))
		}
	}
}

// TestScaleOut_ListenFanout (MCP_SCALEOUT_BENCH=1): three replicas in this
// process share PostgreSQL and Redis (a single node, then a six-node
// Cluster); 1,000 listen streams naming one URI are spread over them; a
// writer changes the URI through replica 1, one mutation at a time. Each
// notification's latency is its receipt minus the moment the mutation's
// response arrived; every notification must arrive.
func TestScaleOut_ListenFanout(t *testing.T) {
	if os.Getenv("MCP_SCALEOUT_BENCH") == "" {
		t.Skip("a measurement, not a test: set MCP_SCALEOUT_BENCH=1 (see BENCHMARKS.md)")
	}
	t.Run("single node", func(t *testing.T) {
		cfg := config.Default()
		cfg.RedisURL = "redis://" + redistest.Start(t).Addr() + "/0"
		listenFanout(t, cfg)
	})
	t.Run("cluster", func(t *testing.T) {
		cfg := config.Default()
		cfg.RedisURL, cfg.Redis.Mode = redistest.StartCluster(t).URL(), "cluster"
		listenFanout(t, cfg)
	})
}

func listenFanout(t *testing.T, cfg config.Config) {
	const listeners, mutations, gap = 1000, 100, 20 * time.Millisecond
	const uri = "memory://default/fan"
	cfg.DatabaseURL = pgtest.NewDatabase(t)
	cfg.Transport.MaxConnections = 4 * listeners
	var urls [3]string
	for i := range urls {
		urls[i], _ = fanServer(t, cfg)
	}
	var mu sync.Mutex
	var answered []time.Time // when mutation n's response arrived
	var lat []time.Duration
	received := 0
	var readers sync.WaitGroup
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
		readers.Wait()
	})
	for i := range listeners {
		addr := strings.TrimSuffix(strings.TrimPrefix(urls[i%3], "http://"), "/mcp")
		c, r, err := openListenConn(addr, i, uri)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		readers.Go(func() {
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if !strings.Contains(line, protocol.NotificationResourcesUpdated) {
					continue
				}
				now := time.Now()
				mu.Lock()
				received++
				// The mutation that caused it is the latest answered one,
				// or the one in flight: one mutation at a time.
				if n := len(answered); n > 0 {
					lat = append(lat, max(now.Sub(answered[n-1]), 0))
				}
				mu.Unlock()
			}
		})
	}
	post := func(body string) {
		req, _ := http.NewRequest(http.MethodPost, urls[0], strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", protocol.Version20260728)
		req.Header.Set(protocol.HeaderMethod, "tools/call")
		req.Header.Set(protocol.HeaderName, "memory_store")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		_, _ = out.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(out.String(), `"success":true`) {
			t.Fatalf("memory_store: %d %s", resp.StatusCode, out.String())
		}
	}
	for n := range mutations {
		// Wait for the previous mutation's notifications to be in, so that
		// each is charged to its own mutation.
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			got := received
			mu.Unlock()
			if got >= n*listeners || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(gap)
		post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_store","arguments":{"key":"fan","value":%d},"_meta":{"%s":"%s","%s":{}}}}`,
			n, n, protocol.MetaProtocolVersion, protocol.Version20260728, protocol.MetaClientCapabilities))
		mu.Lock()
		answered = append(answered, time.Now())
		mu.Unlock()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := received
		mu.Unlock()
		if got >= mutations*listeners || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(int(p*float64(len(lat))), len(lat)-1)]
	}
	t.Logf("%d listen streams over 3 replicas, %d mutations through replica 1: received %d of %d; from the mutation's response: p50 %v p99 %v max %v",
		listeners, mutations, received, mutations*listeners, pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), pct(1).Round(time.Microsecond))
	if received != mutations*listeners {
		t.Errorf("received %d notifications, want %d", received, mutations*listeners)
	}
}

// TestScaleOut_IdleListens (MCP_SCALEOUT_BENCH=1) runs the cmd/api binary
// with default settings (the embedded store, no Redis; the connection cap
// raised to hold the streams) and opens 10,000 listen streams on it from
// this process, then leaves them idle for two keep-alive periods: the
// server's RSS before and after, per stream, and its CPU per second while
// it only sends keep-alives.
func TestScaleOut_IdleListens(t *testing.T) {
	if os.Getenv("MCP_SCALEOUT_BENCH") == "" {
		t.Skip("a measurement, not a test: set MCP_SCALEOUT_BENCH=1 (see BENCHMARKS.md)")
	}
	const streams = 10_000
	addr, pid := startBinary(t, "transport:\n  maxConnections: 12000\n")
	const idle = 35 * time.Second // two keep-alive periods and more
	ticks := 100.0                // USER_HZ on Linux
	base0 := cpuTicks(t, pid)
	time.Sleep(idle)
	base := float64(cpuTicks(t, pid)-base0) / ticks / idle.Seconds()
	before := rssKiB(t, pid)
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	start := time.Now()
	for i := range streams {
		c, _, err := openListenConn(addr, i, "memory://default/idle")
		if err != nil {
			t.Fatalf("after %d streams: %v", i, err)
		}
		conns = append(conns, c) // never read again: the kernel buffers the keep-alives
	}
	opened := time.Since(start)
	time.Sleep(2 * time.Second)
	after := rssKiB(t, pid)
	cpu0 := cpuTicks(t, pid)
	time.Sleep(idle)
	busy := float64(cpuTicks(t, pid)-cpu0) / ticks / idle.Seconds()
	t.Logf("%d idle listen streams opened in %v: RSS %d MiB before, %d MiB after, %.1f KiB per stream; CPU %.1f ms/s idle without streams, %.1f ms/s with them (keep-alive every 15 s)",
		streams, opened.Round(time.Millisecond), before/1024, after/1024, float64(after-before)/streams, 1000*base, 1000*busy)
}

// startBinary builds cmd/api, runs it with conf (a YAML config file's
// text) on a free port and its log at warn, and returns its address once
// it accepts connections, and its pid. The process ends with t.
func startBinary(t *testing.T, conf string) (addr string, pid int) {
	t.Helper()
	return startBinaryWith(t, conf, nil, "MCP_LOG_LEVEL=warn")
}

// startBinaryWith is startBinary with the server's log lines written to
// logs (discarded when nil) and env added to the environment.
func startBinaryWith(t *testing.T, conf string, logs io.Writer, env ...string) (addr string, pid int) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "api")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-config", file)
	cmd.Env = append(append(os.Environ(), "MCP_ADDR="+addr), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr, cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			t.Fatal("server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rssKiB is the resident set of process pid.
func rssKiB(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// cpuTicks is process pid's user and system time, in clock ticks.
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// Fields after the command (which may hold spaces) start after ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}
