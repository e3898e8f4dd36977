package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

// Issue 7's two performance targets, recorded in BENCHMARKS.md
// ("Scale-out"): tools/call with client sessions in Redis against the
// in-memory mode (BenchmarkAPI_ToolsCall), and the latency of a
// notification caused on one replica and delivered by another.

// BenchmarkAPI_ToolsCallSharedSessions is BenchmarkAPI_ToolsCall with
// REDIS_URL set: the client session lives in Redis and this replica serves
// the call from its local copy.
func BenchmarkAPI_ToolsCallSharedSessions(b *testing.B) {
	cfg := config.Default()
	cfg.RedisURL = "redis://" + redistest.Start(b).Addr() + "/0"
	benchEcho(b, cfg)
}

// BenchmarkAPI_ToolsCallClusterSessions is
// BenchmarkAPI_ToolsCallSharedSessions with the client session in a
// six-node Redis Cluster.
func BenchmarkAPI_ToolsCallClusterSessions(b *testing.B) {
	cfg := config.Default()
	cfg.RedisURL, cfg.Redis.Mode = redistest.StartCluster(b).URL(), "cluster"
	benchEcho(b, cfg)
}

// benchEcho measures tools/call of runtime_echo on a session of a server
// configured as cfg.
func benchEcho(b *testing.B, cfg config.Config) {
	c := newBenchClient(b, cfg)
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"runtime_echo","arguments":{"text":"hello"}}}`
	c.mustPost(b, call, `"text":"hello"`)
	c.loop(b, call)
}

// TestScaleOut_NotificationLatency (MCP_SCALEOUT_BENCH=1) runs two
// replicas in this process, sharing PostgreSQL and a private Redis — a
// single node, then a six-node Redis Cluster — over real loopback HTTP:
// subscribers hold their GET streams on replica 1, a writer mutates
// through replica 2, one mutation at a time, and each notification's
// latency is its receipt minus the moment the mutation was sent.
func TestScaleOut_NotificationLatency(t *testing.T) {
	if os.Getenv("MCP_SCALEOUT_BENCH") == "" {
		t.Skip("a measurement, not a test: set MCP_SCALEOUT_BENCH=1 (see BENCHMARKS.md)")
	}
	t.Run("single node", func(t *testing.T) {
		cfg := config.Default()
		cfg.RedisURL = "redis://" + redistest.Start(t).Addr() + "/0"
		notificationLatency(t, cfg)
	})
	t.Run("cluster", func(t *testing.T) {
		cfg := config.Default()
		cfg.RedisURL, cfg.Redis.Mode = redistest.StartCluster(t).URL(), "cluster"
		notificationLatency(t, cfg)
	})
}

// notificationLatency is TestScaleOut_NotificationLatency on the Redis
// cfg names.
func notificationLatency(t *testing.T, cfg config.Config) {
	const subscribers, mutations, gap = 10, 300, 10 * time.Millisecond
	cfg.DatabaseURL = pgtest.NewDatabase(t)
	url1, _ := fanServer(t, cfg)
	url2, _ := fanServer(t, cfg)

	epoch := time.Now()
	recv := make(chan time.Duration, subscribers*mutations)
	var readers sync.WaitGroup
	var cancels []context.CancelFunc
	t.Cleanup(func() { // before the servers' cleanups, which wait for the streams to end
		for _, cancel := range cancels {
			cancel()
		}
		readers.Wait()
	})
	for i := range subscribers {
		sid := scaleSession(t, url1, fmt.Sprintf("sub-%d", i))
		scalePost(t, url2, sid, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"`+fanURI+`"}}`)
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url1, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET on replica 1: %v %v", resp, err)
		}
		readers.Go(func() {
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.Contains(sc.Text(), fanMarker) {
					recv <- time.Since(epoch)
				}
			}
		})
	}
	writer := scaleSession(t, url2, "writer")
	lat := make([]time.Duration, 0, subscribers*mutations)
	for i := range mutations {
		time.Sleep(gap)
		sent := time.Since(epoch)
		scalePost(t, url2, writer, fmt.Sprintf(fanStoreBody, 100+i, i))
		for range subscribers {
			select {
			case at := <-recv:
				lat = append(lat, at-sent)
			case <-time.After(5 * time.Second):
				t.Fatalf("mutation %d: a notification missing after 5 s", i)
			}
		}
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	t.Logf("cross-replica notification latency, %d subscribers × %d mutations: p50 %v, p95 %v, p99 %v, max %v",
		subscribers, mutations, pct(0.50), pct(0.95), pct(0.99), lat[len(lat)-1])
	if p99 := pct(0.99); p99 > 100*time.Millisecond {
		t.Logf("p99 %v is over the 100 ms target of cross-replica delivery", p99)
	}
}

// scaleSession initializes a client session on url.
func scaleSession(t *testing.T, url, name string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+name+`","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	scalePost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

func scalePost(t *testing.T, url, sid, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %.60s: %d", body, resp.StatusCode)
	}
}
