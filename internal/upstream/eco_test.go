package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

func TestECO001_DiscoveryIsIdempotent(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	p.tool("fetch", nil, nil)
	m := testManager(t, Options{Declared: []Config{cfg("a", p.url())}})
	ctx := ctxT(t)

	d1, err := m.Discover(ctx, DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := canonicals(d1.Tools); !slices.Equal(got, []string{"a.fetch", "a.search"}) {
		t.Fatalf("tools = %v", got)
	}
	if d1.Servers[0].Cached || d1.At.IsZero() {
		t.Errorf("first discovery: %+v at %v", d1.Servers[0], d1.At)
	}
	lists := p.count("tools/list")
	d2, _ := m.Discover(ctx, DiscoverOptions{})
	if !d2.Servers[0].Cached || p.count("tools/list") != lists {
		t.Errorf("second discovery not from cache: %+v", d2.Servers[0])
	}
	d3, _ := m.Discover(ctx, DiscoverOptions{ForceRefresh: true})
	if d3.Servers[0].Cached || p.count("tools/list") != lists+1 {
		t.Errorf("forceRefresh did not re-list: %+v", d3.Servers[0])
	}
	if fingerprint(d1.Tools) != fingerprint(d2.Tools) || fingerprint(d1.Tools) != fingerprint(d3.Tools) {
		t.Errorf("discoveries differ:\n%v\n%v\n%v", d1.Tools, d2.Tools, d3.Tools)
	}
	st := status(t, m, "a")
	if st.LastDiscoveryAt == nil || st.ToolCount != 2 || st.State != StateConnected {
		t.Errorf("status = %+v", st)
	}
	// After the server's tools change, a forced discovery returns the new set.
	p.tool("third", nil, nil)
	d4, _ := m.Discover(ctx, DiscoverOptions{ForceRefresh: true})
	if len(d4.Tools) != 3 {
		t.Errorf("after a change: %v", canonicals(d4.Tools))
	}
}

func TestECO002_FailedServerDoesNotBlockOthers(t *testing.T) {
	good := newPeer(t)
	good.tool("search", nil, nil)
	bad := newPeer(t)
	bad.failConnects.Store(100)
	m := testManager(t, Options{Declared: []Config{cfg("bad", bad.url()), cfg("good", good.url())}})
	d, err := m.Discover(ctx(t), DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := canonicals(d.Tools); !slices.Equal(got, []string{"good.search"}) {
		t.Fatalf("tools = %v", got)
	}
	if len(d.Servers) != 2 || d.Servers[0].State != StateError || d.Servers[0].Error == "" || d.Servers[1].State != StateConnected {
		t.Errorf("servers = %+v", d.Servers)
	}
}

func ctx(t *testing.T) context.Context { return ctxT(t) }

func TestECO002_AllServersFail(t *testing.T) {
	a, b := newPeer(t), newPeer(t)
	a.failConnects.Store(100)
	b.failConnects.Store(100)
	m := testManager(t, Options{Declared: []Config{cfg("a", a.url()), cfg("b", b.url())}})
	d, err := m.Discover(ctx(t), DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Tools == nil || len(d.Tools) != 0 {
		t.Errorf("tools = %#v, want empty", d.Tools)
	}
	for _, s := range d.Servers {
		if s.State != StateError || !strings.Contains(s.Error, "upstream "+s.Server) {
			t.Errorf("server result %+v", s)
		}
	}
}

func TestECO002_SlowServerDoesNotBlockOthers(t *testing.T) {
	good := newPeer(t)
	good.tool("search", nil, nil)
	slow := newPeer(t)
	slow.hangInit.Store(true)
	sc := cfg("slow", slow.url())
	sc.ConnectionTimeoutMs, sc.MaxRetries = 300, intp(0)
	m := testManager(t, Options{Declared: []Config{sc, cfg("good", good.url())}})
	begin := time.Now()
	d, _ := m.Discover(ctx(t), DiscoverOptions{})
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("discovery took %v", took)
	}
	if got := canonicals(d.Tools); !slices.Equal(got, []string{"good.search"}) {
		t.Fatalf("tools = %v", got)
	}
	if d.Servers[1].State != StateError || !strings.Contains(d.Servers[1].Error, "timed out") {
		t.Errorf("slow = %+v", d.Servers[1])
	}
	// Start does not wait for the slow server either.
	m2 := testManager(t, Options{Declared: []Config{sc, cfg("good", good.url())}})
	begin = time.Now()
	start(t, m2)
	if took := time.Since(begin); took > 200*time.Millisecond {
		t.Errorf("Start took %v", took)
	}
	waitState(t, m2, "good", StateConnected)
}

func TestECO100_ConnectionTimeout(t *testing.T) {
	p := newPeer(t)
	p.hangInit.Store(true)
	c := cfg("hang", p.url())
	c.ConnectionTimeoutMs, c.MaxRetries = 200, intp(0)
	m := testManager(t, Options{Declared: []Config{c}})
	begin := time.Now()
	_, err := m.Refresh(ctx(t), "hang")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrConnectionTimeout) || !e.Timeout || e.Server != "hang" || e.Op != "initialize" {
		t.Fatalf("err = %#v (%v)", err, err)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("took %v", took)
	}
	if !strings.Contains(err.Error(), "upstream hang: initialize timed out") {
		t.Errorf("message: %v", err)
	}
}

func TestECO100_RequestTimeout(t *testing.T) {
	p := newPeer(t)
	p.tool("slow", nil, func(ctx context.Context) (*mcp.CallToolResult, error) {
		select {
		case <-ctx.Done():
		case <-p.stop:
		}
		return &mcp.CallToolResult{}, nil
	})
	c := cfg("a", p.url())
	c.RequestTimeoutMs = 200
	m := testManager(t, Options{Declared: []Config{c}})
	if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := m.Call(ctx(t), "a", "slow", nil)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrInvocationFailed) || !e.Timeout || e.Op != "tools/call slow" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "timed out") {
		t.Errorf("message: %v", err)
	}
	// A slow tool does not make the server look failed.
	if st := status(t, m, "a"); st.State != StateConnected {
		t.Errorf("state after a slow call: %s", st.State)
	}
}

