package transport

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// TestRedisAnswer_OtherReplica is issue 7, point 4: a handler on A asks
// the client (sampling); the client's response POST lands on B, or on A,
// and reaches A's handler either way, once. A response to a request no
// replica waits for is accepted and dropped, as on one replica.
func TestRedisAnswer_OtherReplica(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid, _ := a.initializeWith(t, protocol.LatestVersion, map[string]any{"sampling": map[string]any{}})
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
			ps := a.postSSE(t, sid, toolCall(i, tc.tool, map[string]any{"prompt": "hi"}, nil))
			_, m := ps.nextMessage(t)
			if m.Method != protocol.MethodSamplingCreateMessage {
				t.Fatalf("want a sampling request, got %+v", m)
			}
			answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"reply %d"},"model":"m"}}`, m.ID, i)
			if r := tc.answer.post(t, sid, []byte(answer)); r.Status != http.StatusAccepted || len(r.Body) != 0 {
				t.Fatalf("POST of the answer: %s, want 202 with no body", r)
			}
			ev, _ := ps.nextMessage(t)
			text, isErr := toolText(t, resultFromMessage(t, []byte(ev.Data), fmt.Sprint(i)))
			if isErr || !strings.Contains(text, fmt.Sprintf("reply %d", i)) {
				t.Fatalf("tool result %q isError=%v, want the client's answer", text, isErr)
			}
			ps.waitEnd(t)
			// Answered already: accepted and dropped everywhere.
			if r := b.post(t, sid, []byte(answer)); r.Status != http.StatusAccepted {
				t.Fatalf("duplicate answer: %s", r)
			}
		})
	}
	for _, id := range []string{`"s1"`, `"x"`, `7`} {
		body := `{"jsonrpc":"2.0","id":` + id + `,"result":{}}`
		if r := b.post(t, sid, []byte(body)); r.Status != http.StatusAccepted {
			t.Fatalf("answer %s nobody waits for: %s", id, r)
		}
	}
	a.toolsListOK(t, sid)
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
