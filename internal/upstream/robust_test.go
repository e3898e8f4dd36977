package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/memstore"
)

// A URL's query string and password are credentials: a failure reaches a
// client (the envelope's message), lastError and the log, and none may
// show them.
func TestErrorsNeverShowURLSecrets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // connections are refused from now on

	tests := []struct {
		name, url string
		secrets   []string
	}{
		{"query token", "http://" + addr + "/mcp?token=s3cr3t-value&x=1", []string{"s3cr3t-value"}},
		{"escaped query", "http://" + addr + "/mcp?key=a%2Fb%2Fsecret", []string{"a%2Fb%2Fsecret", "a/b/secret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg("leaky", tt.url)
			c.MaxRetries = intp(0)
			m := testManager(t, Options{Declared: []Config{c}})
			_, err := m.Refresh(ctx(t), "leaky")
			if err == nil {
				t.Fatal("refresh of a closed port succeeded")
			}
			st := status(t, m, "leaky")
			for _, msg := range []string{err.Error(), st.LastError} {
				if !strings.Contains(msg, "upstream leaky") {
					t.Errorf("message does not name the server: %q", msg)
				}
				for _, s := range tt.secrets {
					if strings.Contains(msg, s) {
						t.Errorf("message shows %q: %q", s, msg)
					}
				}
			}
		})
	}
}

func TestScrubURL(t *testing.T) {
	const raw = "https://u:pw-123@h.example/mcp?api_key=k-456"
	tests := []struct{ msg, want string }{
		{`Post "` + raw + `": dial tcp: refused`, `Post "https://u:xxxxx@h.example/mcp?...": dial tcp: refused`},
		{"no url here", "no url here"},
		{"query alone api_key=k-456 and pw u:pw-123", "query alone ... and pw ..."},
	}
	for _, tt := range tests {
		if got := scrubURL(tt.msg, raw); got != tt.want {
			t.Errorf("scrubURL(%q) = %q, want %q", tt.msg, got, tt.want)
		}
	}
	if got := RedactURL("http://h/p?a=1#frag"); got != "http://h/p?..." {
		t.Errorf("RedactURL = %q", got)
	}
}

// INV-MCP-ECO-101: the final error reports the attempts made, the larger
// count when a connection was retried inside a call sent once.
func TestRetryKeepsLargestAttemptCount(t *testing.T) {
	inner := &Error{Kind: ErrInvocationFailed, Server: "a", Op: "connect", Attempts: 3, Err: errors.New("refused")}
	n, err := retry(context.Background(), 1, func(int) time.Duration { return 0 }, func(context.Context) error { return inner })
	var e *Error
	if n != 1 || !errors.As(err, &e) || e.Attempts != 3 || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Errorf("n = %d, err = %v", n, err)
	}
}

// A caller that stops waiting (a cancelled tools/call, an admin client
// hanging up) neither aborts the shared connect nor marks the server
// failed; the server's own timeout does, later.
func TestCallerGivingUpDoesNotFailServer(t *testing.T) {
	p := newPeer(t)
	p.hangInit.Store(true)
	c := cfg("hang", p.url())
	c.ConnectionTimeoutMs, c.MaxRetries = 400, intp(0)
	m := testManager(t, Options{Declared: []Config{c}})

	short, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := m.Refresh(short, "hang")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
	if took := time.Since(begin); took > 300*time.Millisecond {
		t.Errorf("the caller waited %v after its deadline", took)
	}
	if st := status(t, m, "hang"); st.State != StateConnecting || st.ConsecutiveFailures != 0 || st.LastError != "" {
		t.Errorf("after the caller gave up: state %s, failures %d, lastError %q", st.State, st.ConsecutiveFailures, st.LastError)
	}
	st := waitState(t, m, "hang", StateError)
	if st.ConsecutiveFailures != 1 || !strings.Contains(st.LastError, "connectionTimeoutMs") {
		t.Errorf("after the server's timeout: failures %d, lastError %q", st.ConsecutiveFailures, st.LastError)
	}
}