func TestECO101_RetriesBounded(t *testing.T) {
	p := newPeer(t)
	p.failConnects.Store(1000)
	c := cfg("a", p.url())
	c.MaxRetries = intp(3)
	m := testManager(t, Options{Declared: []Config{c}})
	_, err := m.Refresh(ctx(t), "a")
	var e *Error
	if !errors.As(err, &e) || e.Attempts != 4 || !strings.Contains(err.Error(), "after 4 attempts") {
		t.Fatalf("err = %v", err)
	}
	if n := p.count("initialize"); n != 4 {
		t.Errorf("%d connection attempts reached the server, want 4", n)
	}
}

func TestECO101_SucceedsOnRetry(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	p.failConnects.Store(2)
	c := cfg("a", p.url())
	c.MaxRetries = intp(3)
	m := testManager(t, Options{Declared: []Config{c}})
	st, err := m.Refresh(ctx(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateConnected || st.ToolCount != 1 || st.LastError != "" || st.ConsecutiveFailures != 0 {
		t.Errorf("status = %+v", st)
	}
	if n := p.count("initialize"); n < 2 {
		t.Errorf("initialize seen %d times", n)
	}
}

func TestRetry_Backoff(t *testing.T) {
	// Full jitter stays within [0, min(cap, base*2^(n-1))].
	for n := 1; n < 20; n++ {
		limit := min(backoffCap, backoffBase<<min(n-1, 10))
		for range 50 {
			if d := fullJitter(n); d < 0 || d > limit {
				t.Fatalf("fullJitter(%d) = %v, limit %v", n, d, limit)
			}
		}
	}
	// ctx ends the waiting.
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	n, err := retry(ctx, 5, func(int) time.Duration { return time.Hour }, func(context.Context) error {
		calls++
		cancel()
		return &Error{Kind: ErrInvocationFailed, Server: "s", Op: "ping"}
	})
	if n != 1 || calls != 1 || err == nil {
		t.Errorf("n=%d calls=%d err=%v", n, calls, err)
	}
}

func TestECO200_StateConsistency(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	p.server.AddResource(&mcp.Resource{URI: "file:///a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	reg := prometheus.NewRegistry()
	c := cfg("a", p.url())
	c.MaxRetries = intp(0)
	m := testManager(t, Options{Declared: []Config{c}, Metrics: reg, HealthInterval: 20 * time.Millisecond,
		reconnectDelay: func(int) time.Duration { return 20 * time.Millisecond }})
	start(t, m)
	st := waitState(t, m, "a", StateConnected)
	if st.LastError != "" || st.ToolCount != 1 || st.ResourceCount != 1 || st.LastSuccessAt == nil || st.ServerName != "peer" {
		t.Errorf("connected status = %+v", st)
	}
	if v := gauge(t, reg, "a", "connected"); v != 1 {
		t.Errorf("gauge connected = %v", v)
	}

	// The server fails: state error with the message.
	p.failConnects.Store(1000)
	p.srv.CloseClientConnections()
	p.tool("break-ping", nil, nil)
	// The session is lost (as a failed ping would find); reconnecting fails.
	dropSession(m, "a")
	st = waitState(t, m, "a", StateError)
	if st.LastError == "" || st.ConsecutiveFailures == 0 {
		t.Errorf("error status = %+v", st)
	}
	if v := gauge(t, reg, "a", "error"); v != 1 {
		t.Errorf("gauge error = %v", v)
	}
	if v := gauge(t, reg, "a", "connected"); v != 0 {
		t.Errorf("gauge connected = %v", v)
	}

	// It recovers: the error is cleared and the failure count reset.
	p.failConnects.Store(0)
	st = waitState(t, m, "a", StateConnected)
	waitFor(t, "counters reset", func() bool {
		st = status(t, m, "a")
		return st.LastError == "" && st.ConsecutiveFailures == 0 && st.ToolCount == 2
	})
	if changes := counter(t, reg, "a", "error"); changes < 1 {
		t.Errorf("state changes to error = %v", changes)
	}
}

func metricValue(t *testing.T, reg *prometheus.Registry, name, server, state string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mm := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range mm.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["server"] == server && labels["state"] == state {
				if mm.Gauge != nil {
					return mm.GetGauge().GetValue()
				}
				return mm.GetCounter().GetValue()
			}
		}
	}
	return -1
}

func gauge(t *testing.T, reg *prometheus.Registry, server, state string) float64 {
	return metricValue(t, reg, "mcp_upstream_state", server, state)
}

func counter(t *testing.T, reg *prometheus.Registry, server, state string) float64 {
	return metricValue(t, reg, "mcp_upstream_state_changes_total", server, state)
}

func TestECO201_DisabledNotContacted(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	c := cfg("off", p.url())
	c.Enabled = new(bool)
	m := testManager(t, Options{Declared: []Config{c}, HealthInterval: 10 * time.Millisecond})
	start(t, m)
	d, _ := m.Discover(ctx(t), DiscoverOptions{ForceRefresh: true})
	if len(d.Servers) != 0 || len(d.Tools) != 0 {
		t.Errorf("discovery = %+v", d)
	}
	d, _ = m.Discover(ctx(t), DiscoverOptions{IncludeDisabled: true})
	if len(d.Servers) != 1 || d.Servers[0].State != StateDisabled {
		t.Errorf("with includeDisabled: %+v", d.Servers)
	}
	if _, err := m.Call(ctx(t), "off", "search", nil); !errors.Is(err, ErrDisabled) {
		t.Errorf("call: %v", err)
	}
	if _, err := m.Refresh(ctx(t), "off"); !errors.Is(err, ErrDisabled) {
		t.Errorf("refresh: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // a few health intervals
	if st := status(t, m, "off"); st.State != StateDisabled {
		t.Errorf("state = %s", st.State)
	}
	if n := p.requests.Load(); n != 0 {
		t.Errorf("the disabled server got %d requests", n)
	}
}

func TestECO201_EnablingConnects(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	m := testManager(t, Options{})
	start(t, m)
	c := cfg("api", p.url())
	c.Enabled = new(bool)
	st, err := m.Create(ctx(t), c)
	if err != nil || st.State != StateDisabled || st.Source != SourceAPI {
		t.Fatalf("create: %+v %v", st, err)
	}
	time.Sleep(30 * time.Millisecond)
	if n := p.requests.Load(); n != 0 {
		t.Fatalf("contacted while disabled: %d", n)
	}
	if _, err := m.SetEnabled(ctx(t), "api", true); err != nil {
		t.Fatal(err)
	}
	waitState(t, m, "api", StateConnected)
	if got := canonicals(m.Tools()); !slices.Equal(got, []string{"api.search"}) {
		t.Errorf("tools = %v", got)
	}
	// Disabling closes the session and drops the tools.
	st, err = m.SetEnabled(ctx(t), "api", false)
	if err != nil || st.State != StateDisabled {
		t.Fatalf("disable: %+v %v", st, err)
	}
	if len(m.Tools()) != 0 {
		t.Errorf("tools after disable: %v", canonicals(m.Tools()))
	}
}

func TestECO301_ToolErrorPropagated(t *testing.T) {
	p := newPeer(t)
	p.tool("fails", nil, func(context.Context) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{
			&mcp.TextContent{Text: "partial row 1"}, &mcp.TextContent{Text: "quota exceeded"}}}, nil
	})
	p.tool("ok", nil, func(context.Context) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}, nil
	})
	m := testManager(t, Options{Declared: []Config{cfg("a", p.url())}})
	if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := m.Call(ctx(t), "a", "fails", json.RawMessage(`{"q":"x"}`))
	if err != nil {
		t.Fatalf("isError became a Go error: %v", err)
	}
	blocks := fmt.Sprintf("%s", res.Content)
	if !res.IsError || !strings.Contains(blocks, "quota exceeded") || !strings.Contains(blocks, "partial row 1") {
		t.Errorf("result = %+v (%s)", res, res.Content)
	}
	res, err = m.Call(ctx(t), "a", "ok", nil)
	if err != nil || res.IsError || string(res.StructuredContent) != `{"n":1}` || res.Content == nil {
		t.Errorf("ok: %+v %s %v", res, res.Content, err)
	}
	if _, err := m.Call(ctx(t), "a", "missing", nil); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("unknown tool: %v", err)
	}
	if _, err := m.Call(ctx(t), "nobody", "ok", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown server: %v", err)
	}
}

