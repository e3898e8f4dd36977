package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// The federation abuse tests: upstreams that list too much, that lead back
// to the gateway, that are moved to another host with the stored
// credentials, and that are not MCP servers at all.

const fedAdminToken = "fed-admin-secret"

// handMCP is a hand-written MCP server for what a well-behaved SDK server
// cannot be made to do: it answers the handshake and ping itself and hands
// tools/list pages and tools/call answers to the test.
type handMCP struct {
	// page writes the tools of the page at cursor (a JSON array) and
	// returns the next cursor ("" on the last page).
	page func(w io.Writer, cursor string) (next string)
	// call writes the whole HTTP answer to tools/call of tool name.
	call func(w http.ResponseWriter, id json.RawMessage, name string)

	walks atomic.Int64 // tools/list requests without a cursor
	pages atomic.Int64 // tools/list requests
}

func (h *handMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed) // no standalone stream
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
			Cursor          string `json:"cursor"`
			Name            string `json:"name"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	if msg.ID == nil {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	switch msg.Method {
	case "initialize":
		rpcResult(w, msg.ID, fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"hand","version":"1"}}`, msg.Params.ProtocolVersion))
	case "ping":
		rpcResult(w, msg.ID, `{}`)
	case "tools/list":
		h.pages.Add(1)
		if msg.Params.Cursor == "" {
			h.walks.Add(1)
		}
		// Written as it is made: a page of megabytes is not held here.
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriter(w)
		fmt.Fprintf(bw, `{"jsonrpc":"2.0","id":%s,"result":{"tools":`, msg.ID)
		if next := h.page(bw, msg.Params.Cursor); next != "" {
			fmt.Fprintf(bw, `,"nextCursor":%q`, next)
		}
		bw.WriteString(`}}`)
		_ = bw.Flush()
	case "tools/call":
		h.call(w, msg.ID, msg.Params.Name)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, msg.ID)
	}
}

func rpcResult(w http.ResponseWriter, id json.RawMessage, result string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}

// toolPages returns a page function serving total tools (-1: without
// end), perPage at a time, each with a description of descBytes.
func toolPages(total, perPage, descBytes int) func(io.Writer, string) string {
	desc := strings.Repeat("d", descBytes)
	return func(w io.Writer, cursor string) string {
		from, _ := strconv.Atoi(cursor)
		io.WriteString(w, "[")
		n := 0
		for i := from; n < perPage && (total < 0 || i < total); i++ {
			if n > 0 {
				io.WriteString(w, ",")
			}
			fmt.Fprintf(w, `{"name":"t%06d","description":"%s","inputSchema":{"type":"object"}}`, i, desc)
			n++
		}
		io.WriteString(w, "]")
		if total >= 0 && from+n >= total {
			return ""
		}
		return strconv.Itoa(from + n)
	}
}

