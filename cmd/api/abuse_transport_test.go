package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

// Abuse of the transport: what a client sends that a client session
// keeps (initialize's params), how many sessions one caller may hold,
// what a client's responses make the replicas do, and what a request
// makes the server write to its log.

// answer is one POST's outcome, its body read.
type answer struct {
	status int
	header http.Header
	body   string
}

// post sends body to url as a client of session sid (none when "") with
// token (none when "") and extra headers, and reads the answer.
func post(t *testing.T, url, sid, token, body string, headers ...string) answer {
	t.Helper()
	h := map[string]string{"MCP-Protocol-Version": "2025-11-25"}
	if sid != "" {
		h["Mcp-Session-Id"] = sid
	}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	resp := rawPost(t, url, body, h)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// initializeBody is an initialize request with the given clientInfo and
// capabilities (JSON).
func initializeBody(clientInfo, capabilities string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` +
		capabilities + `,"clientInfo":` + clientInfo + `}}`
}

// openSession initializes a client session through url and returns its id.
func openSession(t *testing.T, url, token string) string {
	t.Helper()
	a := post(t, url, "", token, initializeBody(`{"name":"c","version":"1"}`, `{"sampling":{}}`))
	sid := a.header.Get("Mcp-Session-Id")
	if a.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %.300s", a.status, a.body)
	}
	return sid
}

// sessionHashes counts the client sessions Redis holds.
func sessionHashes(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), "mcp-runtime:cs:{*}").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// withRedis is the default configuration with a Redis of the test's own,
// and a client of it. Each Redis call may take 500 ms, as in the
// transport's tests, rather than production's 100: the machine running
// the tests may stall a call for longer, and Redis's latency is not what
// these tests measure.
func withRedis(t *testing.T) (config.Config, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	cfg := config.Default()
	cfg.RedisURL = "redis://" + srv.Addr() + "/0"
	cfg.Redis.TimeoutMs = 500
	return cfg, rdb
}

// A client session keeps initialize's clientInfo and capabilities for
// its life, in memory and in the Redis session hash. Fifty initializes
// with a 3.9 MB clientInfo took the resident set from 41 to 359 MB: now
// each is -32602 naming the member and its limit, and nothing of it is
// kept, here or in Redis. Twenty (78 MB sent, over 120 MB were they kept)
// are well past the resident-set tolerance. The same for capabilities, by size and by
// depth. A clientInfo at the limit is accepted, and runtime_info does not
// echo it.
func TestAbuse_OversizedInitializeParamsRefused(t *testing.T) {
	cfg, rdb := withRedis(t)
	url, _ := startServer(t, cfg)

	huge := `{"name":"` + strings.Repeat("x", 3_900_000) + `","version":"1"}`
	deep := strings.Repeat(`{"x":`, 50) + `{}` + strings.Repeat(`}`, 50)
	refusals := []struct {
		name, clientInfo, capabilities, want string
		times                                int
	}{
		{"3.9 MB clientInfo", huge, `{}`, "params.clientInfo is 3900025 bytes, over the limit of 4096 (transport.maxClientInfoBytes)", 20},
		{"3.9 MB capabilities", `{"name":"c","version":"1"}`, `{"experimental":` + huge + `}`, "params.capabilities is 3900042 bytes, over the limit of 16384 (transport.maxCapabilitiesBytes)", 5},
		{"capabilities 51 deep", `{"name":"c","version":"1"}`, `{"experimental":` + deep + `}`, "params.capabilities nests 52 levels deep, over the limit of 10 (transport.maxInitializeDepth)", 5},
	}
	underAttack(t, url, "", func() {
		before := sessionHashes(t, rdb)
		for _, r := range refusals {
			body := initializeBody(r.clientInfo, r.capabilities)
			for i := range r.times {
				a := post(t, url, "", "", body)
				var msg struct {
					Error struct {
						Code    int
						Message string
					}
				}
				_ = json.Unmarshal([]byte(a.body), &msg)
				if a.status != http.StatusOK || msg.Error.Code != -32602 || !strings.Contains(msg.Error.Message, r.want) {
					t.Fatalf("%s, attempt %d: %d %.300s; want -32602 saying %q", r.name, i, a.status, a.body, r.want)
				}
				if sid := a.header.Get("Mcp-Session-Id"); sid != "" {
					t.Fatalf("%s: a refused initialize got a client session", r.name)
				}
			}
		}
		if after := sessionHashes(t, rdb); after != before {
			t.Errorf("Redis holds %d client sessions after the refused initializes, %d before", after, before)
		}
	})

	// At the limit: accepted, and what runtime_info says of the session
	// does not carry it.
	name := strings.Repeat("n", 4096-len(`{"name":"","version":"1"}`))
	a := post(t, url, "", "", initializeBody(`{"name":"`+name+`","version":"1"}`, `{}`))
	sid := a.header.Get("Mcp-Session-Id")
	if a.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize with a clientInfo of 4096 bytes: %d %.300s", a.status, a.body)
	}
	info := post(t, url, sid, "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"runtime_info","arguments":{}}}`)
	if info.status != http.StatusOK || !strings.Contains(info.body, `"clientSessions"`) || strings.Contains(info.body, "nnnn") {
		t.Errorf("runtime_info: %d %.500s; want the server's description without the client's", info.status, info.body)
	}
}