func TestECO301_ConnectionLost(t *testing.T) {
	p := newPeer(t)
	p.tool("crash", nil, nil)
	p.tool("ok", nil, nil)
	m := testManager(t, Options{Declared: []Config{cfg("a", p.url())}})
	if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := m.Call(ctx(t), "a", "crash", nil)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrInvocationFailed) || e.Op != "tools/call crash" {
		t.Fatalf("err = %v", err)
	}
	// The next call reconnects.
	if _, err := m.Call(ctx(t), "a", "ok", nil); err != nil {
		t.Errorf("after reconnect: %v", err)
	}
}

func TestConnectionRefused(t *testing.T) {
	p := newPeer(t)
	url := p.url()
	p.srv.Close() // nothing listens on the port any more
	c := cfg("gone", url)
	c.MaxRetries = intp(1)
	m := testManager(t, Options{Declared: []Config{c}})
	_, err := m.Refresh(ctx(t), "gone")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrInvocationFailed) || e.Op != "connect" || e.Timeout || e.Attempts != 2 {
		t.Fatalf("err = %#v (%v)", err, err)
	}
}

// A call whose request reached the server is never sent again, even for
// a read-only tool: it timed out, but the server may be doing the work,
// and a retry would do it once more. One deadline bounds the call.
func TestSentCallNeverRetried(t *testing.T) {
	p := newPeer(t)
	slow := func(ctx context.Context) (*mcp.CallToolResult, error) {
		select {
		case <-ctx.Done():
		case <-p.stop: // the cancellation may not reach the server
		}
		return &mcp.CallToolResult{}, nil
	}
	p.tool("write", nil, slow)
	p.tool("read", &mcp.ToolAnnotations{ReadOnlyHint: true}, slow)
	c := cfg("a", p.url())
	c.RequestTimeoutMs, c.MaxRetries = 150, intp(2)
	m := testManager(t, Options{Declared: []Config{c}})
	if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"write", "read"} {
		start := time.Now()
		_, err := m.Call(ctx(t), "a", tool, nil)
		var e *Error
		if !errors.As(err, &e) || !e.Timeout || e.Attempts > 1 {
			t.Fatalf("%s: %v, want one attempt that timed out", tool, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s took %v: more than its one deadline", tool, took) // a hang guard, not a timing assertion
		}
	}
	for _, tool := range []string{"write", "read"} {
		if n := p.calledN(tool); n != 1 {
			t.Errorf("%s was called %d times, want once", tool, n)
		}
	}
}

