package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

// Shutdown with everything running — PostgreSQL, Redis-shared sessions,
// the trace recorder, an open SSE stream — ends the stream with a retry
// hint so the client reconnects elsewhere, and leaves no goroutine behind
// (INV-MCP-XC-003).
func TestGracefulShutdownLeavesNothing(t *testing.T) {
	srv := redistest.Start(t)
	cfg := pgConfig(t)
	cfg.RedisURL = "redis://" + srv.Addr() + "/0"
	before := goleak.IgnoreCurrent()

	url, stop := runServer(t, cfg, io.Discard)
	client := &http.Client{Transport: &http.Transport{}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "shutdown", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client}, legacyEra) // it holds a GET stream
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		mustSucceed(t, call(t, cs, "memory_store", map[string]any{"key": "k", "value": i}), "store")
	}

	// A raw GET stream, to see how it ends.
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	ended := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		var last string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "retry:") {
				last = sc.Text()
			}
		}
		ended <- last
	}()

	stop()
	select {
	case retry := <-ended:
		if retry == "" {
			t.Error("the GET stream ended without a retry hint")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the GET stream outlived the shutdown")
	}
	_ = cs.Close()
	client.CloseIdleConnections()
	goleak.VerifyNone(t, before)
}