// apiKey is a configured API key and its secret.
func apiKey(id, tenant string) (auth.APIKey, string) {
	secret := "key-" + id + "-0123456789abcdef"
	sum := sha256.Sum256([]byte(secret))
	return auth.APIKey{ID: id, SHA256: hex.EncodeToString(sum[:]), Tenant: tenant}, secret
}

// With the defaults, one tenant opened 81 of 100 client sessions and kept
// them alive with pings, and everyone else got 503 for 30 minutes. With
// authentication on, a principal now holds at most a tenth of
// transport.maxSessions by default, and a tenant at most
// transport.maxSessionsPerTenant, across replicas: past its share
// initialize is 429 naming the cap, while another principal of another
// tenant still connects, and a DELETE gives a place back.
func TestAbuse_OnePrincipalCannotTakeEverySession(t *testing.T) {
	cfg, _ := withRedis(t)
	cfg.Auth.Mode = auth.ModeAPIKey
	cfg.Transport.MaxSessions = 30 // a tenth: 3 per principal, by default
	cfg.Transport.MaxSessionsPerTenant = 4
	keys := map[string]string{}
	for _, k := range [][2]string{{"attacker", "t1"}, {"colleague", "t1"}, {"other", "t2"}, {"bystander", "t3"}} {
		key, secret := apiKey(k[0], k[1])
		cfg.Auth.APIKeys = append(cfg.Auth.APIKeys, key)
		keys[k[0]] = secret
	}
	urlA, _ := startServer(t, cfg)
	urlB, _ := startServer(t, cfg)
	replicas := []string{urlA, urlB}

	initialize := func(who string, i int) answer {
		return post(t, replicas[i%2], "", keys[who], initializeBody(`{"name":"`+who+`","version":"1"}`, `{}`))
	}
	refused := func(a answer, key string) bool {
		return a.status == http.StatusTooManyRequests && a.header.Get("Retry-After") != "" &&
			strings.Contains(a.body, key) && a.header.Get("Mcp-Session-Id") == ""
	}
	underAttack(t, urlA, keys["bystander"], func() {
		var held []string
		for i := range 20 { // its whole share, then a flood
			a := initialize("attacker", i)
			switch {
			case i < 3 && a.status == http.StatusOK:
				held = append(held, a.header.Get("Mcp-Session-Id"))
			case i >= 3 && refused(a, "transport.maxSessionsPerPrincipal"):
			default:
				t.Fatalf("attacker's initialize %d: %d %.300s", i, a.status, a.body)
			}
		}
		// The attacker's tenant has one place left, taken by a colleague.
		if a := initialize("colleague", 0); a.status != http.StatusOK {
			t.Fatalf("colleague's first initialize: %d %.300s", a.status, a.body)
		}
		if a := initialize("colleague", 1); !refused(a, "transport.maxSessionsPerTenant") {
			t.Fatalf("colleague's second initialize: %d %.300s; want 429 naming transport.maxSessionsPerTenant", a.status, a.body)
		}
		// Another principal, of another tenant, connects on either
		// replica and works.
		for _, url := range replicas {
			cs := connectAs(t, url, keys["other"], nil)
			mustSucceed(t, call(t, cs, "runtime_echo", map[string]any{"text": "still served"}), "another principal's call")
		}
		// A DELETE, on the other replica than the one that made the
		// session, gives the attacker's place back.
		req, _ := http.NewRequest(http.MethodDelete, urlB, nil)
		req.Header.Set("Mcp-Session-Id", held[0])
		req.Header.Set("Authorization", "Bearer "+keys["attacker"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %v %v", resp, err)
		}
		resp.Body.Close()
		if a := initialize("attacker", 0); a.status != http.StatusOK {
			t.Fatalf("attacker's initialize after a DELETE: %d %.300s", a.status, a.body)
		}
	})
}

// A JSON-RPC response POSTed for no pending server-to-client request was
// answered 202 and broadcast to every replica over Redis pub/sub, 1 MB at
// a time. Now it is still answered 202 (basic/transports: a response the
// server takes; a late answer is no client fault) but nothing is
// published or stored, whichever replica it reaches and whatever its id;
// a response over transport.maxClientResponseBytes is 413 naming the
// limit. A cancellation matching no request is published for the other
// replicas only while its requestId is of a size clients use.
func TestAbuse_UnsolicitedClientResponsesNotForwarded(t *testing.T) {
	cfg, rdb := withRedis(t)
	urlA, _ := startServer(t, cfg)
	urlB, _ := startServer(t, cfg)
	sid := openSession(t, urlA, "")

	// Everything published on the sessions channel from now on.
	ctx := context.Background()
	sub := rdb.Subscribe(ctx, "mcp-runtime:sessions")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription is confirmed
		t.Fatal(err)
	}
	big := strings.Repeat("r", 1_000_000)
	underAttack(t, urlA, "", func() {
		for _, url := range []string{urlA, urlB} {
			for _, id := range []string{`"s123"`, `"s1"`, `"x"`, `7`} {
				for range 3 {
					body := `{"jsonrpc":"2.0","id":` + id + `,"result":{"role":"assistant","content":{"type":"text","text":"` + big + `"},"model":"m"}}`
					if a := post(t, url, sid, "", body); a.status != http.StatusAccepted || a.body != "" {
						t.Fatalf("unsolicited response %s: %d %.300s; want 202 with no body", id, a.status, a.body)
					}
				}
			}
			// A cancellation of a request that runs nowhere is published
			// to every replica only while its id is of a size clients use.
			for range 3 {
				cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + big + `"}}`
				if a := post(t, url, sid, "", cancel); a.status != http.StatusAccepted {
					t.Fatalf("a cancellation with a 1 MB requestId: %d %.300s; want 202", a.status, a.body)
				}
			}
			tooLarge := `{"jsonrpc":"2.0","id":"s5","result":{"text":"` + strings.Repeat("r", 2_000_000) + `"}}`
			if a := post(t, url, sid, "", tooLarge); a.status != http.StatusRequestEntityTooLarge || !strings.Contains(a.body, "transport.maxClientResponseBytes") {
				t.Fatalf("a 2 MB response: %d %.300s; want 413 naming transport.maxClientResponseBytes", a.status, a.body)
			}
		}
	})

	// A change every replica must hear, published after all of the above:
	// once it arrives, everything published before it has.
	if a := post(t, urlB, sid, "", `{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`); a.status != http.StatusOK {
		t.Fatalf("logging/setLevel: %d %.300s", a.status, a.body)
	}
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := sub.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			t.Fatalf("the sessions channel: %v", err)
		}
		var c struct{ Op string }
		_ = json.Unmarshal([]byte(m.Payload), &c)
		if c.Op == "level" {
			break
		}
		if c.Op == "answer" || len(m.Payload) > 4096 {
			t.Fatalf("published on the sessions channel: %.200s (%d bytes)", m.Payload, len(m.Payload))
		}
	}
	if keys, err := rdb.Keys(ctx, "mcp-runtime:cs:{"+sid+"}:a:*").Result(); err != nil || len(keys) != 0 {
		t.Errorf("mailboxes stored for unsolicited responses: %v %v", keys, err)
	}
}

