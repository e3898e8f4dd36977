package redisshare

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/netfault"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// postStreamOnA starts a streamed tools/call of tool ("block" or
// "block_long", with a progress token) on a, reads its priming event and
// first progress notification, and cuts the connection, as a client whose
// network broke. It returns the stream's name.
func postStreamOnA(t *testing.T, a *harness, sid, tool, key string) string {
	t.Helper()
	blk := a.Fx.Block(key)
	ps := a.PostSSE(t, sid, th.ToolCall(31, tool, map[string]any{"key": key}, "pt"))
	prime := ps.Next(t)
	if !prime.Priming() {
		t.Fatalf("first event %+v, want priming", prime)
	}
	name, _ := th.SplitEventID(t, prime.ID)
	if ev, m := ps.NextMessage(t); ev.ID != name+"-1" || th.ProgressOf(t, m).Message != "started" {
		t.Fatalf("got %+v %+v, want the started progress as %s-1", ev, m, name)
	}
	blk.WaitStarted(t)
	st := a.session(t, sid).Stream(name)
	ps.Close()
	th.WaitDetached(t, st)
	return name
}

// wantRestOfBlock reads, from r, the events of a block tool's stream after
// <name>-1 — the "released" progress and the result — once each, and the
// end of the stream.
func wantRestOfBlock(t *testing.T, r *th.SSEConn, name, key string) {
	t.Helper()
	ev, m := r.NextMessage(t)
	if ev.ID != name+"-2" || th.ProgressOf(t, m).Message != "released" {
		t.Fatalf("got %+v %+v, want the released progress as %s-2", ev, m, name)
	}
	ev, _ = r.NextMessage(t)
	if ev.ID != name+"-3" {
		t.Fatalf("response event id %q, want %s-3", ev.ID, name)
	}
	if text, _ := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), "31")); text != "released "+key {
		t.Fatalf("resumed response %q", text)
	}
	r.WaitEnd(t)
}

// TestRedisPostStream_ResumeElsewhere
// (docs/adr/0018-streamed-responses-resume-anywhere.md): a tools/call
// whose handler streams on A is cut mid-stream, and the client resumes it
// with GET + Last-Event-ID on B — after the handler finished, or while it
// still runs on A — and gets every later event exactly once, the response
// included. A stream Redis does not know is refused as on one replica.
func TestRedisPostStream_ResumeElsewhere(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdb, prefix), replica(t, rdb, prefix)
	sid := a.Initialize(t)
	b.ToolsListOK(t, sid)

	for _, tool := range []string{"block", "block_long"} {
		t.Run(tool+", handler finished", func(t *testing.T) {
			key := "finished-" + tool
			name := postStreamOnA(t, a, sid, tool, key)
			blk := a.Fx.Block(key)
			blk.Release()
			th.WaitChan(t, blk.Finished, "the handler to finish")
			r := b.OpenGET(t, sid, "Last-Event-ID", name+"-1")
			wantRestOfBlock(t, r, name, key)
			// From the priming event: the whole stream, once.
			r = b.OpenGET(t, sid, "Last-Event-ID", name+"-0")
			if ev, m := r.NextMessage(t); ev.ID != name+"-1" || th.ProgressOf(t, m).Message != "started" {
				t.Fatalf("got %+v %+v, want the started progress as %s-1", ev, m, name)
			}
			wantRestOfBlock(t, r, name, key)
		})
		t.Run(tool+", handler still running", func(t *testing.T) {
			key := "running-" + tool
			name := postStreamOnA(t, a, sid, tool, key)
			r := b.OpenGET(t, sid, "Last-Event-ID", name+"-1")
			quiet(t, r, th.WaitShort) // nothing after -1 yet
			a.Fx.Block(key).Release()
			wantRestOfBlock(t, r, name, key) // live, from A through Redis
		})
	}

	r := b.Send(t, http.MethodGet, sid, nil, "Accept", "text/event-stream", "Last-Event-ID", "p99-1")
	th.WantRPCError(t, r, http.StatusBadRequest, "null", protocol.CodeInvalidRequest)
	b.ToolsListOK(t, sid)
}

