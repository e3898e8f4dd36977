package heldroute

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// echo is a replica's handler of rounds: its step names the call and the
// answers it got, and how long it was given.
func echo(ctx context.Context, id string, answers map[string]json.RawMessage) []byte {
	_, bounded := ctx.Deadline()
	b, _ := json.Marshal(map[string]any{"id": id, "answers": answers, "bounded": bounded})
	return b
}

func route(t *testing.T, addr string) *Route {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	r := New(rdb, "heldroute-test:", zerolog.Nop())
	r.Serve(echo)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// A round sent to another replica is run there, within the asker's
// deadline, and its step comes back; a round for a replica nobody is
// any more comes back empty at once; after Redis restarts, rounds cross
// again.
func TestRoundsCrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	a, b := route(t, srv.Addr()), route(t, srv.Addr())
	ask := func(within time.Duration) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		return b.Continue(ctx, a.Self(), "call-1", map[string]json.RawMessage{"input-0": json.RawMessage(`{"action":"accept"}`)})
	}
	step, err := ask(5 * time.Second)
	if err != nil || string(step) != `{"answers":{"input-0":{"action":"accept"}},"bounded":true,"id":"call-1"}` {
		t.Fatalf("the round on A: %s, %v", step, err)
	}
	if step, err := b.Continue(context.Background(), "gone", "call-1", nil); step != nil || err != nil {
		t.Fatalf("a round for a replica that is not there: %s, %v", step, err)
	}
	srv.Restart()
	testutil.Eventually(t, testutil.Wait, "rounds to cross after Redis restarted", func() bool {
		step, err := ask(5 * time.Second)
		return err == nil && len(step) > 0
	})
}