// holdingStore holds its first ListUpstreams after reading, until released:
// a reload that read the store before an API change applies after it.
type holdingStore struct {
	Persistence
	once     sync.Once
	listed   chan struct{}
	released chan struct{}
}

func (h *holdingStore) ListUpstreams(ctx context.Context) ([]store.UpstreamRecord, error) {
	recs, err := h.Persistence.ListUpstreams(ctx)
	h.once.Do(func() {
		close(h.listed)
		<-h.released
	})
	return recs, err
}

func TestStaleReloadDoesNotResurrectDeletedServer(t *testing.T) {
	p := newPeer(t)
	hs := &holdingStore{Persistence: memstore.New(store.Options{}), listed: make(chan struct{}), released: make(chan struct{})}
	m := testManager(t, Options{Store: hs})
	c := ctx(t)
	if _, err := m.Create(c, cfg("gone", p.url())); err != nil {
		t.Fatal(err)
	}
	reloaded := make(chan error, 1)
	go func() { reloaded <- m.syncStore(c) }()
	<-hs.listed // the reload holds a list that still has "gone"
	if err := m.Delete(c, "gone"); err != nil {
		t.Fatal(err)
	}
	close(hs.released)
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(c, "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted server back after a stale reload: %v", err)
	}
}

// Changing a connected server's call settings keeps its session and its
// tools: clients never see its tools vanish for an edit of the category.
func TestUpdateOfCallSettingsKeepsSession(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	m := testManager(t, Options{})
	start(t, m)
	c := ctx(t)
	if _, err := m.Create(c, cfg("a", p.url())); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "tools", func() bool { return len(m.Tools()) == 1 })
	if got := m.Tools()[0].Category; got != DefaultCategory {
		t.Fatalf("category %q", got)
	}

	next := cfg("a", p.url())
	next.Category, next.RequestTimeoutMs = "query", 2000
	st, err := m.Update(c, "a", next)
	if err != nil {
		t.Fatal(err)
	}
	tools := m.Tools()
	if st.State != StateConnected || len(tools) != 1 || tools[0].Category != "query" {
		t.Fatalf("right after the update: state %s, tools %+v", st.State, tools)
	}
	if st.Config.RequestTimeoutMs != 2000 || st.ToolCount != 1 {
		t.Errorf("status %+v", st)
	}
	if n := p.count("initialize"); n != 1 {
		t.Errorf("initialize sent %d times; the session should have been kept", n)
	}
	if _, err := m.Call(c, "a", "search", json.RawMessage(`{}`)); err != nil {
		t.Errorf("call on the kept session: %v", err)
	}

	// A connection setting does reconnect.
	next.Headers = map[string]string{"X-Api-Key": "k"}
	if _, err := m.Update(c, "a", next); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a reconnect", func() bool { return p.count("initialize") == 2 })
	waitState(t, m, "a", StateConnected)
}