// TestRedisPostStream_JSONTouchesNoRedis: a tools/call answered with plain
// application/json writes nothing to Redis, whatever the client accepts;
// only a response that streams gets a log there.
func TestRedisPostStream_JSONTouchesNoRedis(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a := replica(t, rdb, prefix)
	sid := a.Initialize(t)
	ctx := context.Background()
	keys := func() []string {
		k := keysMatching(t, rdb, redisKeys(prefix).all())
		slices.Sort(k)
		return k
	}
	hash := redisKeys(prefix).session(sid)
	beforeKeys, beforeHash := keys(), hgetAll(t, rdb, hash)

	for i, accept := range []string{th.AcceptBoth, "application/json"} {
		for _, call := range [][]byte{
			th.ToolCall(fmt.Sprintf("%d-e", i), "echo", map[string]any{"text": "hi"}, nil),
			th.ToolCall(fmt.Sprintf("%d-p", i), "progress", map[string]any{"n": 3}, nil), // no token: no message
		} {
			r := a.Post(t, sid, call, "Accept", accept)
			if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("tools/call: %s, want 200 application/json", r)
			}
		}
	}
	if got := keys(); !slices.Equal(got, beforeKeys) {
		t.Fatalf("redis keys %q after JSON tools/calls, want %q", got, beforeKeys)
	}
	if got := hgetAll(t, rdb, hash); fmt.Sprint(got) != fmt.Sprint(beforeHash) {
		t.Fatalf("session hash %v after JSON tools/calls, want %v", got, beforeHash)
	}
	if n := len(a.shared().logq); n != 0 {
		t.Fatalf("%d log writes queued after JSON tools/calls", n)
	}

	// Control: a response that streams gets its log, with its TTL, and
	// the response is in it by the time the client has it (write-ahead).
	ps := a.PostSSE(t, sid, th.ToolCall("s", "progress", map[string]any{"n": 2}, "pt"))
	var last string
	for _, ev := range ps.Rest(t) {
		if ev.HasID {
			last = ev.ID
		}
	}
	name, seq := th.SplitEventID(t, last)
	if seq != 3 {
		t.Fatalf("last event %q, want two progress notifications and the response", last)
	}
	streams := keysMatching(t, rdb, redisKeys(prefix).stream(sid, "p*"))
	if len(streams) != 1 || streams[0] != redisKeys(prefix).stream(sid, name) {
		t.Fatalf("POST-stream logs %q after one streamed call %s, want its alone", streams, name)
	}
	if ttl := pttl(t, rdb, streams[0]); ttl <= 0 {
		t.Fatalf("POST-stream log without a TTL (%v)", ttl)
	}
	tail, err := rdb.XRevRangeN(ctx, streams[0], "+", "-", 1).Result()
	if err != nil {
		t.Fatalf("XREVRANGE %s: %v", streams[0], err)
	}
	if len(tail) != 1 || tail[0].ID != "1-3" || tail[0].Values["f"] != "1" {
		t.Fatalf("redis log ends with %+v when the client has the response, want it as 1-3 with f", tail)
	}
}

// TestRedisPostStream_RedisDown: with Redis unreachable, a session the
// replica knows still gets its streamed response in full, from memory.
func TestRedisPostStream_RedisDown(t *testing.T) {
	direct := testRedis(t, testRedisAddr)
	prefix := testPrefix(t, direct)
	proxy := netfault.NewProxy(t, testRedisAddr)
	a := replica(t, testRedis(t, proxy.Addr()), prefix)
	sid := a.Initialize(t)
	proxy.Cut()
	for _, tool := range []string{"progress", "progress_long"} {
		ps := a.PostSSE(t, sid, th.ToolCall(tool, tool, map[string]any{"n": 2}, "pt"))
		var got []string
		for _, ev := range ps.Rest(t) {
			if ev.Data != "" {
				got = append(got, ev.ID)
			}
		}
		if len(got) != 3 {
			t.Fatalf("%s with redis down: events %q, want two progress notifications and the response", tool, got)
		}
	}
}

// keyReads counts the commands a client sends naming one key (alone or
// in a pipeline): what a replica spends watching another's liveness.
type keyReads struct {
	cmd, key string
	n        atomic.Int64
}

func (h *keyReads) count(cmds ...redis.Cmder) {
	for _, c := range cmds {
		if args := c.Args(); c.Name() == h.cmd && len(args) > 1 && args[1] == h.key {
			h.n.Add(1)
		}
	}
}

