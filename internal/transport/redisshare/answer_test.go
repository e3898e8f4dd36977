package redisshare

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/netfault"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// TestRedisAnswer_OtherReplica
// (docs/adr/0017-client-responses-across-replicas.md): a handler on A
// asks the client (sampling); the client's response POST lands on B, or
// on A, and reaches A's handler either way, once. A response to a request
// no replica waits for is accepted and dropped, as on one replica.
func TestRedisAnswer_OtherReplica(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid, _ := a.InitializeWith(t, protocol.LatestVersion, map[string]any{"sampling": map[string]any{}})
	cases := []struct {
		name   string
		tool   string
		answer *harness
	}{
		{"answer on the other replica", "sample", b},
		{"answer on the other replica, long-running tool", "sample_long", b},
		{"answer on the same replica", "sample", a},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := a.PostSSE(t, sid, th.ToolCall(i, tc.tool, map[string]any{"prompt": "hi"}, nil))
			_, m := ps.NextMessage(t)
			if m.Method != protocol.MethodSamplingCreateMessage {
				t.Fatalf("want a sampling request, got %+v", m)
			}
			answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"reply %d"},"model":"m"}}`, m.ID, i)
			if r := tc.answer.Post(t, sid, []byte(answer)); r.Status != http.StatusAccepted || len(r.Body) != 0 {
				t.Fatalf("POST of the answer: %s, want 202 with no body", r)
			}
			ev, _ := ps.NextMessage(t)
			text, isErr := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), fmt.Sprint(i)))
			if isErr || !strings.Contains(text, fmt.Sprintf("reply %d", i)) {
				t.Fatalf("tool result %q isError=%v, want the client's answer", text, isErr)
			}
			ps.WaitEnd(t)
			// Answered already: accepted and dropped everywhere.
			if r := b.Post(t, sid, []byte(answer)); r.Status != http.StatusAccepted {
				t.Fatalf("duplicate answer: %s", r)
			}
		})
	}
	for _, id := range []string{`"s1"`, `"x"`, `7`} {
		body := `{"jsonrpc":"2.0","id":` + id + `,"result":{}}`
		if r := b.Post(t, sid, []byte(body)); r.Status != http.StatusAccepted {
			t.Fatalf("answer %s nobody waits for: %s", id, r)
		}
	}
	a.ToolsListOK(t, sid)
}

// TestRedisAnswer_SubscriptionDown
// (docs/adr/0017-client-responses-across-replicas.md), when pub/sub loses
// the forwarded response: the handler waits on A, whose link to Redis
// (its subscription included) is down while the client's response POST
// lands on B. B acknowledged the response with 202, so the client will
// not send it again; a user would see the tool hang until its timeout
// although they answered. A must get it once its link is back. And B,
// when Redis cannot take the response, must say so (503 with
// Retry-After), so that the client sends it again.
func TestRedisAnswer_SubscriptionDown(t *testing.T) {
	direct := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, direct)
	proxyA, proxyB := netfault.NewProxy(t, testRedisAddr), netfault.NewProxy(t, testRedisAddr)
	a := replica(t, testRedis(t, proxyA.Addr()), prefix)
	b := replica(t, testRedis(t, proxyB.Addr()), prefix)
	sid, _ := a.InitializeWith(t, protocol.LatestVersion, map[string]any{"sampling": map[string]any{}})
	b.ToolsListOK(t, sid)

	ps := a.PostSSE(t, sid, th.ToolCall(1, "sample", map[string]any{"prompt": "hi"}, nil))
	_, m := ps.NextMessage(t)
	if m.Method != protocol.MethodSamplingCreateMessage {
		t.Fatalf("want a sampling request, got %+v", m)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"late reply"},"model":"m"}}`, m.ID)

	// B cannot reach Redis: the response is refused, not acknowledged
	// and dropped.
	proxyB.Cut()
	r := b.Post(t, sid, []byte(answer))
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("answer while B cannot reach redis: %s, want 503 with Retry-After", r)
	}
	proxyB.Restore()

	// A cannot: the response B forwards meanwhile must wait for it.
	proxyA.Cut()
	testutil.Eventually(t, th.WaitLong, "B to take the answer", func() bool {
		return b.Post(t, sid, []byte(answer)).Status == http.StatusAccepted
	})
	proxyA.Restore()

	ev, _ := ps.NextMessage(t)
	text, isErr := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), "1"))
	if isErr || !strings.Contains(text, "late reply") {
		t.Fatalf("tool result %q isError=%v, want the client's answer", text, isErr)
	}
	ps.WaitEnd(t)
	// The answer's record goes with the request.
	testutil.Eventually(t, th.WaitLong, "the answer's key to be removed", func() bool {
		keys := keysMatching(t, direct, redisKeys(prefix).answers(sid))
		return len(keys) == 0
	})
}

