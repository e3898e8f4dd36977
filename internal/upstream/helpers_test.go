package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/memstore"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// peer is a real MCP server (the official go-sdk) on loopback, with hooks
// to count, fail, hang or cut requests at the HTTP level.
type peer struct {
	t       *testing.T
	srv     *httptest.Server
	server  *mcp.Server
	mu      sync.Mutex
	methods map[string]int // JSON-RPC method -> requests seen
	headers []http.Header
	// failConnects: the first n connection attempts are answered 503.
	failConnects atomic.Int64
	hangInit     atomic.Bool // initialize/discover never answer
	// holdList, when set, holds every tools/list until it is closed.
	holdList atomic.Pointer[chan struct{}]
	requests atomic.Int64
	calls    sync.Map // tool name -> *atomic.Int64
	stop     chan struct{}
}

func newPeer(t *testing.T) *peer {
	t.Helper()
	p := &peer{t: t, methods: map[string]int{}, stop: make(chan struct{})}
	p.server = mcp.NewServer(&mcp.Implementation{Name: "peer", Version: "1.0"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return p.server },
		&mcp.StreamableHTTPOptions{PropagateRequestCancellation: true})
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		p.mu.Lock()
		p.methods[msg.Method]++
		p.headers = append(p.headers, r.Header.Clone())
		p.mu.Unlock()
		connecting := msg.Method == "initialize" || msg.Method == "server/discover"
		if connecting && p.hangInit.Load() {
			select {
			case <-r.Context().Done():
			case <-p.stop:
			}
			return
		}
		if connecting && p.failConnects.Load() > 0 {
			if msg.Method == "initialize" { // the last request of an attempt
				p.failConnects.Add(-1)
			}
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		if hold := p.holdList.Load(); hold != nil && msg.Method == "tools/list" {
			select {
			case <-*hold:
			case <-r.Context().Done():
			case <-p.stop:
			}
		}
		if msg.Method == "tools/call" && msg.Params.Name == "crash" {
			// The connection is lost mid-call.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(p.stop)
		p.srv.CloseClientConnections()
		p.srv.Close()
		// Sessions whose client vanished (a cut connection) would
		// outlive the test.
		for ss := range p.server.Sessions() {
			_ = ss.Close()
		}
	})
	return p
}

func (p *peer) url() string { return p.srv.URL }

func (p *peer) count(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.methods[method]
}

func (p *peer) calledN(name string) int64 {
	v, _ := p.calls.LoadOrStore(name, new(atomic.Int64))
	return v.(*atomic.Int64).Load()
}

// tool adds a tool whose handler runs f (counted per call).
func (p *peer) tool(name string, ann *mcp.ToolAnnotations, f func(ctx context.Context) (*mcp.CallToolResult, error)) {
	p.toolSchema(name, `{"type":"object","properties":{"q":{"type":"string"}}}`, ann, f)
}

func (p *peer) toolSchema(name, schema string, ann *mcp.ToolAnnotations, f func(ctx context.Context) (*mcp.CallToolResult, error)) {
	if f == nil {
		f = func(context.Context) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok " + name}}}, nil
		}
	}
	p.server.AddTool(&mcp.Tool{Name: name, Description: "the " + name + " tool", InputSchema: json.RawMessage(schema), Annotations: ann},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			v, _ := p.calls.LoadOrStore(name, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
			return f(ctx)
		})
}

func cfg(id, url string) Config {
	retries := 1
	return Config{ID: id, URL: url, ConnectionTimeoutMs: 1000, RequestTimeoutMs: 1000, MaxRetries: &retries}
}

func intp(n int) *int { return &n }

// testManager builds a Manager with fast intervals and near-zero backoff.
func testManager(t *testing.T, o Options) *Manager {
	t.Helper()
	if o.Store == nil {
		o.Store = memstore.New(store.Options{})
	}
	if o.HealthInterval == 0 {
		o.HealthInterval = time.Hour // tests drive health checks themselves
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = time.Hour
	}
	if o.Debounce == 0 {
		o.Debounce = 20 * time.Millisecond
	}
	o.Log = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	o.backoff = func(int) time.Duration { return time.Millisecond }
	if o.reconnectDelay == nil {
		// Tests drive reconnects themselves (check) unless they opt in.
		o.reconnectDelay = func(int) time.Duration { return time.Hour }
	}
	if o.relistGap == 0 {
		o.relistGap = time.Millisecond
	}
	m, err := NewManager(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Closing a session sends DELETE, which the SDK bounds at 5 s: a
		// peer with a handler still running (cancellation does not always
		// reach it) takes that long.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return m
}

func start(t *testing.T, m *Manager) {
	t.Helper()
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, testutil.Wait, what, cond)
}

func status(t *testing.T, m *Manager, id string) Status {
	t.Helper()
	st, err := m.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func waitState(t *testing.T, m *Manager, id string, want State) Status {
	t.Helper()
	var st Status
	waitFor(t, id+" "+string(want), func() bool {
		var err error
		st, err = m.Get(context.Background(), id)
		return err == nil && st.State == want
	})
	return st
}

func canonicals(tools []Tool) []string {
	out := make([]string, 0, len(tools))
	for _, t := range tools {
		out = append(out, t.Canonical)
	}
	return out
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