// An edit of a modern server's call settings keeps its session and its
// tools, and with them its tool list's cache hint: the gateway's
// tools/list, which still holds that server's tools, stays private and
// short as the server asked (server/utilities/caching), not public for
// the sync interval until the next sync.
func TestUpdateOfCallSettingsKeepsListHint(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "hinted", Version: "1.0"}, &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs, c.CacheScope = 5000, "private" },
	})
	s.AddTool(&mcp.Tool{Name: "search", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(up.Close)
	m := testManager(t, Options{})
	start(t, m)
	c := ctx(t)
	if _, err := m.Create(c, cfg("a", up.URL)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "tools", func() bool { return len(m.Tools()) == 1 })
	want := ListHint{TTL: 5 * time.Second, Private: true}
	if h, ok := m.ToolListHint(); !ok || h != want {
		t.Fatalf("hint %+v %v, want %+v", h, ok, want)
	}
	next := cfg("a", up.URL)
	next.Category = "query"
	if st, err := m.Update(c, "a", next); err != nil || st.State != StateConnected {
		t.Fatalf("update: %+v %v", st, err)
	}
	if h, ok := m.ToolListHint(); len(m.Tools()) != 1 || !ok || h != want {
		t.Errorf("after an edit of the category: %d tools, hint %+v %v; want %+v", len(m.Tools()), h, ok, want)
	}
}

// Another replica's change made between this replica's read and its
// enable/disable is kept, not overwritten with the stale config.
func TestSetEnabledKeepsConcurrentChange(t *testing.T) {
	st := memstore.New(store.Options{})
	m := testManager(t, Options{Store: st})
	c := ctx(t)
	if _, err := m.Create(c, cfg("a", "http://127.0.0.1:1/mcp")); err != nil {
		t.Fatal(err)
	}
	other := cfg("a", "http://127.0.0.1:1/mcp")
	other.Category = "scan"
	raw, _ := json.Marshal(other)
	if _, err := st.UpdateUpstream(c, "a", raw, nil); err != nil { // another replica
		t.Fatal(err)
	}
	s, err := m.SetEnabled(c, "a", false)
	if err != nil {
		t.Fatal(err)
	}
	if s.Config.IsEnabled() || s.Config.Category != "scan" || s.State != StateDisabled {
		t.Errorf("status %+v", s.Config)
	}
	recs, _ := st.ListUpstreams(c)
	if len(recs) != 1 || !strings.Contains(string(recs[0].Config), `"category":"scan"`) || !strings.Contains(string(recs[0].Config), `"enabled":false`) {
		t.Errorf("stored %s", recs[0].Config)
	}
}

// The API shows header values as RedactedValue; sending that back keeps
// the stored credential instead of storing the placeholder.
func TestUpdateKeepsRedactedHeaders(t *testing.T) {
	st := memstore.New(store.Options{})
	m := testManager(t, Options{Store: st})
	c := ctx(t)
	first := cfg("a", "http://127.0.0.1:1/mcp")
	first.Headers = map[string]string{"Authorization": "Bearer t0ken"}
	if _, err := m.Create(c, first); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		headers   map[string]string
		wantField string
		want      map[string]string
	}{
		{"same name", map[string]string{"Authorization": RedactedValue}, "", map[string]string{"Authorization": "Bearer t0ken"}},
		{"other case, plus a new header", map[string]string{"authorization": RedactedValue, "X-Team": "blue"}, "",
			map[string]string{"authorization": "Bearer t0ken", "X-Team": "blue"}},
		{"placeholder for an unknown header", map[string]string{"X-Unknown": RedactedValue}, "headers.X-Unknown", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := cfg("a", "http://127.0.0.1:1/mcp")
			next.Headers = tt.headers
			s, err := m.Update(c, "a", next)
			var fe *FieldError
			if tt.wantField != "" {
				if !errors.As(err, &fe) || fe.Field != tt.wantField {
					t.Fatalf("err = %v, want a FieldError on %s", err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Config.Headers) != len(tt.want) {
				t.Fatalf("headers %v, want %v", s.Config.Headers, tt.want)
			}
			for k, v := range tt.want {
				if s.Config.Headers[k] != v {
					t.Errorf("header %s = %q, want %q", k, s.Config.Headers[k], v)
				}
			}
		})
	}
}

// Moving a server to another origin needs the header values again; a new
// path on the same origin keeps them.
func TestUpdateToAnotherOriginNeedsHeaderValues(t *testing.T) {
	m := testManager(t, Options{})
	first := cfg("a", "http://127.0.0.1:1/mcp")
	first.Headers = map[string]string{"Authorization": "Bearer t0ken", "X-Key": "k"}
	if _, err := m.Create(ctx(t), first); err != nil {
		t.Fatal(err)
	}
	redacted := map[string]string{"Authorization": RedactedValue, "X-Key": RedactedValue}
	tests := []struct {
		name, url string
		headers   map[string]string
		field     string // "" when accepted
	}{
		{"another port", "http://127.0.0.1:2/mcp", redacted, "headers"},
		{"another host", "http://localhost:1/mcp", redacted, "headers"},
		{"another scheme", "https://127.0.0.1:1/mcp", redacted, "headers"},
		{"one placeholder left", "http://127.0.0.1:2/mcp", map[string]string{"Authorization": "Bearer new", "X-Key": RedactedValue}, "headers.X-Key"},
		{"another path", "http://127.0.0.1:1/other?x=1", redacted, ""},
		{"the same origin spelt otherwise", "HTTP://127.0.0.1:1/mcp", redacted, ""},
		{"another origin with the values", "http://127.0.0.1:2/mcp", map[string]string{"Authorization": "Bearer new"}, ""},
	}
	for _, tt := range tests {
		if _, err := m.Update(ctx(t), "a", first); err != nil { // from the first origin each time
			t.Fatal(err)
		}
		next := cfg("a", tt.url)
		next.Headers = tt.headers
		_, err := m.Update(ctx(t), "a", next)
		var fe *FieldError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Reason, "send the value")):
			t.Errorf("%s: err = %v, want a FieldError on %s", tt.name, err, tt.field)
		}
	}
	if got := origin("http://[::1]/mcp"); got != "http://[::1]:80" {
		t.Errorf("origin of an IPv6 URL: %q", got)
	}
}

