package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// TestScaleOut_Subscribers (MCP_SCALEOUT_BENCH=1), recorded in
// BENCHMARKS.md ("10,000 subscribers on one replica"): the cmd/api binary
// with default settings (the embedded store, no Redis; connection and
// session caps raised to hold the streams) holds 10,000 subscribers of
// memory://default/fan, legacy GET streams of subscribed sessions in one
// run and subscriptions/listen streams in the other. It reports the
// server's RSS per stream, its CPU while only keep-alives flow, and then
// for memory_store calls that change the URI (one at a time, each after
// the previous one's notifications are all in): the call's own latency
// and each notification's latency from the moment the call was sent.
//
// The calls come from a second process (TestScaleOutWriter, the test
// binary run again), as an agent's would: in this process they would
// queue behind the 10,000 readers' goroutines. The server runs at its
// default log level, and its request log line gives each call's whole
// duration at the server (transport included) in microseconds.
func TestScaleOut_Subscribers(t *testing.T) {
	if os.Getenv("MCP_SCALEOUT_BENCH") == "" {
		t.Skip("a measurement, not a test: set MCP_SCALEOUT_BENCH=1 (see BENCHMARKS.md)")
	}
	for _, modern := range []bool{false, true} {
		name := map[bool]string{false: "legacy GET streams", true: "listen streams"}[modern]
		t.Run(name, func(t *testing.T) { subscribers(t, modern) })
	}
}

const (
	subsStreams   = 10_000
	subsMutations = 200
	subsURI       = "memory://default/fan"
	subsIdle      = 31 * time.Second // two keep-alive periods (15 s)
)

// subsMutation is one memory_store and the notifications charged to it.
type subsMutation struct {
	sent time.Time
	mu   sync.Mutex
	lat  []time.Duration
	got  atomic.Int64
}

func subscribers(t *testing.T, modern bool) {
	// MCP_SCALEOUT_LOG keeps the server's log in that file (with
	// GODEBUG=gctrace=1 in the environment, its GC cycles too).
	logPath := os.Getenv("MCP_SCALEOUT_LOG")
	if logPath == "" {
		logPath = filepath.Join(t.TempDir(), "server.log")
	} else if modern {
		logPath += ".listen"
	}
	logs, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	addr, pid := startBinaryWith(t, "transport:\n  maxConnections: 12000\n  maxSessions: 12000\n", logs)
	url := "http://" + addr + "/mcp"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second}
	base := idleCPU(t, pid)
	before := rssKiB(t, pid)

	var cur atomic.Pointer[subsMutation]
	conns := make([]net.Conn, subsStreams)
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, subsStreams)
	next := atomic.Int64{}
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < subsStreams; i = int(next.Add(1) - 1) {
				var c net.Conn
				var r *bufio.Reader
				var err error
				if modern {
					c, r, err = openListenConn(addr, i, subsURI)
				} else {
					c, r, err = openSubscribedGET(client, url, addr)
				}
				if err != nil {
					errs <- err
					return
				}
				conns[i] = c
				go readNotifications(r, &cur)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("opening streams: %v", err)
	}
	opened := time.Since(start)
	time.Sleep(2 * time.Second)
	after := rssKiB(t, pid)
	busy := idleCPU(t, pid)

	w := startWriter(t, url, modern)
	// Sized up front: this process's garbage collector must not run
	// during the fan-outs it times.
	calls, lats := make([]time.Duration, 0, subsMutations), make([]time.Duration, 0, subsMutations*subsStreams)
	late := 0 // fan-outs whose last notification came after 200 ms
	var serverMs []int
	missed := 0
	for i := range subsMutations {
		m := &subsMutation{sent: time.Now(), lat: make([]time.Duration, 0, subsStreams)}
		cur.Store(m)
		d, ms := w(i)
		calls, serverMs = append(calls, d), append(serverMs, ms)
		deadline := time.Now().Add(10 * time.Second)
		for m.got.Load() < subsStreams && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		cur.Store(nil)
		m.mu.Lock()
		lats = append(lats, m.lat...)
		if len(m.lat) > 0 && slices.Max(m.lat) > 200*time.Millisecond {
			late++
		}
		missed += subsStreams - len(m.lat)
		m.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	final := rssKiB(t, pid) // every stream's log now holds subsMutations events
	slices.Sort(calls)
	slices.Sort(lats)
	pct := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)-1, int(p*float64(len(d))))].Round(10 * time.Microsecond)
	}
	t.Logf("%d streams opened in %v: RSS %d MiB before, %d MiB after, %.1f KiB per stream; CPU %.1f ms/s idle without streams, %.1f ms/s with them",
		subsStreams, opened.Round(time.Millisecond), before/1024, after/1024, float64(after-before)/subsStreams, 1000*base, 1000*busy)
	slices.Sort(serverMs)
	atServer := callDurations(t, logPath)
	slices.Sort(atServer)
	t.Logf("%d memory_store calls: latency p50 %v, p99 %v, max %v at the client (another process); at the server (request log) p50 %v, p99 %v, max %v; durationMs in the envelope p50 %d, max %d",
		subsMutations, pct(calls, 0.5), pct(calls, 0.99), calls[len(calls)-1],
		pct(atServer, 0.5), pct(atServer, 0.99), pct(atServer, 1), serverMs[len(serverMs)/2], serverMs[len(serverMs)-1])
	if len(atServer) != subsMutations {
		t.Errorf("%d tools/call lines in the request log, want %d", len(atServer), subsMutations)
	}
	t.Logf("notifications: %d of %d delivered; from the call's start p50 %v, p99 %v, max %v; %d of %d fan-outs ended after 200 ms; RSS after them %d MiB",
		len(lats), subsMutations*subsStreams, pct(lats, 0.5), pct(lats, 0.99), pct(lats, 1), late, subsMutations, final/1024)
	if missed > 0 {
		t.Errorf("%d notifications missed", missed)
	}
}