// serveOn serves h on a new listener at addr (127.0.0.2:0, say) until the
// test ends.
func serveOn(t *testing.T, addr string, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// tcpServer runs handle on every connection to a new listener at addr
// (closing the connection after it) until the test ends, and returns the
// listener's address.
func tcpServer(t *testing.T, addr string, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
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
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// fedServer runs cmd/api with the admin API on, changed by mod, and
// returns its MCP URL and its base URL.
func fedServer(t *testing.T, mod func(*config.Config)) (url, base string) {
	t.Helper()
	cfg := config.Default()
	cfg.Admin.Token = fedAdminToken
	if mod != nil {
		mod(&cfg)
	}
	url, _ = runServer(t, cfg, io.Discard)
	return url, strings.TrimSuffix(url, "/mcp")
}

// upstreamView is an upstream's status as the admin API shows it.
type upstreamView struct {
	State               string `json:"state"`
	LastError           string `json:"lastError"`
	ConsecutiveFailures int    `json:"consecutiveFailures"`
	ToolCount           int    `json:"toolCount"`
}

func getUpstream(t *testing.T, base, id string) upstreamView {
	t.Helper()
	code, body := adminDo(t, base, http.MethodGet, "/admin/upstreams/"+id, fedAdminToken, "")
	if code != http.StatusOK {
		t.Fatalf("GET /admin/upstreams/%s: %d %s", id, code, body)
	}
	var v upstreamView
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// registerUpstream creates an upstream through the admin API.
func registerUpstream(t *testing.T, base, id, url string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"id": id, "url": url, "maxRetries": 0})
	if code, resp := adminDo(t, base, http.MethodPost, "/admin/upstreams", fedAdminToken, string(body)); code != http.StatusCreated {
		t.Fatalf("register %s: %d %s", id, code, resp)
	}
}

// awaitUpstream waits until cond holds of the upstream's status (its
// state changes are driven by the server's own connects and health
// checks) and returns that status.
func awaitUpstream(t *testing.T, base, id string, cond func(upstreamView) bool) upstreamView {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v := getUpstream(t, base, id)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream %s: condition not met within 30s; last status %+v", id, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func inError(v upstreamView) bool { return v.State == "error" }

// TestAbuse_FederationBounded: an upstream listing 20,000 tools, or a
// tool list of endless megabytes, is refused while it is being paged, in
// error with a lastError naming the limit, and none of its tools is
// offered; a deployment registered as its own upstream, and two
// deployments federating each other, are recognised as loops: the
// upstream that closes the loop is in error saying so, and the tool lists
// stay as they are instead of growing with every sync.
func TestAbuse_FederationBounded(t *testing.T) {
	t.Run("limits", func(t *testing.T) {
		url, base := fedServer(t, func(c *config.Config) {
			c.Federation.HealthIntervalMs = 1000
			// The default is 8 MiB; a lower bound makes the attack cheaper
			// to send, not different.
			c.Federation.MaxToolListBytes = 1 << 20
		})
		cs := connect(t, url)
		before := toolNames(t, cs)
		tests := []struct {
			name     string
			server   *handMCP
			key      string
			maxPages int64 // per walk: the limit stops the download
		}{
			// 20,000 tools in pages of 500: over 1,000 after the third.
			{"20,000 tools", &handMCP{page: toolPages(20_000, 500, 200)}, "more than 1000 tools (federation.maxToolsPerUpstream)", 3},
			// Pages of 50 tools of 8 KiB (400 KiB) without end: over
			// 1 MiB during the third.
			{"an endless tool list", &handMCP{page: toolPages(-1, 50, 8<<10)}, "larger than 1048576 bytes (federation.maxToolListBytes)", 3},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				id := strings.ReplaceAll(strings.ReplaceAll(tc.name, ",", ""), " ", "-")
				upURL := serveOn(t, "127.0.0.1:0", tc.server)
				underAttack(t, url, "", func() {
					registerUpstream(t, base, id, upURL)
					v := awaitUpstream(t, base, id, inError)
					if !strings.Contains(v.LastError, tc.key) {
						t.Errorf("lastError %q does not name the limit (%s)", v.LastError, tc.key)
					}
					if v.ToolCount != 0 {
						t.Errorf("toolCount %d, want 0", v.ToolCount)
					}
				})
				walks, pages := tc.server.walks.Load(), tc.server.pages.Load()
				if walks == 0 || pages > walks*tc.maxPages {
					t.Errorf("%d pages were fetched in %d walks of the list; the limit should stop each after %d", pages, walks, tc.maxPages)
				}
				if got := toolNames(t, cs); !slices.Equal(got, before) {
					t.Errorf("the tool list changed: %d tools, %d before", len(got), len(before))
				}
			})
		}
	})

	t.Run("registered as its own upstream", func(t *testing.T) {
		// Two replicas of one deployment: they share a Redis and a key
		// prefix, and so a deployment id.
		prefix := "fed-loop-" + upstream.RandomDeploymentID()[:8] + ":"
		replica := func(c *config.Config) {
			c.Federation.HealthIntervalMs = 1000
			c.RedisURL = "redis://" + redistest.Shared(t) + "/0"
			c.Redis.KeyPrefix = prefix
			// Opening a client session writes to Redis; under a loaded
			// CPU the 50 ms default may pass, which is not what this is about.
			c.Redis.TimeoutMs = 2000
		}
		url, base := fedServer(t, replica)
		other, _ := fedServer(t, replica)
		for _, tc := range []struct{ name, url string }{{"itself", url}, {"another replica", other}} {
			t.Run(tc.name, func(t *testing.T) {
				cs, listChanged := countingToolList(t, url)
				before := toolNames(t, cs)
				id := strings.ReplaceAll(tc.name, " ", "-")
				underAttack(t, url, "", func() {
					registerUpstream(t, base, id, tc.url)
					// Three failed connects: the first and two health checks'.
					v := awaitUpstream(t, base, id, func(v upstreamView) bool { return v.ConsecutiveFailures >= 3 })
					if v.State != "error" || !strings.Contains(v.LastError, "loop: the upstream is this deployment") {
						t.Errorf("state %s, lastError %q; want error naming the loop", v.State, v.LastError)
					}
				})
				if got := toolNames(t, cs); !slices.Equal(got, before) {
					t.Errorf("the tool list changed: %d tools, %d before", len(got), len(before))
				}
				if n := listChanged.Load(); n != 0 {
					t.Errorf("%d tools/list_changed notifications; the tool set never changed", n)
				}
			})
		}
	})

	t.Run("two deployments federating each other", func(t *testing.T) {
		deployment := func(id string) func(*config.Config) {
			return func(c *config.Config) {
				c.Federation.HealthIntervalMs = 1000
				c.Federation.DeploymentID = id
			}
		}
		urlA, baseA := fedServer(t, deployment("dep-a"))
		urlB, baseB := fedServer(t, deployment("dep-b"))
		underAttack(t, urlA, "", func() {
			// A federates B and B federates A.
			registerUpstream(t, baseA, "b", urlB)
			registerUpstream(t, baseB, "a", urlA)
			// The loop is broken where the deployment's id is the smaller
			// one: A's upstream b; B keeps offering A's own tools.
			v := awaitUpstream(t, baseA, "b", func(v upstreamView) bool { return v.ConsecutiveFailures >= 3 })
			if v.State != "error" || !strings.Contains(v.LastError, "loop: the upstream's answers come through this deployment") {
				t.Errorf("A's upstream b: state %s, lastError %q; want error naming the loop", v.State, v.LastError)
			}
			if v := getUpstream(t, baseB, "a"); v.State != "connected" {
				t.Errorf("B's upstream a: state %s, lastError %q; want connected", v.State, v.LastError)
			}
		})
		csA, csB := connect(t, urlA), connect(t, urlB)
		namesA, namesB := toolNames(t, csA), toolNames(t, csB)
		for _, n := range namesA {
			if strings.HasPrefix(n, "b_") {
				t.Errorf("A offers %s, a tool of B, which B would offer back", n)
			}
		}
		own := 0
		for _, n := range namesB {
			switch {
			case strings.HasPrefix(n, "a_b_"):
				t.Errorf("B offers %s: its own tool, come back through A", n)
			case strings.HasPrefix(n, "a_"):
				own++
			}
		}
		if own != len(namesA) {
			t.Errorf("B offers %d of A's tools, A has %d", own, len(namesA))
		}
	})
}

