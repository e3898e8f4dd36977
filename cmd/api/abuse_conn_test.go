package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/auth/authtest"
	"github.com/mcp-runtime/mcp-runtime/internal/config"
)

// hangGuard bounds how long a test waits for the server to do something
// it must do at once or by a deadline far shorter than this: a test that
// hits it has found a hang, not a slow machine.
const hangGuard = 20 * time.Second

// hostOf is the host:port of an http:// URL.
func hostOf(t *testing.T, url string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// stalledPost opens a connection and sends the headers of a POST to /mcp
// that declares a 1000-byte body, then nothing: the client that never
// sends its body. extra is more header lines ("Name: value\r\n").
func stalledPost(t *testing.T, host, extra string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, err = fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n%s\r\n", host, extra)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// answerThenClose reads what the server sends on c until it closes the
// connection and returns it; it fails the test if the server does not
// close it.
func answerThenClose(t *testing.T, c net.Conn) string {
	t.Helper()
	return readUntilClosed(t, c, false)
}

// readUntilClosed is answerThenClose; reset says a reset counts as
// closed too, for a connection the server may close before it has read
// all the client sent (the kernel then answers with a reset, not an end
// of stream).
func readUntilClosed(t *testing.T, c net.Conn, reset bool) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(hangGuard))
	b, err := io.ReadAll(c)
	if err != nil && !(reset && errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("the server neither answered nor closed the connection (got %q): %v", b, err)
	}
	return string(b)
}

// statusLine is the first line of a raw HTTP response.
func statusLine(resp string) string {
	line, _, _ := strings.Cut(resp, "\r\n")
	return line
}

// serverConns counts the goroutines serving an HTTP connection in this
// process (net/http's per-connection goroutine).
func serverConns() int {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	return strings.Count(b.String(), "net/http.(*conn).serve(")
}

// awaitServerConns waits until at most n connections are being served.
func awaitServerConns(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for serverConns() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still served, want at most %d as before the attack", serverConns(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// apikeyConfig is apikey mode with one configured key, the bystander's.
func apikeyConfig(key string) config.Config {
	cfg := config.Default()
	cfg.Auth.Mode = auth.ModeAPIKey
	cfg.Auth.APIKeys = []auth.APIKey{{ID: "bystander", SHA256: keyHash(key)}}
	return cfg
}

// Clients that send the headers of a request with a body and then
// nothing: without valid credentials they get their 401 at once and the
// connection is closed, though the body deadline is an hour away; with
// valid credentials the server waits for the body only until
// transport.readBodyTimeoutMs, then answers 408 naming it and closes the
// connection. Either way every connection goes, with its goroutine,
// while a well-behaved client keeps being served.
func TestAbuse_StalledBodiesAreAnsweredAndClosed(t *testing.T) {
	const key = "bystander-key"
	t.Run("unauthenticated", func(t *testing.T) {
		cfg := apikeyConfig(key)
		cfg.Transport.ReadBodyTimeoutMs = time.Hour.Milliseconds()
		url, _ := runServer(t, cfg, io.Discard)
		host := hostOf(t, url)
		underAttack(t, url, key, func() {
			before := serverConns()
			var conns []net.Conn
			for i := range 20 {
				extra := ""
				if i%2 == 1 {
					extra = "Authorization: Bearer not-a-key\r\n"
				}
				conns = append(conns, stalledPost(t, host, extra))
			}
			for i, c := range conns {
				resp := answerThenClose(t, c)
				if statusLine(resp) != "HTTP/1.1 401 Unauthorized" || !strings.Contains(resp, "Www-Authenticate: Bearer") {
					t.Errorf("connection %d: got %q, want a 401 with its challenge", i, resp)
				}
			}
			awaitServerConns(t, before)
		})
	})
	t.Run("authenticated", func(t *testing.T) {
		cfg := apikeyConfig(key)
		cfg.Transport.ReadBodyTimeoutMs = 200
		url, _ := runServer(t, cfg, io.Discard)
		host := hostOf(t, url)
		underAttack(t, url, key, func() {
			before := serverConns()
			var conns []net.Conn
			for range 20 {
				conns = append(conns, stalledPost(t, host, "Authorization: Bearer "+key+"\r\n"))
			}
			for i, c := range conns {
				resp := answerThenClose(t, c)
				if statusLine(resp) != "HTTP/1.1 408 Request Timeout" || !strings.Contains(resp, "transport.readBodyTimeoutMs (200 ms)") {
					t.Errorf("connection %d: got %q, want a 408 naming transport.readBodyTimeoutMs", i, resp)
				}
			}
			awaitServerConns(t, before)
		})
	})
}

// SIGTERM while clients hold connections waiting for bodies they never
// send, for headers they never finish, and idle between requests: the
// shutdown does not wait for any of them (their deadlines are an hour
// away, and so is the grace period), ends without an error, and every
// connection is answered or closed.
func TestAbuse_ShutdownWithStalledConnections(t *testing.T) {
	const key = "bystander-key"
	cfg := apikeyConfig(key)
	cfg.Transport.ReadBodyTimeoutMs = time.Hour.Milliseconds()
	cfg.Transport.ReadHeaderTimeoutMs = time.Hour.Milliseconds()
	cfg.ShutdownGraceMs = time.Hour.Milliseconds()
	idle := serverConns()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, url, stop := serveApp(t, cfg, io.Discard, ln)
	host := hostOf(t, url)
	var conns []net.Conn
	for range 10 {
		conns = append(conns, stalledPost(t, host, "Authorization: Bearer "+key+"\r\n"))
	}
	for range 5 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_, _ = fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\n", host) // headers never finished
		conns = append(conns, c)
	}
	for range 5 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_, _ = fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /healthz: %v %v", resp, err)
		}
		conns = append(conns, c) // idle, kept alive
	}
	awaitOpen(t, a, len(conns)) // accepted: closing the listener would reset the others

	stop() // fails the test if the shutdown errs or hangs
	for i, c := range conns {
		// A body being waited for is answered 503 (shutting down); a
		// request whose headers were still being read when the shutdown
		// began, and an idle connection, are closed without a word.
		if resp := readUntilClosed(t, c, true); resp != "" && (i >= 10 || statusLine(resp) != "HTTP/1.1 503 Service Unavailable") {
			t.Errorf("connection %d: got %q", i, resp)
		}
	}
	awaitServerConns(t, idle)
}

