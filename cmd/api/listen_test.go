package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/auth/authtest"
	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// listenRaw opens subscriptions/listen with id and filter on url as the
// bearer of token, and reads its acknowledgement: from then on every
// replica's changes reach it.
func listenRaw(t *testing.T, url, token string, id any, filter map[string]any) *th.SSEConn {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": protocol.MethodSubscriptionsListen, "params": map[string]any{
		"notifications": filter,
		"_meta":         map[string]any{protocol.MetaProtocolVersion: protocol.Version20260728, protocol.MetaClientCapabilities: map[string]any{}},
	}})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", th.AcceptBoth)
	req.Header.Set("Mcp-Protocol-Version", protocol.Version20260728)
	req.Header.Set(protocol.HeaderMethod, protocol.MethodSubscriptionsListen)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		t.Fatalf("listen: %d %s", res.StatusCode, b)
	}
	c := th.NewSSEConn(res, cancel)
	t.Cleanup(c.Close)
	if _, m := c.NextMessage(t); m.Method != protocol.NotificationSubscriptionsAcknowledged {
		t.Fatalf("first message %s, want the acknowledgement", m.Method)
	}
	return c
}

// nextUpdate reads the next notification of a listen: the raw JSON of
// its subscription id, and its URI.
func nextUpdate(t *testing.T, c *th.SSEConn) (sub, uri string) {
	t.Helper()
	_, m := c.NextMessage(t)
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
		URI  string                     `json:"uri"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || m.Method != protocol.NotificationResourcesUpdated {
		t.Fatalf("want a resource update, got %s %s (%v)", m.Method, m.Params, err)
	}
	return string(p.Meta[protocol.MetaSubscriptionID]), p.URI
}

// Three replicas share PostgreSQL and Redis. Listeners of the stateless
// era hold their streams on replica 1; tenant A changes its plan through
// replica 2 (a client of the same era) and through replica 3 (a client
// of the legacy era). A's listener of the plan hears each change and the
// pattern it invalidated, with its subscription id; A's listener of
// another entry, and B's listener of the same URIs, hear nothing of it;
// the official client's own listen hears the plan change too; and a
// legacy subscriber of A hears the modern client's change
// (docs/adr/0054-listen-across-replicas.md).
func TestListenAcrossReplicasAndEras(t *testing.T) {
	t.Run("single node", func(t *testing.T) {
		listenAcrossReplicas(t, "redis://"+redistest.Shared(t)+"/0", "")
	})
	t.Run("cluster", func(t *testing.T) {
		listenAcrossReplicas(t, redistest.ClusterURL(t), "cluster")
	})
}

func listenAcrossReplicas(t *testing.T, redisURL, mode string) {
	is := authtest.NewIssuer(t, "k1")
	const resource = "https://mcp.test/mcp"
	cfg := config.Default()
	cfg.DatabaseURL = pgtest.NewDatabase(t)
	cfg.RedisURL, cfg.Redis.Mode = redisURL, mode
	cfg.Redis.KeyPrefix = testKeyPrefix()
	cfg.Auth.Mode = auth.ModeOAuth
	cfg.Auth.OAuth.Issuer = "https://issuer.test"
	cfg.Auth.OAuth.JWKSURL = is.JWKSURL()
	cfg.Auth.OAuth.RequiredScopes = []string{"mcp:tools"}
	cfg.Auth.Resource = resource
	token := func(sub, tenant string) string {
		return is.Token(authtest.Claims("https://issuer.test", resource, sub, tenant, "mcp:tools"), "k1")
	}
	tokA, tokB := token("alice", "team-a"), token("bob", "team-b")
	url1, _ := runServer(t, cfg, io.Discard)
	url2, _ := runServer(t, cfg, io.Discard)
	url3, _ := runServer(t, cfg, io.Discard)

	const plan, stale = "memory://team/plan", "stale://memory.*"
	planA := listenRaw(t, url1, tokA, "plan-listen", map[string]any{"resourceSubscriptions": []string{plan, stale}})
	otherA := listenRaw(t, url1, tokA, 2, map[string]any{"resourceSubscriptions": []string{"memory://team/other", "memory://team/sentinel"}})
	planB := listenRaw(t, url1, tokB, 3, map[string]any{"resourceSubscriptions": []string{plan, stale, "memory://team/sentinel"}})
	var sdkGot, legacyGot notified
	sdk := connectIn(t, modernEra, url1, tokA, &sdkGot) // its Subscribe opens a listen
	if err := sdk.Subscribe(context.Background(), &mcp.SubscribeParams{URI: plan}); err != nil {
		t.Fatalf("the official client's listen: %v", err)
	}
	legacy := connectIn(t, legacyEra, url1, tokA, &legacyGot)
	if err := legacy.Subscribe(context.Background(), &mcp.SubscribeParams{URI: plan}); err != nil {
		t.Fatal(err)
	}

	modernWriter := connectIn(t, modernEra, url2, tokA, nil)
	legacyWriter := connectIn(t, legacyEra, url3, tokA, nil)
	store := func(cs *mcp.ClientSession, key, value string) {
		mustSucceed(t, call(t, cs, "memory_store", map[string]any{"namespace": "team", "key": key, "value": value}), "memory_store "+key)
	}
	store(modernWriter, "plan", "v1")
	store(legacyWriter, "plan", "v2")

	var got []string
	for range 4 {
		sub, uri := nextUpdate(t, planA)
		if sub != `"plan-listen"` {
			t.Errorf("update of %s names subscription %s", uri, sub)
		}
		got = append(got, uri)
	}
	slices.Sort(got)
	if want := []string{plan, plan, stale, stale}; !slices.Equal(got, want) {
		t.Errorf("listener of the plan heard %v, want %v", got, want)
	}
	sdkGot.waitFor(t, plan, plan)
	legacyGot.waitFor(t, plan, plan)

	// The replica delivering to planA queued whatever it wrongly meant for
	// otherA and planB in the same step; each listener's own sentinel,
	// written now, comes after any of it.
	store(connectIn(t, modernEra, url1, tokA, nil), "sentinel", "a")
	store(connectIn(t, modernEra, url1, tokB, nil), "sentinel", "b")
	for name, c := range map[string]*th.SSEConn{"A's listener of another entry": otherA, "B's listener": planB} {
		if _, uri := nextUpdate(t, c); uri != "memory://team/sentinel" {
			t.Errorf("%s heard of %s", name, uri)
		}
	}
}

// testKeyPrefix is a redis.keyPrefix of its own, so that replicas of one
// test share Redis with each other and with no other test.
func testKeyPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "mcp-test:" + hex.EncodeToString(b[:]) + ":"
}