// A 1 MB method name produced a 1 MB log line, and the raw id and
// Last-Event-ID were logged the same way. Every field a log line takes
// from a request is now bounded, at debug level too, and no tool
// argument, key or value, is logged.
func TestAbuse_LogsBoundedAndFreeOfArguments(t *testing.T) {
	cfg := config.Default()
	cfg.LogLevel = "debug"
	cfg.Admin.Token = "admin-token-0123456789"
	url, logs := startServer(t, cfg)
	base := strings.TrimSuffix(url, "/mcp")
	mega := strings.Repeat("m", 1<<20)
	header := strings.Repeat("h", 28<<10)
	const secretKey, secretValue = "SECRETKEYNAME7f3a", "SECRETVALUE9c1e"

	underAttack(t, url, "", func() {
		sid := openSession(t, url, "")
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"` + mega + `"}`,        // without a session
			`{"jsonrpc":"2.0","id":"` + mega + `","method":"ping"}`,   // a 1 MB id
			`{"jsonrpc":"2.0","method":"notifications/` + mega + `"}`, // an unknown notification (debug)
			`{"jsonrpc":"2.0","id":"` + mega + `","result":{}}`,       // an unsolicited response (debug)
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + mega + `"}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + mega + `","arguments":{}}}`, // a huge tool name
		} {
			post(t, url, "", "", body)
			post(t, url, sid, "", body)
		}
		// Tool arguments with a secret key and value: a call that
		// succeeds, one the schema refuses, one over the request limits.
		for _, args := range []string{
			`{"key":"k","value":{"` + secretKey + `":"` + secretValue + `"}}`,
			`{"key":"k","value":{"` + secretKey + `":"` + secretValue + `"},"` + secretKey + `":1}`,
			`{"key":"k","value":{"` + secretKey + `":[` + strings.Repeat(`"`+secretValue+`",`, 200) + `1]}}`,
		} {
			post(t, url, sid, "", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_store","arguments":`+args+`}}`)
		}
		post(t, url, sid, "", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"runtime_echo","arguments":{"text":"`+secretValue+`"}}}`)
		// Headers and URIs of the client's choosing, each under the
		// server's 64 KiB limit on a request's headers.
		get := func(target string, headers ...string) {
			req, _ := http.NewRequest(http.MethodGet, target, nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			for i := 0; i+1 < len(headers); i += 2 {
				req.Header.Set(headers[i], headers[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("GET %.60s: %v", target, err)
			}
			resp.Body.Close() // a stream that opened is cut at once
		}
		get(url, "Mcp-Session-Id", sid, "Last-Event-ID", header, "User-Agent", header)
		get(url+"?"+header, "Mcp-Session-Id", sid)
		get(base+"/admin/upstreams/"+header, "Authorization", "Bearer wrong", "User-Agent", header)
		post(t, url, sid, "", `{"jsonrpc":"2.0","id":"last-line","method":"ping"}`, "User-Agent", header)
	})

	// Every line the attack makes is written: each line below is one
	// the attack was sure to cause.
	waitFor(t, func() bool {
		all := logs.String()
		return strings.Count(all, `"method":"GET"`) >= 2 && strings.Contains(all, "resume: unknown stream") &&
			strings.Contains(all, "admin API: wrong bearer token") && strings.Contains(all, `"id":"last-line"`)
	})
	all := logs.String()
	sc := bufio.NewScanner(strings.NewReader(all))
	sc.Buffer(nil, 8<<20)
	lines, bounded := 0, 0
	for sc.Scan() {
		line := sc.Text()
		lines++
		if len(line) > 4096 {
			t.Errorf("a log line of %d bytes: %.200s…", len(line), line)
		}
		if strings.Contains(line, "…(1048576 bytes)") {
			bounded++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read the log: %v", err)
	}
	for _, secret := range []string{secretKey, secretValue} {
		if strings.Contains(all, secret) {
			t.Errorf("a tool argument (%s) is in the log", secret)
		}
	}
	// The values were logged, bounded, not left out.
	if bounded == 0 {
		t.Errorf("no log line carries a bounded 1 MB value; %d lines", lines)
	}
}