// rawRequest opens a connection, sends req (a whole HTTP/1.1 request,
// with the Host header added) and returns the connection and the
// response's head; the body is left unread.
func rawRequest(t *testing.T, host, req string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	line, rest, _ := strings.Cut(req, "\r\n")
	if _, err := fmt.Fprintf(c, "%s\r\nHost: %s\r\n%s", line, host, rest); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(hangGuard))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, resp
}

// openStream initializes a client session and opens its GET stream on a
// connection of its own, which stays busy while the stream lasts.
func openStream(t *testing.T, host string) net.Conn {
	t.Helper()
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"holder","version":"1"}}}`
	c, resp := rawRequest(t, host, fmt.Sprintf("POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(init), init))
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %s", resp.Status)
	}
	answerThenClose(t, c) // Connection: close: its place is free again
	c, resp = rawRequest(t, host, "GET /mcp HTTP/1.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: "+sid+
		"\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %s", resp.Status)
	}
	return c
}

// awaitOpen waits until the server counts n open connections.
func awaitOpen(t *testing.T, a *app, n int) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for a.connStats().Open != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", a.connStats().Open, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// transport.maxConnections holds, and an attacker holding every place
// does not lock a well-behaved client out. With every place taken by
// busy connections (SSE streams), a new connection is answered 503
// naming the limit. With the places taken by connections that send
// nothing (headers never finished), a new connection is refused only
// until they have waited a second, then takes the place of the one that
// waited longest, which is closed. The bystander, whose connection never
// waits that long, is served throughout.
func TestAbuse_ConnectionCapMakesRoomForClients(t *testing.T) {
	const max = 12
	cfg := config.Default()
	cfg.Transport.MaxConnections = max
	cfg.Transport.ReadHeaderTimeoutMs = time.Hour.Milliseconds()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, url, _ := serveApp(t, cfg, io.Discard, ln)
	host := hostOf(t, url)
	underAttack(t, url, "", func() {
		before := serverConns()
		held := a.connStats().Open // the bystander's
		var streams []net.Conn
		for range max - held {
			streams = append(streams, openStream(t, host))
		}
		awaitOpen(t, a, max)
		for i := range 3 {
			c, resp := rawRequest(t, host, "GET /healthz HTTP/1.1\r\n\r\n")
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
				!strings.Contains(string(body), "transport.maxConnections") {
				t.Fatalf("connection %d over the cap: %s %q, want 503 naming transport.maxConnections", i, resp.Status, body)
			}
			_ = c.Close()
		}
		if s := a.connStats(); s.Refused != 3 || s.Evicted != 0 {
			t.Fatalf("with every place busy: %+v, want 3 refused and none evicted", s)
		}
		for _, c := range streams {
			_ = c.Close()
		}
		awaitOpen(t, a, held)

		var stalled []net.Conn
		for range max - held {
			c, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			_, _ = fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\n", host)
			stalled = append(stalled, c)
			awaitOpen(t, a, held+len(stalled)) // in order: the first waits longest
		}
		// Refused until the stalled connections have waited a second,
		// then admitted in the place of the first.
		deadline := time.Now().Add(hangGuard)
		for {
			c, resp := rawRequest(t, host, "GET /healthz HTTP/1.1\r\n\r\n")
			_ = c.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
				t.Fatalf("a new connection while the places are held by stalled ones: %s", resp.Status)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got := answerThenClose(t, stalled[0]); got != "" {
			t.Errorf("the longest-stalled connection got %q, want it closed", got)
		}
		if s := a.connStats(); s.Evicted != 1 {
			t.Errorf("stats %+v, want one connection evicted", s)
		}
		for _, c := range stalled {
			_ = c.Close()
		}
		awaitServerConns(t, before)
	})
}

// floodTokens sends n requests with made-up bearer tokens, from the
// loopback addresses srcs in turn, eight at a time, and counts the
// answers by status. Every 429 and 503 must say when to retry. They are
// GETs of the MCP endpoint, which authenticate as POSTs do: without a
// body, a refused request keeps its connection (a POST's is closed, see
// transport.unwantedBody), so this is 4,000 guesses, not also 4,000
// connections, whose goroutines the race detector would keep memory for.
func floodTokens(t *testing.T, url string, srcs []string, n int) map[int]int {
	return flood(t, url, srcs, n, rand.Text)
}

// flood sends n GETs of url from the loopback addresses srcs in turn,
// eight at a time, each with the bearer token token returns (none if
// nil), and counts the answers by status.
func flood(t *testing.T, url string, srcs []string, n int, token func() string) map[int]int {
	t.Helper()
	clients := make([]*http.Client, len(srcs))
	for i, src := range srcs {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 8}
		defer tr.CloseIdleConnections() // the attacker goes
		clients[i] = &http.Client{Transport: tr}
	}
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Accept", "text/event-stream")
				if token != nil {
					req.Header.Set("Authorization", "Bearer "+token())
				}
				resp, err := clients[i%len(clients)].Do(req)
				if err != nil {
					t.Errorf("request %d: %v", i, err)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) &&
					resp.Header.Get("Retry-After") == "" {
					t.Errorf("request %d: %s without Retry-After", i, resp.Status)
				}
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return statuses
}

// 4,000 made-up API keys against apikey mode on PostgreSQL (before the
// fix: answered at about 1,000/s, about 2,000 PostgreSQL transactions).
// From one address — the bystander's own — the budget of failed
// authentications (rateLimits.unauthenticated, on by default) lets 30
// through and then 2 a second: the rest are 429 with Retry-After without
// a lookup. From 100 addresses, each within its own budget, the lookups
// of unknown keys are still held to auth.apiKeyLookupsPerSecond (100 a
// second, a burst of 100), the rest 503 with Retry-After. Store lookups
// are counted by the server (mcp_auth_key_lookups_total: every call of
// the lookup is one query). The bystander authenticates with a key
// created through the admin API, from the address that spent its budget,
// and is served throughout.
func TestAbuse_UnknownKeysCannotReachTheDatabase(t *testing.T) {
	cfg := pgConfig(t)
	cfg.Auth.Mode = auth.ModeAPIKey
	cfg.Admin.Token = "admin-secret"
	unauth, perSecond := cfg.RateLimits.Unauthenticated, float64(cfg.Auth.APIKeyLookupsPerSecond)
	url, _ := runServer(t, cfg, io.Discard)
	code, body := adminDo(t, strings.TrimSuffix(url, "/mcp"), http.MethodPost, "/admin/apikeys", "admin-secret", `{"id":"bystander","tenant":"team-b"}`)
	var created struct{ Key string }
	if err := json.Unmarshal([]byte(body), &created); err != nil || code != http.StatusCreated {
		t.Fatalf("create key: %d %s", code, body)
	}
	srcs := make([]string, 100)
	for i := range srcs {
		srcs[i] = fmt.Sprintf("127.0.1.%d", i+1)
	}
	// The same traffic, harmless, first: under -race the race runtime's
	// own memory grows with the first few thousand requests a process
	// serves, whatever they are, and stays (it is not the server's);
	// the resident set before the attack must include it.
	flood(t, strings.TrimSuffix(url, "/mcp")+"/healthz", append(srcs, "127.0.0.1"), 4000, nil)
	underAttack(t, url, created.Key, func() {
		lookups := metric(t, url, "mcp_auth_key_lookups_total")
		start := time.Now()
		statuses := floodTokens(t, url, []string{"127.0.0.1"}, 2000)
		elapsed := time.Since(start).Seconds()
		got := metric(t, url, "mcp_auth_key_lookups_total") - lookups
		// The bystander's key is looked up again when its cached answer
		// expires, every 5 s.
		bound := float64(unauth.Burst) + unauth.PerSecond*elapsed + 1 + elapsed/5
		t.Logf("one address: %v in %.1fs, %.0f lookups (bound %.0f)", statuses, elapsed, got, bound)
		if got > bound || statuses[http.StatusTooManyRequests] == 0 || statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] != 2000 {
			t.Errorf("2000 made-up keys from one address: %v and %.0f store lookups, want 401 then 429 and at most %.0f lookups", statuses, got, bound)
		}

		lookups = metric(t, url, "mcp_auth_key_lookups_total")
		start = time.Now()
		statuses = floodTokens(t, url, srcs, 2000)
		elapsed = time.Since(start).Seconds()
		got = metric(t, url, "mcp_auth_key_lookups_total") - lookups
		bound = perSecond + perSecond*elapsed + 1 + elapsed/5
		t.Logf("%d addresses: %v in %.1fs, %.0f lookups (bound %.0f)", len(srcs), statuses, elapsed, got, bound)
		if got > bound || statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests]+statuses[http.StatusServiceUnavailable] != 2000 {
			t.Errorf("2000 made-up keys from %d addresses: %v and %.0f store lookups, want 401, 429 or 503 and at most %.0f lookups",
				len(srcs), statuses, got, bound)
		}
	})
}

// Tokens the issuer signed but whose header requires an extension in
// crit (RFC 7515 §4.1.11; this server understands none) are refused with
// a challenge that says so, every time (they are not cached); the same
// claims without crit are accepted. A bystander with a valid token is
// served throughout.
func TestAbuse_CriticalJWTExtensionsRefused(t *testing.T) {
	url, is := oauthIssuerServer(t, io.Discard)
	claims := func(sub string) jwt.MapClaims {
		return authtest.Claims("https://issuer.test", url, sub, "team-a", "mcp:tools")
	}
	bystander := is.Token(claims("bystander"), "k1")
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	underAttack(t, url, bystander, func() {
		crit := authtest.SignHeader(t, claims("attacker"), map[string]any{"kid": "k1", "crit": []any{"urn:example:pop"}, "urn:example:pop": true}, is.Key("k1"))
		for i := range 20 {
			tok := crit
			if i%2 == 1 { // and ones never seen, with an extension of their own
				tok = authtest.SignHeader(t, claims(fmt.Sprintf("attacker-%d", i)), map[string]any{"kid": "k1", "crit": []any{"b64"}, "b64": false}, is.Key("k1"))
			}
			resp := rawPost(t, url, init, map[string]string{"Authorization": "Bearer " + tok})
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "(crit)") {
				t.Fatalf("token %d with crit: %s %q, want 401 naming crit", i, resp.Status, resp.Header.Get("WWW-Authenticate"))
			}
		}
		resp := rawPost(t, url, init, map[string]string{"Authorization": "Bearer " + is.Token(claims("attacker"), "k1")})
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the same claims without crit: %s", resp.Status)
		}
	})
}