// refuseCalls fails the tools/call requests it is told to as a refused
// dial would: before anything is sent.
type refuseCalls struct {
	base http.RoundTripper
	n    atomic.Int64
}

func (r *refuseCalls) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.GetBody != nil {
		body, _ := req.GetBody()
		b, _ := io.ReadAll(body)
		if bytes.Contains(b, []byte(`"tools/call"`)) && r.n.Add(-1) >= 0 {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
	}
	return r.base.RoundTrip(req)
}

// A failure before the request left — the connection could not be made —
// is retried within the call's deadline, for any tool: nothing reached
// the server, so nothing can be done twice.
func TestUnsentCallRetried(t *testing.T) {
	p := newPeer(t)
	p.tool("write", nil, nil)
	c := cfg("a", p.url())
	c.MaxRetries = intp(2)
	m := testManager(t, Options{Declared: []Config{c}})
	refusing := &refuseCalls{base: m.client.Transport}
	m.client = &http.Client{Transport: refusing}
	if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
		t.Fatal(err)
	}
	refusing.n.Store(2)
	res, err := m.Call(ctx(t), "a", "write", nil)
	if err != nil {
		t.Fatalf("call with two refused dials and two retries: %v", err)
	}
	if res.Attempts != 3 || p.calledN("write") != 1 {
		t.Errorf("%d attempts, %d calls at the server; want 3 and 1", res.Attempts, p.calledN("write"))
	}
}