func (h *keyReads) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *keyReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error { h.count(c); return next(ctx, c) }
}
func (h *keyReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.count(cmds...); return next(ctx, cmds) }
}

// TestRedisPostStream_OriginDied
// (docs/adr/0018-streamed-responses-resume-anywhere.md): a client resumed
// its streamed tools/call on B while the handler ran on A, and A died.
// What the client would notice before the fix: its stream on B carried
// keep-alives for ever — no response, no error, no end — and, attached,
// it kept the session alive. Now, once A's liveness key has expired with
// no response in the log, B ends the stream with a -32603 error response
// for the request (the client may retry it), written to the log so that a
// later resume anywhere gets that same end, once. While A lives, however
// long its handler stays silent, the stream stays open, and B reads A's
// liveness at most once per heartbeat, whatever the keep-alive rate.
func TestRedisPostStream_OriginDied(t *testing.T) {
	rdb := testRedis(t, testRedisAddr)
	rdbA, rdbB := testRedis(t, testRedisAddr), testRedis(t, testRedisAddr)
	prefix := testPrefix(t, rdb)
	a, b := replica(t, rdbA, prefix), replica(t, rdbB, prefix)
	reads := &keyReads{cmd: "exists", key: a.shared().replicaKey(a.shared().self)}
	rdbB.AddHook(reads)
	sid := a.Initialize(t)
	b.ToolsListOK(t, sid)

	name := postStreamOnA(t, a, sid, "block", "orphan")
	r := b.OpenGET(t, sid, "Last-Event-ID", name+"-1")
	// A lives, its handler silent: 1 s is 4 heartbeats (tests' 250 ms),
	// more than A's key would take to expire, and 20 keep-alives.
	quiet(t, r, time.Second)
	select {
	case <-r.Done:
		t.Fatal("the resumed stream ended while the replica running the handler lived")
	default:
	}
	if n := reads.n.Load(); n > 5 {
		t.Fatalf("B read A's liveness %d times in 1 s: more than once per heartbeat", n)
	}

	// A crashes: connections cut, its Redis client gone, nothing more
	// written by it; its liveness key expires.
	a.TS.CloseClientConnections()
	_ = rdbA.Close()
	wantOrphaned := func(r *th.SSEConn) {
		t.Helper()
		ev, m := r.NextMessage(t)
		if ev.ID != name+"-2" {
			t.Fatalf("event %+v after the origin died, want the error response as %s-2", ev, name)
		}
		msg, err := th.CheckRPCError([]byte(ev.Data), "31", protocol.CodeInternalError)
		if err != nil || m.Result != nil {
			t.Fatalf("event %q after the origin died: %v, want a -32603 error response for id 31", ev.Data, err)
		}
		if !strings.Contains(msg, "stopped") {
			t.Fatalf("error message %q does not say the server handling the request stopped", msg)
		}
		r.WaitEnd(t)
	}
	wantOrphaned(r)
	// The end is in Redis: a resume from before it gets it once more, a
	// resume from it ends at once, on any replica.
	c := replica(t, rdb, prefix)
	wantOrphaned(c.OpenGET(t, sid, "Last-Event-ID", name+"-1"))
	b.OpenGET(t, sid, "Last-Event-ID", name+"-2").WaitEnd(t)
	// Had A been alive after all (a partition longer than its key's TTL),
	// its response would come after the end: refused, so no client ever
	// gets two answers to one request.
	m, key := b.shared(), redisKeys(prefix).stream(sid, name)
	n, err := m.lua.appendPost(context.Background(), rdb, postAppendArgs{
		hash: m.hashKey(sid), log: key, ttlMs: m.ttlMs(), maxLen: m.logSize, seq: 3,
		data: []byte(`{"jsonrpc":"2.0","id":31,"result":{}}`), final: true,
		channel: m.channel, wake: m.postWake(sid, name), origin: a.shared().self, reqID: "31",
	}).Int()
	if err != nil || n != 0 {
		t.Fatalf("an append after the end: %d, %v; want 0 (refused)", n, err)
	}
	if n, err := rdb.XLen(context.Background(), key).Result(); err != nil || n != 3 {
		t.Fatalf("POST-stream log holds %d entries, want 3 (1-0, the progress, one error response)", n)
	}
}
