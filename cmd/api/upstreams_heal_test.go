package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// restartableUpstream is a go-sdk MCP server on a fixed loopback address
// that can be killed and started again there, as a process would be.
type restartableUpstream struct {
	t     *testing.T
	addr  string
	srv   *http.Server
	calls atomic.Int64
}

func newRestartableUpstream(t *testing.T) *restartableUpstream {
	u := &restartableUpstream{t: t}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = ln.Addr().String()
	u.serve(ln)
	t.Cleanup(u.kill)
	return u
}

func (u *restartableUpstream) url() string { return "http://" + u.addr }

// serve starts a fresh server (no sessions survive a restart) on ln.
func (u *restartableUpstream) serve(ln net.Listener) {
	s := mcp.NewServer(&mcp.Implementation{Name: "heal", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Searches."},
		func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchOut, error) {
			u.calls.Add(1)
			return nil, searchOut{Hits: []string{in.Query}}, nil
		})
	u.srv = &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil),
		ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = u.srv.Serve(ln) }()
}

func (u *restartableUpstream) kill() {
	if u.srv != nil {
		_ = u.srv.Close()
		u.srv = nil
	}
}

func (u *restartableUpstream) restart() {
	ln, err := net.Listen("tcp", u.addr)
	if err != nil {
		u.t.Fatalf("listening on %s again: %v", u.addr, err)
	}
	u.serve(ln)
}

// TestUpstreamHealsInSeconds: with default settings, an upstream that is
// killed keeps its tools listed (the grace period) while its calls fail
// fast with SERVICE_UNAVAILABLE, retryable, with retryAfterMs and a
// classified message; reconnect attempts back off up to
// federation.maxBackoffMs (10 s), so once it is started again its calls
// succeed within 15 s, without restarting the gateway.
func TestUpstreamHealsInSeconds(t *testing.T) {
	up := newRestartableUpstream(t)
	url, base := fedServer(t, nil)
	registerUpstream(t, base, "up", up.url())
	cs := connect(t, url)
	waitFor(t, func() bool { return strings.Contains(strings.Join(toolNames(t, cs), ","), "up_search") })
	if env, _ := proxied(t, cs, "up_search", map[string]any{"query": "q"}); !env.Success {
		t.Fatalf("call before the kill: %+v", env)
	}

	up.kill()
	before := up.calls.Load()
	// Down for several reconnect attempts (their pauses double from
	// 100 ms; TestEqualJitterBounds in internal/upstream pins the cap).
	killed := time.Now()
	awaitUpstream(t, base, "up", func(v upstreamView) bool { return v.ConsecutiveFailures >= 5 })
	t.Logf("five failed attempts %v after the kill", time.Since(killed))
	env, res := proxied(t, cs, "up_search", map[string]any{"query": "q"})
	if env.Success || env.Error.Code != "SERVICE_UNAVAILABLE" || !env.Error.Retryable || env.Error.RetryAfterMs <= 0 || env.Error.RetryAfterMs > 10_000 {
		t.Fatalf("call while the upstream is down: %+v", env)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; strings.Contains(text, up.addr) || strings.Contains(text, "dial tcp") {
		t.Errorf("the message shows socket details: %s", text)
	}

	up.restart()
	back := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up_search", Arguments: map[string]any{"query": "again"}})
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("tools/call: %v", err)
		}
		if err == nil && !res.IsError {
			t.Logf("a call succeeded %v after the upstream's return", time.Since(back).Round(time.Millisecond))
			break
		}
		if time.Since(back) > 15*time.Second {
			b, _ := json.Marshal(res)
			t.Fatalf("no successful call within 15 s of the upstream's return; last answer %s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := up.calls.Load() - before; n != 1 {
		t.Errorf("the upstream ran %d calls after its restart, want the one that succeeded", n)
	}
}