// idleCPU is process pid's CPU time per second over subsIdle.
func idleCPU(t *testing.T, pid int) float64 {
	c0 := cpuTicks(t, pid)
	time.Sleep(subsIdle)
	return float64(cpuTicks(t, pid)-c0) / 100 / subsIdle.Seconds() // USER_HZ
}

// readNotifications charges every resources/updated notification read
// from r to the mutation in cur, until the stream ends.
func readNotifications(r *bufio.Reader, cur *atomic.Pointer[subsMutation]) {
	updated := []byte(protocol.NotificationResourcesUpdated)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
		// bytes.Contains: a reader that allocated per line would have this
		// process collect garbage during every fan-out it measures.
		if !bytes.Contains(line, updated) {
			continue
		}
		if m := cur.Load(); m != nil {
			d := time.Since(m.sent)
			m.mu.Lock()
			m.lat = append(m.lat, d)
			m.mu.Unlock()
			m.got.Add(1)
		}
	}
}

// openSubscribedGET opens a client session subscribed to subsURI and its
// GET stream on a raw connection, read up to the end of the headers.
func openSubscribedGET(client *http.Client, url, addr string) (net.Conn, *bufio.Reader, error) {
	_, sid, err := legacyPost(client, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fan","version":"1"}}}`)
	if err != nil {
		return nil, nil, err
	}
	if _, _, err := legacyPost(client, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return nil, nil, err
	}
	if _, _, err := legacyPost(client, url, sid, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"`+subsURI+`"}}`); err != nil {
		return nil, nil, err
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: %s\r\n\r\n", addr, sid)
	r := bufio.NewReaderSize(c, 1024)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for first := true; ; first = false {
		line, err := r.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, nil, fmt.Errorf("GET: %w", err)
		}
		if first && !strings.HasPrefix(line, "HTTP/1.1 200") {
			c.Close()
			return nil, nil, fmt.Errorf("GET: %s", strings.TrimSpace(line))
		}
		if line == "\r\n" {
			_ = c.SetReadDeadline(time.Time{})
			return c, r, nil
		}
	}
}

// subsWriter returns a function that stores value i under the key of
// subsURI, in the era given, and returns how long the call took at the
// client and the server's own durationMs in its envelope: the client's
// figure includes its process's scheduling beside the 10,000 readers.
func subsWriter(t *testing.T, client *http.Client, url string, modern bool) func(i int) (time.Duration, int) {
	t.Helper()
	call := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_store","arguments":{"key":"fan","value":{"n":%d}}`, 10+i, i)
	}
	if !modern {
		_, sid, err := legacyPost(client, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"writer","version":"1"}}}`)
		if err != nil {
			t.Fatal(err)
		}
		return func(i int) (time.Duration, int) {
			start := time.Now()
			body, _, err := legacyPost(client, url, sid, call(i)+`}}`)
			d := time.Since(start)
			if err != nil || !strings.Contains(body, `"success":true`) {
				t.Fatalf("memory_store: %v %s", err, body)
			}
			return d, envelopeMs(t, body)
		}
	}
	return func(i int) (time.Duration, int) {
		body := call(i) + fmt.Sprintf(`,"_meta":{"%s":"%s","%s":{}}}}`, protocol.MetaProtocolVersion, protocol.Version20260728, protocol.MetaClientCapabilities)
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", protocol.Version20260728)
		req.Header.Set(protocol.HeaderMethod, "tools/call")
		req.Header.Set(protocol.HeaderName, "memory_store")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if !strings.Contains(string(b), `"success":true`) {
			t.Fatalf("memory_store: %d %s", resp.StatusCode, b)
		}
		return d, envelopeMs(t, string(b))
	}
}

// envelopeMs is the envelope's metadata.durationMs in body.
func envelopeMs(t *testing.T, body string) int {
	t.Helper()
	_, rest, ok := strings.Cut(body, `"durationMs":`)
	if !ok {
		t.Fatalf("no durationMs in %s", body)
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	n, err := strconv.Atoi(rest[:max(end, 0)])
	if err != nil {
		t.Fatalf("durationMs in %s: %v", body, err)
	}
	return n
}
