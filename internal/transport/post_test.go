package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// ---------------------------------------------------------------------------
// SSE in answer to POST

func TestPostSSE_ProgressThenResponse(t *testing.T) {
	h := newHarness(t)
	for _, tool := range []string{"progress", "progress_long"} {
		for _, version := range []string{"2025-11-25", "2025-06-18", "2025-03-26"} {
			for _, token := range []string{`42`, `"tok-a"`, `9007199254740993`, `-7`} {
				t.Run(tool+"/"+version+"/token="+token, func(t *testing.T) {
					postSSEProgress(t, h, tool, version, token)
				})
			}
		}
	}
}

func postSSEProgress(t *testing.T, h *harness, tool, version, token string) {
	sid, _ := h.InitializeWith(t, version, nil)
	const n = 4
	r := h.Post(t, sid, th.ToolCall(77, tool, map[string]any{"n": n}, json.RawMessage(token)))
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("want a 200 SSE response: %s", r)
	}
	if v := r.Header.Get("X-Accel-Buffering"); v != "no" {
		t.Errorf("X-Accel-Buffering = %q, want no", v)
	}
	if v := r.Header.Get("Cache-Control"); !strings.Contains(v, "no-cache") {
		t.Errorf("Cache-Control = %q, want no-cache", v)
	}
	evs := th.ParseSSE(r.Body)
	prime := version == "2025-11-25" // SEP-1699: priming events from 2025-11-25 on
	if prime {
		if len(evs) == 0 || !evs[0].Priming() {
			t.Fatalf("%s session: want a priming event first, got %+v", version, evs)
		}
		if _, seq := th.SplitEventID(t, evs[0].ID); seq != 0 {
			t.Errorf("priming event id %q, want seq 0", evs[0].ID)
		}
		evs = evs[1:]
	}
	if len(evs) != n+1 {
		t.Fatalf("want %d progress events and the response, got %d: %+v", n, len(evs), evs)
	}
	var streamName string
	for i, ev := range evs {
		if ev.Priming() || !ev.HasID {
			t.Fatalf("event %d = %+v: want id and data (no priming event for %s)", i, ev, version)
		}
		name, seq := th.SplitEventID(t, ev.ID)
		if i == 0 {
			streamName = name
		}
		if name != streamName || seq != uint64(i+1) {
			t.Errorf("event %d id %q, want %s-%d", i, ev.ID, streamName, i+1)
		}
		m := th.ParseMessage(t, ev.Data)
		if i == n {
			text, _ := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), "77"))
			if text != fmt.Sprintf("done %d", n) {
				t.Errorf("response text %q", text)
			}
			continue
		}
		p := th.ProgressOf(t, m)
		if p.Token != token {
			t.Errorf("progress %d token = %s, want %s (same JSON type and spelling)", i, p.Token, token)
		}
		if p.Progress != float64(i+1) || p.Total != n {
			t.Errorf("progress %d = %v/%v, want %d/%d", i, p.Progress, p.Total, i+1, n)
		}
	}
	if streamName == standaloneStreamName {
		t.Errorf("POST response used the standalone stream's ids")
	}
}

// Without a progressToken nothing is sent before the response, so even a
// client accepting SSE gets plain JSON.
func TestPostSSE_NoMessagesMeansJSON(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	r := h.Post(t, sid, th.ToolCall(1, "progress", map[string]any{"n": 3}, nil))
	if text, _ := th.ToolText(t, th.ResultOf(t, r, "1")); text != "done 3" {
		t.Fatalf("result %q", text)
	}
}

// ---------------------------------------------------------------------------
// Retained POST streams