func TestToolListChangedNotifiesOnce(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	var fired atomic.Int64
	m := testManager(t, Options{Declared: []Config{cfg("a", p.url())}, OnToolsChanged: func() { fired.Add(1) }})
	start(t, m)
	waitFor(t, "initial tools", func() bool { return fired.Load() == 1 })
	p.tool("fetch", nil, nil) // the server sends notifications/tools/list_changed
	waitFor(t, "new tool", func() bool { return len(m.Tools()) == 2 })
	time.Sleep(100 * time.Millisecond) // several debounce windows
	if n := fired.Load(); n != 2 {
		t.Errorf("OnToolsChanged fired %d times, want 2 (start, change)", n)
	}
	// Unchanged refreshes are no change.
	for range 3 {
		if _, err := m.Refresh(ctx(t), "a"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Discover(ctx(t), DiscoverOptions{ForceRefresh: true}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := fired.Load(); n != 2 {
		t.Errorf("spurious OnToolsChanged: fired %d times", n)
	}
}

func TestGracePeriod(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	c := cfg("a", p.url())
	c.MaxRetries, c.ConnectionTimeoutMs = intp(0), 200
	// The test drives the health check itself (check, below): with a
	// short HealthInterval a reconnect could succeed at any moment.
	m := testManager(t, Options{Declared: []Config{c}, GracePeriod: 300 * time.Millisecond})
	start(t, m)
	waitFor(t, "tools", func() bool { return len(m.Tools()) == 1 })

	p.failConnects.Store(1 << 30)
	dropSession(m, "a")
	// A re-list the peer's tools/list_changed started may be reconnecting
	// (connecting) for a moment; it fails too.
	st := waitState(t, m, "a", StateError)
	if st.StaleToolsUntil == nil {
		t.Fatalf("status = %+v", st)
	}
	if len(m.Tools()) != 1 {
		t.Errorf("tools dropped during the grace period")
	}
	waitFor(t, "grace period over", func() bool { return len(m.Tools()) == 0 })
	if st := status(t, m, "a"); st.StaleToolsUntil != nil {
		t.Errorf("StaleToolsUntil still set")
	}
	p.failConnects.Store(0)
	m.mu.Lock()
	srv := m.servers["a"]
	m.mu.Unlock()
	m.check(ctx(t), srv)
	if len(m.Tools()) != 1 {
		t.Errorf("tools not back after a health check reconnected")
	}
}

func TestInvalidSchemaLeftOut(t *testing.T) {
	p := newPeer(t)
	p.tool("good", nil, nil)
	p.toolSchema("bad-type", `{"type":"object","properties":{"x":{"type":"nonsense"}}}`, nil, nil)
	p.toolSchema("bad-ref", `{"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}`, nil, nil)
	m := testManager(t, Options{Declared: []Config{cfg("a", p.url())}})
	d, err := m.Discover(ctx(t), DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := canonicals(d.Tools); !slices.Equal(got, []string{"a.good"}) {
		t.Errorf("tools = %v", got)
	}
	st := status(t, m, "a")
	if len(st.InvalidTools) != 2 || st.ToolCount != 1 || st.State != StateConnected {
		t.Errorf("status = %+v", st)
	}
}

// A tool name over 128 bytes is left out, and the status shows it bounded:
// a server cannot make every tools/list, log line and status larger by
// choosing long names.
func TestLongToolNameLeftOut(t *testing.T) {
	p := newPeer(t)
	p.tool(strings.Repeat("n", MaxToolNameBytes), nil, nil)
	p.tool(strings.Repeat("x", 64<<10), nil, nil)
	m := testManager(t, Options{Declared: []Config{cfg("a", p.url())}})
	d, err := m.Discover(ctx(t), DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tools) != 1 || d.Tools[0].Name != strings.Repeat("n", MaxToolNameBytes) {
		t.Errorf("tools = %v, want only the 128-byte name", canonicals(d.Tools))
	}
	st := status(t, m, "a")
	if len(st.InvalidTools) != 1 {
		t.Fatalf("invalid tools = %+v", st.InvalidTools)
	}
	if got := st.InvalidTools[0]; len(got.Name) > 512 || !strings.Contains(got.Reason, "more than the 128") {
		t.Errorf("problem = %.300q (name %d bytes)", got.Reason, len(got.Name))
	}
}

func TestCheckInputSchema(t *testing.T) {
	for _, s := range []string{``, `null`, `[]`, `{"type":"string"}`, `{}`, `{"type":"object","minProperties":"x"}`} {
		if checkInputSchema(json.RawMessage(s)) == nil {
			t.Errorf("%s accepted", s)
		}
	}
	if err := checkInputSchema(json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`)); err != nil {
		t.Error(err)
	}
}

func TestHeadersSent(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	c := cfg("a", p.url())
	c.Headers = map[string]string{"Authorization": "Bearer up-secret", "X-Tenant": "t1"}
	m := testManager(t, Options{Declared: []Config{c}})
	if _, err := m.Discover(ctx(t), DiscoverOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Call(ctx(t), "a", "search", nil); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.headers) < 3 {
		t.Fatalf("%d requests", len(p.headers))
	}
	for i, h := range p.headers {
		if h.Get("Authorization") != "Bearer up-secret" || h.Get("X-Tenant") != "t1" {
			t.Errorf("request %d headers: %v", i, h)
		}
	}
}

// dropSession makes the manager lose server id's session, as a failed ping
// or a cut connection does.
func dropSession(m *Manager, id string) {
	m.mu.Lock()
	s := m.servers[id]
	c := s.conn
	m.mu.Unlock()
	m.dropConn(s, c, &Error{Kind: ErrInvocationFailed, Server: id, Op: "ping", Err: errors.New("lost")})
}