func TestReservedIDsRefused(t *testing.T) {
	for _, id := range []string{"memory", "session", "agent", "trace", "runtime"} {
		var fe *FieldError
		if err := cfg(id, "http://127.0.0.1:1/mcp").Validate(); !errors.As(err, &fe) || fe.Field != "id" || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("id %q: %v", id, err)
		}
	}
	if err := cfg("memory-tools", "http://127.0.0.1:1/mcp").Validate(); err != nil {
		t.Errorf("memory-tools: %v", err)
	}
}

// A burst of notifications/tools/list_changed costs at most two re-lists
// (the one running and one after it), not one per notification.
func TestListChangedBurstIsCoalesced(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	m := testManager(t, Options{Declared: []Config{cfg("a", p.url())}})
	start(t, m)
	waitState(t, m, "a", StateConnected)
	before := p.count("tools/list")
	// The first re-list is held at the server while the rest of the
	// burst arrives: all of it must fold into one more.
	hold := make(chan struct{})
	p.holdList.Store(&hold)
	m.listChanged("a")
	waitFor(t, "the first re-list to reach the server", func() bool { return p.count("tools/list") == before+1 })
	for range 199 {
		m.listChanged("a")
	}
	p.holdList.Store(nil)
	close(hold)
	m.mu.Lock()
	s := m.servers["a"]
	m.mu.Unlock()
	waitFor(t, "the re-lists to end", func() bool { return !s.relisting.Load() && !s.relist.Load() })
	if n := p.count("tools/list") - before; n != 2 {
		t.Errorf("%d re-lists for a burst of 200 notifications, want 2", n)
	}
}