// recordingUpstream is a go-sdk MCP server (sdkUpstream's tools) that
// records the Authorization and X-Api-Key values it is sent.
type recordingUpstream struct {
	url  string
	mu   sync.Mutex
	seen []string
}

func newRecordingUpstream(t *testing.T, name string) *recordingUpstream {
	t.Helper()
	var calls atomic.Int64
	inner, err := neturl.Parse(sdkUpstream(t, name, &calls))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(inner)
	proxy.FlushInterval = -1 // SSE streams pass as they come
	rec := &recordingUpstream{}
	rec.url = serveOn(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		for _, h := range []string{"Authorization", "X-Api-Key"} {
			if v := r.Header.Get(h); v != "" {
				rec.seen = append(rec.seen, v)
			}
		}
		rec.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	return rec
}

func (r *recordingUpstream) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// TestAbuse_UpstreamCredentialsStayWithTheirOrigin: an update that moves
// an upstream to another origin (host, port or scheme) with the
// "[redacted]" placeholders for its headers is refused (400 naming the
// headers to send again), and the stored credentials never reach the new
// host; a new path on the same origin keeps them; values sent again go.
func TestAbuse_UpstreamCredentialsStayWithTheirOrigin(t *testing.T) {
	// The upstreams first: they are closed after the gateway, whose
	// sessions hold streams open to them.
	home, elsewhere := newRecordingUpstream(t, "home"), newRecordingUpstream(t, "elsewhere")
	url, base := fedServer(t, nil)
	const secret, key = "Bearer upstream-secret", "key-secret"
	put := func(url string, headers map[string]string) (int, string) {
		b, _ := json.Marshal(map[string]any{"url": url, "headers": headers})
		return adminDo(t, base, http.MethodPut, "/admin/upstreams/creds", fedAdminToken, string(b))
	}
	underAttack(t, url, "", func() {
		b, _ := json.Marshal(map[string]any{"id": "creds", "url": home.url + "/mcp", "headers": map[string]string{"Authorization": secret, "X-Api-Key": key}})
		if code, resp := adminDo(t, base, http.MethodPost, "/admin/upstreams", fedAdminToken, string(b)); code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, resp)
		}
		awaitUpstream(t, base, "creds", func(v upstreamView) bool { return v.State == "connected" })

		redacted := map[string]string{"Authorization": upstream.RedactedValue, "X-Api-Key": upstream.RedactedValue}
		homeHost := strings.TrimPrefix(home.url, "http://")
		_, homePort, _ := net.SplitHostPort(homeHost)
		refused := []struct {
			name, url string
			headers   map[string]string
			field     string
			names     string
		}{
			{"another port", elsewhere.url + "/mcp", redacted, "headers", "Authorization, X-Api-Key"},
			{"another host", "http://localhost:" + homePort + "/mcp", redacted, "headers", "Authorization, X-Api-Key"},
			{"another scheme", "https://" + homeHost + "/mcp", redacted, "headers", "Authorization, X-Api-Key"},
			{"one value sent again", elsewhere.url + "/mcp", map[string]string{"Authorization": "Bearer other", "X-Api-Key": upstream.RedactedValue}, "headers.X-Api-Key", "X-Api-Key"},
		}
		for _, tc := range refused {
			code, resp := put(tc.url, tc.headers)
			var p struct {
				Status int    `json:"status"`
				Detail string `json:"detail"`
				Field  string `json:"field"`
			}
			_ = json.Unmarshal([]byte(resp), &p)
			if code != http.StatusBadRequest || p.Field != tc.field || !strings.Contains(p.Detail, "send the value of "+tc.names+" again") {
				t.Errorf("%s: %d %s; want 400 naming %s", tc.name, code, resp, tc.names)
			}
		}
		if got := elsewhere.sent(); len(got) > 0 {
			t.Errorf("the new host was sent %q", got)
		}

		// Same origin, another path: the credentials stay with the server.
		// Counted before the update: the new session may be opened before
		// the update's answer arrives.
		before := len(home.sent())
		if code, resp := put(home.url+"/other", redacted); code != http.StatusOK {
			t.Fatalf("path change: %d %s", code, resp)
		}
		awaitUpstream(t, base, "creds", func(v upstreamView) bool { return v.State == "connected" })
		waitFor(t, func() bool { return len(home.sent()) > before })
		for _, v := range home.sent()[before:] {
			if v != secret && v != key {
				t.Errorf("after a path change the server was sent %q", v)
			}
		}

		// Values sent again go to the new origin: the recorder works.
		if code, resp := put(elsewhere.url+"/mcp", map[string]string{"Authorization": "Bearer for-elsewhere"}); code != http.StatusOK {
			t.Fatalf("move with the value: %d %s", code, resp)
		}
		awaitUpstream(t, base, "creds", func(v upstreamView) bool { return v.State == "connected" })
		waitFor(t, func() bool { return slices.Contains(elsewhere.sent(), "Bearer for-elsewhere") })
		for _, v := range elsewhere.sent() {
			if v == secret || v == key {
				t.Errorf("the new host was sent the stored credential %q", v)
			}
		}
	})
}