// A client's response over MaxClientResponseBytes is refused with 413
// naming the limit, and the request waiting for it fails at once with
// that reason, on the replica it reached or through Redis on the other;
// its handler does not wait until its timeout for an answer that came.
func TestClientResponse_TooLargeFailsTheRequest(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	small := func(o *replicaConfig) { o.MaxClientResponseBytes = 2048 }
	a, b := replica(t, rdb, prefix, small), replica(t, rdb, prefix, small)
	sid, _ := a.InitializeWith(t, protocol.LatestVersion, map[string]any{"sampling": map[string]any{}})
	for i, answerOn := range []*harness{a, b} {
		ps := a.PostSSE(t, sid, th.ToolCall(i, "sample", map[string]any{"prompt": "hi"}, nil))
		_, m := ps.NextMessage(t)
		if m.Method != protocol.MethodSamplingCreateMessage {
			t.Fatalf("want a sampling request, got %+v", m)
		}
		answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":%q},"model":"m"}}`,
			m.ID, strings.Repeat("x", 4096))
		r := answerOn.Post(t, sid, []byte(answer))
		if r.Status != http.StatusRequestEntityTooLarge || !strings.Contains(string(r.Body), "transport.maxClientResponseBytes") {
			t.Fatalf("answer %d: %s, want 413 naming transport.maxClientResponseBytes", i, r)
		}
		ev, _ := ps.NextMessage(t)
		text, isErr := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), fmt.Sprint(i)))
		if !isErr || !strings.Contains(text, "over the limit of 2048") || strings.Contains(text, "xxxx") {
			t.Fatalf("tool result %q isError=%v, want the refusal, not the response", text, isErr)
		}
		ps.WaitEnd(t)
	}
}

func TestIsOutgoingID(t *testing.T) {
	for id, want := range map[string]bool{
		`"s1"`: true, `"s1099511627776"`: true, `"s"`: false, `"x1"`: false, `"s1a"`: false, `1`: false, `"s-1"`: false,
	} {
		if got := isOutgoingID(protocol.ID(id)); got != want {
			t.Errorf("isOutgoingID(%s) = %v, want %v", id, got, want)
		}
	}
}

// TestRedisCancel_OtherReplica
// (docs/adr/0017-client-responses-across-replicas.md), for cancellation:
// the client's notifications/cancelled lands on B while the handler runs
// on A (round robin, no sticky sessions). A user would otherwise see the
// cancellation accepted (202) and ignored: the tool keeps running on A
// and its result still arrives. It must be cancelled as on one replica,
// with no response where the SSE stream allows it.
func TestRedisCancel_OtherReplica(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := a.Initialize(t)
	b.ToolsListOK(t, sid) // B has a copy: the cancel is served from it
	for _, tc := range []struct {
		name, tool, accept string
		id                 any
	}{
		{"integer id, JSON", "block", "application/json", 7},
		{"string id, JSON", "block", "application/json", "req-a"},
		{"integer id, SSE allowed", "block", th.AcceptBoth, 8},
		// JSON would HTML-escape "<" on the way: the id must match still.
		{"string id, detached", "block_long", th.AcceptBoth, "req-<b>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "xcancel-" + tc.name
			blk := a.Fx.Block(key)
			defer blk.Release()
			pending := a.PostAsync(t, context.Background(), sid, th.ToolCall(tc.id, tc.tool, map[string]any{"key": key}, nil), "Accept", tc.accept)
			blk.WaitStarted(t)
			r := b.Post(t, sid, th.RPC(nil, "notifications/cancelled", map[string]any{"requestId": tc.id, "reason": "test"}))
			if r.Status != http.StatusAccepted {
				t.Fatalf("notifications/cancelled on B: %s", r)
			}
			th.WaitChan(t, blk.Cancelled, "the handler on A to be cancelled by the notification sent to B")
			th.WaitChan(t, blk.Finished, "the handler to return")
			r = th.WaitReply(t, pending)
			if r.Status != http.StatusOK {
				t.Fatalf("cancelled call: %s", r)
			}
			gotResponse := strings.Contains(string(r.Body), `"id":`)
			if wantResponse := tc.accept == "application/json"; gotResponse != wantResponse {
				t.Errorf("response sent = %v, want %v; body %s", gotResponse, wantResponse, r)
			}
		})
	}
	// A cancellation of a request no replica runs (finished already) is
	// accepted and changes nothing.
	if r := b.Post(t, sid, th.RPC(nil, "notifications/cancelled", map[string]any{"requestId": 99})); r.Status != http.StatusAccepted {
		t.Fatalf("cancel of a finished request: %s", r)
	}
	a.ToolsListOK(t, sid)
}