// A server that never stops sending list_changed is re-listed at most once
// per relistGap: with an hour's gap, one re-list, and closing the manager
// ends the wait for the next.
func TestListChangedStormIsPaced(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	m := testManager(t, Options{Declared: []Config{cfg("a", p.url())}, relistGap: time.Hour})
	start(t, m)
	waitState(t, m, "a", StateConnected)
	before := p.count("tools/list")
	m.listChanged("a")
	waitFor(t, "the first re-list", func() bool { return p.count("tools/list") == before+1 })
	m.mu.Lock()
	s := m.servers["a"]
	m.mu.Unlock()
	waitFor(t, "the first re-list to end", func() bool { return !s.relist.Load() })
	for range 100 {
		m.listChanged("a")
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := p.count("tools/list") - before; n != 1 {
		t.Errorf("%d re-lists within the gap, want 1", n)
	}
}

// A session the server ends by itself is noticed without a call: the
// state says so and the next call reconnects.
func TestServerEndedSessionIsNoticed(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	m := testManager(t, Options{Declared: []Config{cfg("a", p.url())}})
	start(t, m)
	waitState(t, m, "a", StateConnected)
	for ss := range p.server.Sessions() {
		_ = ss.Close()
	}
	st := waitState(t, m, "a", StateError)
	if !strings.Contains(st.LastError, "connection lost") {
		t.Errorf("lastError %q", st.LastError)
	}
	if _, err := m.Call(ctx(t), "a", "search", json.RawMessage(`{}`)); err != nil {
		t.Errorf("call after the session ended: %v", err)
	}
	waitState(t, m, "a", StateConnected)
}

// An upstream answer over the bound fails the call (it is not read into
// memory whole); answers within it, up to the bound exactly, pass.
func TestOversizedAnswerRefused(t *testing.T) {
	p := newPeer(t)
	big := strings.Repeat("x", 64<<10)
	p.tool("big", nil, func(context.Context) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big}}}, nil
	})
	p.tool("small", nil, nil)
	c := cfg("a", p.url())
	c.MaxRetries = intp(0)
	m := testManager(t, Options{Declared: []Config{c}, maxResponseBytes: 32 << 10})
	start(t, m)
	waitState(t, m, "a", StateConnected)
	_, err := m.Call(ctx(t), "a", "big", json.RawMessage(`{}`))
	if !errors.Is(err, ErrInvocationFailed) {
		t.Fatalf("64 KiB answer with a 32 KiB bound: %v", err)
	}
	if _, err := m.Call(ctx(t), "a", "small", json.RawMessage(`{}`)); err != nil {
		t.Errorf("small answer after a refused one: %v", err)
	}
}

func TestCappedBody(t *testing.T) {
	tests := []struct {
		body    string
		max     int64
		wantErr error
	}{
		{"12345", 5, nil},
		{"1234", 5, nil},
		{"123456", 5, errResponseTooLarge},
	}
	for _, tt := range tests {
		b := &cappedBody{ReadCloser: io.NopCloser(strings.NewReader(tt.body)), max: tt.max, left: tt.max, ctx: context.Background(), probe: &probe{}}
		got, err := io.ReadAll(b)
		if !errors.Is(err, tt.wantErr) || (err == nil && string(got) != tt.body) {
			t.Errorf("body %q max %d: got %q, %v", tt.body, tt.max, got, err)
		}
	}
}

// A server that goes down is retried on its own with a capped backoff
// (no health tick needed); while it is down calls fail fast with
// ErrUnavailable and when to try again, without reaching it; once it is
// back it is reconnected within the cap.
func TestDownServerFailsFastAndHeals(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	const maxBackoff = 200 * time.Millisecond
	m := testManager(t, Options{Declared: []Config{cfg("a", p.url())},
		reconnectDelay: func(n int) time.Duration { return equalJitter(n, maxBackoff) }})
	start(t, m)
	waitState(t, m, "a", StateConnected)

	p.failConnects.Store(1 << 30)
	dropSession(m, "a")
	waitFor(t, "a failed reconnect attempt", func() bool { return status(t, m, "a").ConsecutiveFailures >= 2 })
	for range 5 {
		_, err := m.Call(ctx(t), "a", "search", nil)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrUnavailable) || e.RetryAfter <= 0 || e.RetryAfter > maxBackoff {
			t.Fatalf("call while down: %v, want ErrUnavailable with a RetryAfter within %v", err, maxBackoff)
		}
		if strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("the message shows the address: %v", err)
		}
	}
	if n := p.calledN("search"); n != 0 {
		t.Errorf("the tool ran %d times while its server was down", n)
	}

	p.failConnects.Store(0)
	waitState(t, m, "a", StateConnected)
	if _, err := m.Call(ctx(t), "a", "search", nil); err != nil {
		t.Fatalf("call after recovery: %v", err)
	}
}

// The reconnect pause grows from 100 ms and never passes the cap, with
// jitter in its upper half.
func TestEqualJitterBounds(t *testing.T) {
	for n := 1; n <= 40; n++ {
		want := min(backoffBase<<min(n-1, 30), 10*time.Second)
		for range 50 {
			if d := equalJitter(n, 10*time.Second); d < want/2 || d > want {
				t.Fatalf("attempt %d: %v outside [%v, %v]", n, d, want/2, want)
			}
		}
	}
}