// TestAbuse_UpstreamAnswersNotShown: an upstream URL pointed at services
// that are not MCP servers (a NATS-like banner, a closed port, an HTML
// page, a JSON-RPC service) leaves a classified lastError, with none of
// the peer's bytes and no socket address; a proxied call whose answer is
// garbage or a page tells the client what went wrong in the same words;
// and federation.deniedNetworks keeps every connection — by literal
// address at registration, by host name at the dial, and by redirect —
// away from the denied networks.
func TestAbuse_UpstreamAnswersNotShown(t *testing.T) {
	// 127.0.0.1 (and ::1) play the denied network: localhost resolves
	// there. The upstreams the gateway may reach listen on 127.0.0.2.
	url, base := fedServer(t, func(c *config.Config) {
		c.Federation.DeniedNetworks = append(upstream.DefaultDeniedNetworks(), "127.0.0.1/32", "::1/128")
	})

	// A NATS server greets every connection with an INFO line.
	const banner = `INFO {"server_id":"NCXSECRETSERVERID","version":"2.10.7","go":"go1.21.5","host":"0.0.0.0","port":4222}` + "\r\n"
	natsAddr := tcpServer(t, "127.0.0.2:0", func(c net.Conn) {
		_, _ = io.WriteString(c, banner)
		_, _ = io.Copy(io.Discard, c)
	})
	closedLn, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closedLn.Addr().String()
	closedLn.Close()
	page := serveOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "<title>internal-admin-console</title>")
	}))
	jsonRPC := serveOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&msg)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"the method does not exist on node secret-node-7"}}`, msg.ID)
	}))

	// The denied network: a listener that counts the connections it gets.
	var deniedConns atomic.Int64
	deniedAddr := tcpServer(t, "127.0.0.1:0", func(net.Conn) { deniedConns.Add(1) })
	_, deniedPort, _ := net.SplitHostPort(deniedAddr)
	redirect := func(to string) string {
		return serveOn(t, "127.0.0.2:0", http.RedirectHandler(to, http.StatusTemporaryRedirect))
	}

	// An MCP server whose tool calls answer garbage or a page.
	const leak = "INFO secret-peer-bytes"
	hand := &handMCP{
		page: func(w io.Writer, _ string) string {
			_, _ = io.WriteString(w, `[{"name":"garbage","inputSchema":{"type":"object"}},{"name":"page","inputSchema":{"type":"object"}}]`)
			return ""
		},
		call: func(w http.ResponseWriter, _ json.RawMessage, name string) {
			if name == "page" {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusInternalServerError)
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			_, _ = io.WriteString(w, leak)
		},
	}
	handURL := serveOn(t, "127.0.0.2:0", hand)

	// Nothing of these may show: the peers' bytes, their addresses.
	// (The denied network's own entry, 127.0.0.1/32, is named: it is the
	// configuration to change, not the peer's.)
	forbidden := []string{"INFO", "NCXSECRETSERVERID", "2.10.7", "internal-admin-console", "secret-node-7", "secret-peer-bytes",
		"127.0.0.2", "dial tcp", closedAddr, ":" + deniedPort}
	clean := func(what, msg string) {
		t.Helper()
		for _, f := range forbidden {
			if strings.Contains(msg, f) {
				t.Errorf("%s shows %q: %q", what, f, msg)
			}
		}
	}

	underAttack(t, url, "", func() {
		tests := []struct {
			id, url string
			want    string
		}{
			{"nats", "http://" + natsAddr + "/mcp", "not an MCP server: the answer is not HTTP"},
			{"closed", "http://" + closedAddr + "/mcp", "connection refused"},
			{"page", page + "/mcp", "not an MCP endpoint: HTTP 404 (Not Found)"},
			{"jsonrpc", jsonRPC + "/mcp", "not an MCP server: it answered initialize with JSON-RPC error -32601"},
			{"tls", "https://" + strings.TrimPrefix(page, "http://") + "/mcp", "TLS: the server answers plain HTTP"},
			{"denied-by-name", "http://localhost:" + deniedPort + "/mcp", "federation.deniedNetworks"},
			{"denied-redirect-name", redirect("http://localhost:"+deniedPort+"/mcp") + "/mcp", "federation.deniedNetworks"},
			{"denied-redirect-ip", redirect("http://127.0.0.1:"+deniedPort+"/mcp") + "/mcp", "federation.deniedNetworks"},
		}
		for _, tc := range tests {
			registerUpstream(t, base, tc.id, tc.url)
		}
		for _, tc := range tests {
			v := awaitUpstream(t, base, tc.id, inError)
			if !strings.Contains(v.LastError, tc.want) {
				t.Errorf("%s: lastError %q, want it to say %q", tc.id, v.LastError, tc.want)
			}
			clean(tc.id+"'s lastError", v.LastError)
		}

		// A literal address in a denied network is refused at registration.
		body := `{"id":"denied-ip","url":"http://127.0.0.1:` + deniedPort + `/mcp"}`
		code, resp := adminDo(t, base, http.MethodPost, "/admin/upstreams", fedAdminToken, body)
		if code != http.StatusBadRequest || !strings.Contains(resp, `"field":"url"`) || !strings.Contains(resp, "federation.deniedNetworks") {
			t.Errorf("registering a denied address: %d %s", code, resp)
		}
		if n := deniedConns.Load(); n != 0 {
			t.Errorf("the denied network got %d connections", n)
		}

		// Proxied calls whose answers are not MCP.
		registerUpstream(t, base, "hand", handURL+"/mcp")
		cs := connect(t, url)
		waitFor(t, func() bool { return slices.Contains(toolNames(t, cs), "hand_page") })
		for tool, want := range map[string]string{
			"hand_garbage": "protocol error: the server's answer is not valid MCP",
			"hand_page":    "the server failed: HTTP 500 (Internal Server Error)",
		} {
			env := call(t, cs, tool, nil)
			if env.Success || env.Error.Code != "INVOCATION_FAILED" || !strings.Contains(env.Error.Message, want) {
				t.Errorf("%s: %+v; want INVOCATION_FAILED saying %q", tool, env, want)
			}
			clean(tool+"'s error", env.Error.Message)
		}
	})
}