// More streamed calls at once on one client session than the number of
// finished streams it keeps for resumption (maxRetainedStreams): every call
// keeps its stream while its handler runs, and the first one, started before
// all the others, still gets its result. (The 33rd call once evicted the
// first call's live stream; that client waited for a response that never
// came, and resuming could not find it.)
func TestPostSSE_ConcurrentStreamsAreNeverEvicted(t *testing.T) {
	h := newHarness(t)
	for _, tool := range []string{"block", "block_long"} {
		t.Run(tool, func(t *testing.T) {
			sid := h.Initialize(t)
			const n = maxRetainedStreams + 4
			key := func(i int) string { return fmt.Sprintf("many-%s-%d", tool, i) }
			calls := make([]*th.SSEConn, n)
			names := make([]string, n)
			for i := range n {
				calls[i] = h.PostSSE(t, sid, th.ToolCall(i, tool, map[string]any{"key": key(i)}, "pt"))
				ev, m := calls[i].NextMessage(t)
				if p := th.ProgressOf(t, m); p.Message != "started" {
					t.Fatalf("call %d: first message %+v", i, p)
				}
				names[i], _ = th.SplitEventID(t, ev.ID)
				h.Fx.Block(key(i)).WaitStarted(t)
			}
			sess := h.session(t, sid)
			for i, name := range names {
				if sess.Stream(name) == nil {
					t.Fatalf("call %d: its stream %s was dropped while its handler runs (%d calls in flight)", i, name, n)
				}
			}
			for i := range n {
				h.Fx.Block(key(i)).Release()
			}
			for i, c := range calls {
				if _, m := c.NextMessage(t); th.ProgressOf(t, m).Message != "released" {
					t.Fatalf("call %d: second message %+v", i, m)
				}
				ev, _ := c.NextMessage(t)
				if text, _ := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), strconv.Itoa(i))); text != "released "+key(i) {
					t.Fatalf("call %d: result %q", i, text)
				}
				c.WaitEnd(t)
			}
			h.ToolsListOK(t, sid)
		})
	}
	// The bound still holds for what it is for: streams whose response is
	// in the log but was never delivered (the client left) are kept for
	// resumption, at most maxRetainedStreams of them.
	t.Run("finished, undelivered streams stay bounded", func(t *testing.T) {
		sess := h.session(t, h.Initialize(t))
		for range 2 * maxRetainedStreams {
			sess.newPostStream(protocol.ID("1")).appendFinal([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
		}
		sess.mu.Lock()
		held := len(sess.streams)
		sess.mu.Unlock()
		if held > maxRetainedStreams {
			t.Errorf("session holds %d finished streams, want at most %d", held, maxRetainedStreams)
		}
	})
}

// ---------------------------------------------------------------------------
// Server-to-client requests

func TestSampling_RoundTripOnPostStream(t *testing.T) {
	h := newHarness(t)
	for _, tool := range []string{"sample", "sample_long"} {
		t.Run(tool, func(t *testing.T) { samplingRoundTrip(t, h, tool) })
	}
}

func samplingRoundTrip(t *testing.T, h *harness, tool string) {
	sid, _ := h.InitializeWith(t, protocol.LatestVersion, map[string]any{"sampling": map[string]any{}})
	ps := h.PostSSE(t, sid, th.ToolCall(21, tool, map[string]any{"prompt": "say hi"}, nil))
	ev, m := ps.NextMessage(t)
	if m.Method != protocol.MethodSamplingCreateMessage || len(m.ID) == 0 {
		t.Fatalf("want a sampling/createMessage request on the POST stream, got %+v (event %s)", m, ev.ID)
	}
	if name, _ := th.SplitEventID(t, ev.ID); name == standaloneStreamName {
		t.Errorf("request sent on the standalone stream (%s)", ev.ID)
	}
	var params struct {
		Messages []struct {
			Role    string `json:"role"`
			Content struct{ Text string }
		} `json:"messages"`
		MaxTokens int `json:"maxTokens"`
	}
	if err := json.Unmarshal(m.Params, &params); err != nil || len(params.Messages) != 1 || params.Messages[0].Content.Text != "say hi" || params.MaxTokens != 16 {
		t.Fatalf("sampling params %s (%v)", m.Params, err)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"hello back"},"model":"test-model","stopReason":"endTurn"}}`, m.ID)
	if r := h.Post(t, sid, []byte(answer)); r.Status != http.StatusAccepted || len(r.Body) != 0 {
		t.Fatalf("POST of the client's answer: %s, want 202 with no body", r)
	}
	ev, _ = ps.NextMessage(t)
	text, isErr := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), "21"))
	if isErr || !strings.Contains(text, "hello back") {
		t.Fatalf("tool result %q isError=%v, want the sampled text", text, isErr)
	}
	ps.WaitEnd(t)
	// A second answer to the same request is accepted and ignored.
	if r := h.Post(t, sid, []byte(answer)); r.Status != http.StatusAccepted {
		t.Fatalf("duplicate answer: %s", r)
	}
	h.ToolsListOK(t, sid)
}

func TestSampling_WithoutCapability(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t) // capabilities: {}
	for _, tool := range []string{"sample", "sample_long"} {
		r := h.Post(t, sid, th.ToolCall(22, tool, map[string]any{"prompt": "say hi"}, nil))
		text, isErr := th.ToolText(t, th.ResultOf(t, r, "22"))
		if !isErr || !strings.Contains(text, "capability") {
			t.Fatalf("%s: want an isError result about the missing capability, got %q isError=%v", tool, text, isErr)
		}
	}
}

// A client that answers sampling/createMessage with a JSON-RPC error has
// refused the tool's request: the tool fails (isError, which the model
// reads), and the client's tools/call gets a result. The client's error
// must not come back as the error of tools/call itself, where -32601 would
// say that tools/call does not exist.
func TestSampling_ClientErrorIsToolError(t *testing.T) {
	h := newHarness(t)
	for _, tool := range []string{"sample", "sample_long"} {
		t.Run(tool, func(t *testing.T) {
			sid, _ := h.InitializeWith(t, protocol.LatestVersion, map[string]any{"sampling": map[string]any{}})
			ps := h.PostSSE(t, sid, th.ToolCall(23, tool, map[string]any{"prompt": "say hi"}, nil))
			_, m := ps.NextMessage(t)
			if m.Method != protocol.MethodSamplingCreateMessage || len(m.ID) == 0 {
				t.Fatalf("want a sampling/createMessage request, got %+v", m)
			}
			answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
			if r := h.Post(t, sid, []byte(answer)); r.Status != http.StatusAccepted {
				t.Fatalf("POST of the client's error answer: %s, want 202", r)
			}
			ev, _ := ps.NextMessage(t)
			text, isErr := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), "23"))
			if !isErr || !strings.Contains(text, "Method not found") {
				t.Fatalf("tool result %q isError=%v, want an isError result carrying the client's error", text, isErr)
			}
			ps.WaitEnd(t)
			h.ToolsListOK(t, sid)
		})
	}
}

// ---------------------------------------------------------------------------
// Duplicate in-flight ids

func TestDuplicateInflightID(t *testing.T) {
	h := newHarness(t)
	a := h.Initialize(t)
	b := h.Initialize(t)
	for _, tc := range []struct{ tool, accept string }{
		{"block", "application/json"},
		{"block", th.AcceptBoth},
		{"block_long", th.AcceptBoth}, // detached
	} {
		accept := tc.accept
		t.Run(tc.tool+"/Accept="+accept, func(t *testing.T) {
			key := "dup-" + tc.tool + accept
			blk := h.Fx.Block(key)
			first := h.PostAsync(t, context.Background(), a, th.ToolCall(7, tc.tool, map[string]any{"key": key}, nil), "Accept", accept)
			blk.WaitStarted(t)

			th.WantRPCError(t, h.Post(t, a, th.ToolCall(7, "echo", map[string]any{"text": "x"}, nil), "Accept", accept), http.StatusOK, "7", protocol.CodeInvalidRequest)
			th.WantRPCError(t, h.Post(t, a, th.RPC(7, "tools/list", nil), "Accept", accept), http.StatusOK, "7", protocol.CodeInvalidRequest)
			// "7" is another id than 7.
			if text, _ := th.ToolText(t, th.ResultOf(t, h.Post(t, a, th.ToolCall("7", "echo", map[string]any{"text": "str"}, nil)), `"7"`)); text != "str" {
				t.Errorf("echo with id \"7\" = %q", text)
			}
			// The same id on another session is fine.
			if text, _ := th.ToolText(t, th.ResultOf(t, h.Post(t, b, th.ToolCall(7, "echo", map[string]any{"text": "other"}, nil)), "7")); text != "other" {
				t.Errorf("echo on the other session = %q", text)
			}

			blk.Release()
			r := th.WaitReply(t, first)
			if text, _ := th.ToolText(t, th.ResultOf(t, r, "7")); text != "released "+key {
				t.Fatalf("first call: %q", text)
			}
			// Once answered, the id is free again.
			if text, _ := th.ToolText(t, th.ResultOf(t, h.Post(t, a, th.ToolCall(7, "echo", map[string]any{"text": "again"}, nil)), "7")); text != "again" {
				t.Errorf("echo with the freed id = %q", text)
			}
		})
	}
}

// The transport's contract (ClientSession.begin) refuses an id only while a
// request with it runs. A client that waits for the response before reusing
// an id must therefore never be refused. (A detached call once released its
// id only after its response was out.)
func TestIDReuseAfterResponse(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	for _, tool := range []string{"echo", "echo_long"} {
		for i := 0; i < 200; i++ {
			r := h.Post(t, sid, th.ToolCall(1, tool, map[string]any{"text": "x"}, nil))
			if r.Status != http.StatusOK {
				t.Fatalf("%s try %d: %s", tool, i, r)
			}
			var env struct{ Error json.RawMessage }
			if err := json.Unmarshal(th.MessageBody(t, r), &env); err != nil || env.Error != nil {
				t.Fatalf("%s try %d: reusing id 1 after its response was refused: %s", tool, i, r.Body)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Cancellation

func TestCancel_Notification(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	for _, tc := range []struct {
		name, tool, accept string
		id                 any
	}{
		{"integer id, JSON", "block", "application/json", 7},
		{"string id, JSON", "block", "application/json", "req-a"},
		{"integer id, SSE allowed", "block", th.AcceptBoth, 8},
		{"integer id, detached", "block_long", th.AcceptBoth, 9},
		{"string id, detached", "block_long", th.AcceptBoth, "req-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "cancel-" + tc.name
			blk := h.Fx.Block(key)
			pending := h.PostAsync(t, context.Background(), sid, th.ToolCall(tc.id, tc.tool, map[string]any{"key": key}, nil), "Accept", tc.accept)
			blk.WaitStarted(t)
			r := h.Post(t, sid, th.RPC(nil, "notifications/cancelled", map[string]any{"requestId": tc.id, "reason": "test"}))
			if r.Status != http.StatusAccepted {
				t.Fatalf("notifications/cancelled: %s", r)
			}
			th.WaitChan(t, blk.Cancelled, "the handler's context to be cancelled")
			th.WaitChan(t, blk.Finished, "the handler to return")
			r = th.WaitReply(t, pending)
			if r.Status != http.StatusOK {
				t.Fatalf("cancelled call: %s", r)
			}
			// basic/utilities/cancellation: no response for a cancelled
			// request where the transport allows it (an SSE stream that
			// ends empty); a JSON-only client still gets a body.
			gotResponse := strings.Contains(string(r.Body), `"id":`)
			if wantResponse := tc.accept == "application/json"; gotResponse != wantResponse {
				t.Errorf("response sent = %v, want %v; body %s", gotResponse, wantResponse, r)
			}
			h.ToolsListOK(t, sid)
		})
	}
}

// Disconnection is not cancellation (basic/transports): a client that goes
// away does not cancel the handler; ending the session does.
func TestCancel_DisconnectIsNotCancellation(t *testing.T) {
	h := newHarness(t)

	for _, tool := range []string{"block", "block_long"} {
		t.Run("SSE response/"+tool, func(t *testing.T) { disconnectSSE(t, h, tool) })
	}

	t.Run("JSON response", func(t *testing.T) {
		sid := h.Initialize(t)
		blk := h.Fx.Block("disc-json")
		ctx, cancel := context.WithCancel(context.Background())
		pending := h.PostAsync(t, ctx, sid, th.ToolCall(7, "block", map[string]any{"key": "disc-json"}, nil), "Accept", "application/json")
		blk.WaitStarted(t)
		cancel()
		if r := th.WaitReply(t, pending); r.Status != -1 {
			t.Fatalf("want a client-side error after cancelling the request, got %s", r)
		}
		th.NotWithin(t, blk.Cancelled, th.WaitShort, "cancellation of the handler on client disconnect")
		if r := h.Send(t, http.MethodDelete, sid, nil); r.Status != http.StatusNoContent {
			t.Fatalf("DELETE: %s", r)
		}
		th.WaitChan(t, blk.Cancelled, "the handler to be cancelled by the end of the session")
		th.WaitChan(t, blk.Finished, "the handler to return")
	})
}

func disconnectSSE(t *testing.T, h *harness, tool string) {
	sid := h.Initialize(t)
	key := "disc-sse-" + tool
	blk := h.Fx.Block(key)
	ps := h.PostSSE(t, sid, th.ToolCall(7, tool, map[string]any{"key": key}, "pt"))
	ev, m := ps.NextMessage(t)
	if th.ProgressOf(t, m).Message != "started" {
		t.Fatalf("first message %+v", m)
	}
	name, _ := th.SplitEventID(t, ev.ID)
	st := h.session(t, sid).Stream(name)
	if st == nil {
		t.Fatalf("no stream %q", name)
	}
	blk.WaitStarted(t)
	ps.Close()
	th.WaitDetached(t, st) // the server has seen the disconnect
	th.NotWithin(t, blk.Cancelled, th.WaitShort, "cancellation of the handler on client disconnect")
	// Explicit cancellation: end the session.
	if r := h.Send(t, http.MethodDelete, sid, nil); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %s", r)
	}
	th.WaitChan(t, blk.Cancelled, "the handler to be cancelled by the end of the session")
	th.WaitChan(t, blk.Finished, "the handler to return")
}

// ---------------------------------------------------------------------------
// Panics

func TestPanicInTool(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	for i, tc := range []struct{ tool, accept string }{
		{"panic", "application/json"},
		{"panic", th.AcceptBoth},
		{"panic_long", "application/json"},
		{"panic_long", th.AcceptBoth}, // detached
	} {
		accept := tc.accept
		t.Run(tc.tool+"/Accept="+accept, func(t *testing.T) {
			id := 100 + i
			th.WantRPCError(t, h.Post(t, sid, th.ToolCall(id, tc.tool, nil, nil), "Accept", accept), http.StatusOK, strconv.Itoa(id), protocol.CodeInternalError)
			if text, _ := th.ToolText(t, th.ResultOf(t, h.Post(t, sid, th.ToolCall(id+10, "echo", map[string]any{"text": "alive"}, nil)), strconv.Itoa(id+10))); text != "alive" {
				t.Fatalf("echo after the panic = %q", text)
			}
		})
	}
	for _, tool := range []string{"panic", "panic_long"} {
		t.Run(tool+" after a progress notification on the SSE stream", func(t *testing.T) {
			r := h.Post(t, sid, th.ToolCall(200, tool, nil, 1))
			if r.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("want an SSE response: %s", r)
			}
			evs := th.ParseSSE(r.Body)
			last := evs[len(evs)-1]
			if _, err := th.CheckRPCError([]byte(last.Data), "200", protocol.CodeInternalError); err != nil {
				t.Fatalf("last event %q: %v", last.Data, err)
			}
			h.ToolsListOK(t, sid)
		})
	}
	if n := h.tr.Sessions().Len(); n != 1 {
		t.Errorf("sessions = %d after panics, want 1", n)
	}
}

// A client that leaves a streamed, detached tools/call before its response:
// the HTTP side and the handler both fill the request log line, which is
// written once, complete, by whichever finishes last. Under -race this also
// checks that they do not race on it (they once did).
func TestRequestLog_ClientLeavesEarly(t *testing.T) {
	var buf th.LockedBuffer
	h := newHarness(t, withOpts(func(o *Options) { o.Logger = zerolog.New(&buf).Level(zerolog.InfoLevel) }))
	sid := h.Initialize(t)
	blk := h.Fx.Block("log-race")
	ps := h.PostSSE(t, sid, th.ToolCall(1, "block_long", map[string]any{"key": "log-race"}, "pt"))
	ev, _ := ps.NextMessage(t)
	name, _ := th.SplitEventID(t, ev.ID)
	st := h.session(t, sid).Stream(name)
	ps.Close()
	th.WaitDetached(t, st)
	blk.Release()
	th.WaitChan(t, blk.Finished, "the handler to finish")
	var line string
	testutil.Eventually(t, th.WaitLong, "the tools/call log line", func() bool {
		for _, l := range strings.Split(buf.String(), "\n") {
			if strings.Contains(l, `"method":"tools/call"`) {
				line = l
				return true
			}
		}
		return false
	})
	for _, want := range []string{`"tool":"block_long"`, `"status":200`, `"sse":true`} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %s lacks %s", line, want)
		}
	}
	if n := strings.Count(buf.String(), `"method":"tools/call"`); n != 1 {
		t.Errorf("%d log lines for one tools/call, want 1", n)
	}
}

// A message a handler sends after its response has been written (from a
// goroutine it left behind) is a server-initiated message: it goes to the
// GET stream (exchange.send: "The response is already out; a late message
// goes where any server-initiated message goes"), whether the response was
// JSON or an SSE stream.
func TestLateMessageAfterResponse(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name  string
		token any
	}{
		{"after a JSON response", nil},
		{"after an SSE response", "pt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.token != nil {
			}
			sid := h.Initialize(t)
			get := h.OpenGET(t, sid)
			get.Next(t) // priming
			key := "late-" + tc.name
			blk := h.Fx.Block(key)
			r := h.Post(t, sid, th.ToolCall(61, "late", map[string]any{"key": key}, tc.token))
			if tc.token != nil {
				evs := th.ParseSSE(r.Body)
				if r.Header.Get("Content-Type") != "text/event-stream" || len(evs) == 0 {
					t.Fatalf("want an SSE response: %s", r)
				}
				th.ResultFromMessage(t, []byte(evs[len(evs)-1].Data), "61")
			} else {
				th.ResultOf(t, r, "61")
			}
			blk.Release()
			th.WaitChan(t, blk.Finished, "the late message to be sent")
			_, m := get.NextMessage(t)
			if m.Method != protocol.NotificationMessage || !strings.Contains(string(m.Params), key) {
				t.Fatalf("GET stream got %+v, want the late notifications/message", m)
			}
		})
	}
}
