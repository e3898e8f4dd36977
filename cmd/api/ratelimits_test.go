package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/ratelimit"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

func keyHash(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:])
}

// Two replicas share Redis: a principal's tool-call budget holds across
// them (the fourth call, on either, is RATE_LIMITED with retryAfterMs),
// another principal's budget is its own, and an HTTP flood gets 429 with
// Retry-After (docs/adr/0022-rate-limits.md).
func TestRateLimitsAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	cfg := pgConfig(t)
	cfg.RedisURL = "redis://" + srv.Addr() + "/0"
	cfg.Auth.Mode = auth.ModeAPIKey
	cfg.Auth.APIKeys = []auth.APIKey{
		{ID: "agents", SHA256: keyHash("key-agents"), Tenant: "team-a"},
		{ID: "other", SHA256: keyHash("key-other"), Tenant: "team-a"},
		{ID: "flood", SHA256: keyHash("key-flood"), Tenant: "team-b"},
	}
	cfg.RateLimits.ToolCalls = ratelimit.Rate{PerSecond: 0.01, Burst: 3}
	cfg.RateLimits.Requests = ratelimit.Rate{PerSecond: 0.01, Burst: 12}
	url1, _ := runServer(t, cfg, io.Discard)
	url2, _ := runServer(t, cfg, io.Discard)

	c1 := connectAs(t, url1, "key-agents", nil)
	c2 := connectAs(t, url2, "key-agents", nil)
	mustSucceed(t, call(t, c1, "runtime_echo", map[string]any{"text": "1"}), "call 1 on replica 1")
	mustSucceed(t, call(t, c2, "runtime_echo", map[string]any{"text": "2"}), "call 2 on replica 2")
	mustSucceed(t, call(t, c1, "runtime_echo", map[string]any{"text": "3"}), "call 3 on replica 1")
	env := call(t, c2, "runtime_echo", map[string]any{"text": "4"})
	if env.Success || env.Error.Code != "RATE_LIMITED" || !env.Error.Retryable || env.Error.RetryAfterMs <= 0 {
		t.Fatalf("fourth call across the replicas: %+v, want RATE_LIMITED, retryable, with retryAfterMs", env)
	}
	other := connectAs(t, url2, "key-other", nil)
	mustSucceed(t, call(t, other, "runtime_echo", map[string]any{"text": "x"}), "another principal")

	// The HTTP budget: 12 requests, then 429 with Retry-After.
	statuses := map[int]int{}
	for range 15 {
		req, _ := http.NewRequest(http.MethodPost, url1, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", "Bearer key-flood")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		statuses[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	if statuses[http.StatusTooManyRequests] != 3 {
		t.Errorf("statuses of 15 requests on a budget of 12: %v, want 3 × 429", statuses)
	}
}
