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
)

type progressNote struct {
	Token    string // raw JSON, compact
	Progress float64
	Total    float64
	Message  string
}

func progressOf(t testing.TB, m message) progressNote {
	t.Helper()
	if m.Method != "notifications/progress" || m.ID != nil {
		t.Fatalf("want a notifications/progress notification, got %+v", m)
	}
	var p struct {
		ProgressToken json.RawMessage `json:"progressToken"`
		Progress      float64         `json:"progress"`
		Total         float64         `json:"total"`
		Message       string          `json:"message"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatal(err)
	}
	return progressNote{Token: compactJSON(p.ProgressToken), Progress: p.Progress, Total: p.Total, Message: p.Message}
}

// splitEventID splits "<stream>-<seq>".
func splitEventID(t testing.TB, id string) (string, uint64) {
	t.Helper()
	i := strings.LastIndexByte(id, '-')
	if i <= 0 {
		t.Fatalf("event id %q is not <stream>-<seq>", id)
	}
	seq, err := strconv.ParseUint(id[i+1:], 10, 64)
	if err != nil {
		t.Fatalf("event id %q is not <stream>-<seq>", id)
	}
	return id[:i], seq
}

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
	sid, _ := h.initializeWith(t, version, nil)
	const n = 4
	r := h.post(t, sid, toolCall(77, tool, map[string]any{"n": n}, json.RawMessage(token)))
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("want a 200 SSE response: %s", r)
	}
	if v := r.Header.Get("X-Accel-Buffering"); v != "no" {
		t.Errorf("X-Accel-Buffering = %q, want no", v)
	}
	if v := r.Header.Get("Cache-Control"); !strings.Contains(v, "no-cache") {
		t.Errorf("Cache-Control = %q, want no-cache", v)
	}
	evs := parseSSE(r.Body)
	prime := version == "2025-11-25" // SEP-1699: priming events from 2025-11-25 on
	if prime {
		if len(evs) == 0 || !evs[0].priming() {
			t.Fatalf("%s session: want a priming event first, got %+v", version, evs)
		}
		if _, seq := splitEventID(t, evs[0].ID); seq != 0 {
			t.Errorf("priming event id %q, want seq 0", evs[0].ID)
		}
		evs = evs[1:]
	}
	if len(evs) != n+1 {
		t.Fatalf("want %d progress events and the response, got %d: %+v", n, len(evs), evs)
	}
	var streamName string
	for i, ev := range evs {
		if ev.priming() || !ev.HasID {
			t.Fatalf("event %d = %+v: want id and data (no priming event for %s)", i, ev, version)
		}
		name, seq := splitEventID(t, ev.ID)
		if i == 0 {
			streamName = name
		}
		if name != streamName || seq != uint64(i+1) {
			t.Errorf("event %d id %q, want %s-%d", i, ev.ID, streamName, i+1)
		}
		m := parseMessage(t, ev.Data)
		if i == n {
			text, _ := toolText(t, resultFromMessage(t, []byte(ev.Data), "77"))
			if text != fmt.Sprintf("done %d", n) {
				t.Errorf("response text %q", text)
			}
			continue
		}
		p := progressOf(t, m)
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
	sid := h.initialize(t)
	r := h.post(t, sid, toolCall(1, "progress", map[string]any{"n": 3}, nil))
	if text, _ := toolText(t, resultOf(t, r, "1")); text != "done 3" {
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
			sid := h.initialize(t)
			const n = maxRetainedStreams + 4
			key := func(i int) string { return fmt.Sprintf("many-%s-%d", tool, i) }
			calls := make([]*sseConn, n)
			names := make([]string, n)
			for i := range n {
				calls[i] = h.postSSE(t, sid, toolCall(i, tool, map[string]any{"key": key(i)}, "pt"))
				ev, m := calls[i].nextMessage(t)
				if p := progressOf(t, m); p.Message != "started" {
					t.Fatalf("call %d: first message %+v", i, p)
				}
				names[i], _ = splitEventID(t, ev.ID)
				h.fx.block(key(i)).waitStarted(t)
			}
			sess := h.session(t, sid)
			for i, name := range names {
				if sess.stream(name) == nil {
					t.Fatalf("call %d: its stream %s was dropped while its handler runs (%d calls in flight)", i, name, n)
				}
			}
			for i := range n {
				h.fx.block(key(i)).Release()
			}
			for i, c := range calls {
				if _, m := c.nextMessage(t); progressOf(t, m).Message != "released" {
					t.Fatalf("call %d: second message %+v", i, m)
				}
				ev, _ := c.nextMessage(t)
				if text, _ := toolText(t, resultFromMessage(t, []byte(ev.Data), strconv.Itoa(i))); text != "released "+key(i) {
					t.Fatalf("call %d: result %q", i, text)
				}
				c.waitEnd(t)
			}
			h.toolsListOK(t, sid)
		})
	}
	// The bound still holds for what it is for: streams whose response is
	// in the log but was never delivered (the client left) are kept for
	// resumption, at most maxRetainedStreams of them.
	t.Run("finished, undelivered streams stay bounded", func(t *testing.T) {
		sess := h.session(t, h.initialize(t))
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
	sid, _ := h.initializeWith(t, protocol.LatestVersion, map[string]any{"sampling": map[string]any{}})
	ps := h.postSSE(t, sid, toolCall(21, tool, map[string]any{"prompt": "say hi"}, nil))
	ev, m := ps.nextMessage(t)
	if m.Method != protocol.MethodSamplingCreateMessage || len(m.ID) == 0 {
		t.Fatalf("want a sampling/createMessage request on the POST stream, got %+v (event %s)", m, ev.ID)
	}
	if name, _ := splitEventID(t, ev.ID); name == standaloneStreamName {
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
	if r := h.post(t, sid, []byte(answer)); r.Status != http.StatusAccepted || len(r.Body) != 0 {
		t.Fatalf("POST of the client's answer: %s, want 202 with no body", r)
	}
	ev, _ = ps.nextMessage(t)
	text, isErr := toolText(t, resultFromMessage(t, []byte(ev.Data), "21"))
	if isErr || !strings.Contains(text, "hello back") {
		t.Fatalf("tool result %q isError=%v, want the sampled text", text, isErr)
	}
	ps.waitEnd(t)
	// A second answer to the same request is accepted and ignored.
	if r := h.post(t, sid, []byte(answer)); r.Status != http.StatusAccepted {
		t.Fatalf("duplicate answer: %s", r)
	}
	h.toolsListOK(t, sid)
}

func TestSampling_WithoutCapability(t *testing.T) {
	h := newHarness(t)
	sid := h.initialize(t) // capabilities: {}
	for _, tool := range []string{"sample", "sample_long"} {
		r := h.post(t, sid, toolCall(22, tool, map[string]any{"prompt": "say hi"}, nil))
		text, isErr := toolText(t, resultOf(t, r, "22"))
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
			sid, _ := h.initializeWith(t, protocol.LatestVersion, map[string]any{"sampling": map[string]any{}})
			ps := h.postSSE(t, sid, toolCall(23, tool, map[string]any{"prompt": "say hi"}, nil))
			_, m := ps.nextMessage(t)
			if m.Method != protocol.MethodSamplingCreateMessage || len(m.ID) == 0 {
				t.Fatalf("want a sampling/createMessage request, got %+v", m)
			}
			answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
			if r := h.post(t, sid, []byte(answer)); r.Status != http.StatusAccepted {
				t.Fatalf("POST of the client's error answer: %s, want 202", r)
			}
			ev, _ := ps.nextMessage(t)
			text, isErr := toolText(t, resultFromMessage(t, []byte(ev.Data), "23"))
			if !isErr || !strings.Contains(text, "Method not found") {
				t.Fatalf("tool result %q isError=%v, want an isError result carrying the client's error", text, isErr)
			}
			ps.waitEnd(t)
			h.toolsListOK(t, sid)
		})
	}
}

// ---------------------------------------------------------------------------
// Duplicate in-flight ids

func TestDuplicateInflightID(t *testing.T) {
	h := newHarness(t)
	a := h.initialize(t)
	b := h.initialize(t)
	for _, tc := range []struct{ tool, accept string }{
		{"block", "application/json"},
		{"block", acceptBoth},
		{"block_long", acceptBoth}, // detached
	} {
		accept := tc.accept
		t.Run(tc.tool+"/Accept="+accept, func(t *testing.T) {
			key := "dup-" + tc.tool + accept
			blk := h.fx.block(key)
			first := h.postAsync(t, context.Background(), a, toolCall(7, tc.tool, map[string]any{"key": key}, nil), "Accept", accept)
			blk.waitStarted(t)

			wantRPCError(t, h.post(t, a, toolCall(7, "echo", map[string]any{"text": "x"}, nil), "Accept", accept), http.StatusOK, "7", protocol.CodeInvalidRequest)
			wantRPCError(t, h.post(t, a, rpc(7, "tools/list", nil), "Accept", accept), http.StatusOK, "7", protocol.CodeInvalidRequest)
			// "7" is another id than 7.
			if text, _ := toolText(t, resultOf(t, h.post(t, a, toolCall("7", "echo", map[string]any{"text": "str"}, nil)), `"7"`)); text != "str" {
				t.Errorf("echo with id \"7\" = %q", text)
			}
			// The same id on another session is fine.
			if text, _ := toolText(t, resultOf(t, h.post(t, b, toolCall(7, "echo", map[string]any{"text": "other"}, nil)), "7")); text != "other" {
				t.Errorf("echo on the other session = %q", text)
			}

			blk.Release()
			r := waitReply(t, first)
			if text, _ := toolText(t, resultOf(t, r, "7")); text != "released "+key {
				t.Fatalf("first call: %q", text)
			}
			// Once answered, the id is free again.
			if text, _ := toolText(t, resultOf(t, h.post(t, a, toolCall(7, "echo", map[string]any{"text": "again"}, nil)), "7")); text != "again" {
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
	sid := h.initialize(t)
	for _, tool := range []string{"echo", "echo_long"} {
		for i := 0; i < 200; i++ {
			r := h.post(t, sid, toolCall(1, tool, map[string]any{"text": "x"}, nil))
			if r.Status != http.StatusOK {
				t.Fatalf("%s try %d: %s", tool, i, r)
			}
			var env struct{ Error json.RawMessage }
			if err := json.Unmarshal(messageBody(t, r), &env); err != nil || env.Error != nil {
				t.Fatalf("%s try %d: reusing id 1 after its response was refused: %s", tool, i, r.Body)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Cancellation

func TestCancel_Notification(t *testing.T) {
	h := newHarness(t)
	sid := h.initialize(t)
	for _, tc := range []struct {
		name, tool, accept string
		id                 any
	}{
		{"integer id, JSON", "block", "application/json", 7},
		{"string id, JSON", "block", "application/json", "req-a"},
		{"integer id, SSE allowed", "block", acceptBoth, 8},
		{"integer id, detached", "block_long", acceptBoth, 9},
		{"string id, detached", "block_long", acceptBoth, "req-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "cancel-" + tc.name
			blk := h.fx.block(key)
			pending := h.postAsync(t, context.Background(), sid, toolCall(tc.id, tc.tool, map[string]any{"key": key}, nil), "Accept", tc.accept)
			blk.waitStarted(t)
			r := h.post(t, sid, rpc(nil, "notifications/cancelled", map[string]any{"requestId": tc.id, "reason": "test"}))
			if r.Status != http.StatusAccepted {
				t.Fatalf("notifications/cancelled: %s", r)
			}
			waitChan(t, blk.cancelled, "the handler's context to be cancelled")
			waitChan(t, blk.finished, "the handler to return")
			r = waitReply(t, pending)
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
			h.toolsListOK(t, sid)
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
		sid := h.initialize(t)
		blk := h.fx.block("disc-json")
		ctx, cancel := context.WithCancel(context.Background())
		pending := h.postAsync(t, ctx, sid, toolCall(7, "block", map[string]any{"key": "disc-json"}, nil), "Accept", "application/json")
		blk.waitStarted(t)
		cancel()
		if r := waitReply(t, pending); r.Status != -1 {
			t.Fatalf("want a client-side error after cancelling the request, got %s", r)
		}
		notWithin(t, blk.cancelled, waitShort, "cancellation of the handler on client disconnect")
		if r := h.send(t, http.MethodDelete, sid, nil); r.Status != http.StatusNoContent {
			t.Fatalf("DELETE: %s", r)
		}
		waitChan(t, blk.cancelled, "the handler to be cancelled by the end of the session")
		waitChan(t, blk.finished, "the handler to return")
	})
}

func disconnectSSE(t *testing.T, h *harness, tool string) {
	sid := h.initialize(t)
	key := "disc-sse-" + tool
	blk := h.fx.block(key)
	ps := h.postSSE(t, sid, toolCall(7, tool, map[string]any{"key": key}, "pt"))
	ev, m := ps.nextMessage(t)
	if progressOf(t, m).Message != "started" {
		t.Fatalf("first message %+v", m)
	}
	name, _ := splitEventID(t, ev.ID)
	st := h.session(t, sid).stream(name)
	if st == nil {
		t.Fatalf("no stream %q", name)
	}
	blk.waitStarted(t)
	ps.close()
	waitDetached(t, st) // the server has seen the disconnect
	notWithin(t, blk.cancelled, waitShort, "cancellation of the handler on client disconnect")
	// Explicit cancellation: end the session.
	if r := h.send(t, http.MethodDelete, sid, nil); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %s", r)
	}
	waitChan(t, blk.cancelled, "the handler to be cancelled by the end of the session")
	waitChan(t, blk.finished, "the handler to return")
}

// ---------------------------------------------------------------------------
// Panics

func TestPanicInTool(t *testing.T) {
	h := newHarness(t)
	sid := h.initialize(t)
	for i, tc := range []struct{ tool, accept string }{
		{"panic", "application/json"},
		{"panic", acceptBoth},
		{"panic_long", "application/json"},
		{"panic_long", acceptBoth}, // detached
	} {
		accept := tc.accept
		t.Run(tc.tool+"/Accept="+accept, func(t *testing.T) {
			id := 100 + i
			wantRPCError(t, h.post(t, sid, toolCall(id, tc.tool, nil, nil), "Accept", accept), http.StatusOK, strconv.Itoa(id), protocol.CodeInternalError)
			if text, _ := toolText(t, resultOf(t, h.post(t, sid, toolCall(id+10, "echo", map[string]any{"text": "alive"}, nil)), strconv.Itoa(id+10))); text != "alive" {
				t.Fatalf("echo after the panic = %q", text)
			}
		})
	}
	for _, tool := range []string{"panic", "panic_long"} {
		t.Run(tool+" after a progress notification on the SSE stream", func(t *testing.T) {
			r := h.post(t, sid, toolCall(200, tool, nil, 1))
			if r.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("want an SSE response: %s", r)
			}
			evs := parseSSE(r.Body)
			last := evs[len(evs)-1]
			if _, err := checkRPCError([]byte(last.Data), "200", protocol.CodeInternalError); err != nil {
				t.Fatalf("last event %q: %v", last.Data, err)
			}
			h.toolsListOK(t, sid)
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
	var buf lockedBuffer
	h := newHarness(t, withOpts(func(o *Options) { o.Logger = zerolog.New(&buf).Level(zerolog.InfoLevel) }))
	sid := h.initialize(t)
	blk := h.fx.block("log-race")
	ps := h.postSSE(t, sid, toolCall(1, "block_long", map[string]any{"key": "log-race"}, "pt"))
	ev, _ := ps.nextMessage(t)
	name, _ := splitEventID(t, ev.ID)
	st := h.session(t, sid).stream(name)
	ps.close()
	waitDetached(t, st)
	blk.Release()
	waitChan(t, blk.finished, "the handler to finish")
	var line string
	testutil.Eventually(t, waitLong, "the tools/call log line", func() bool {
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
			sid := h.initialize(t)
			get := h.openGET(t, sid)
			get.next(t) // priming
			key := "late-" + tc.name
			blk := h.fx.block(key)
			r := h.post(t, sid, toolCall(61, "late", map[string]any{"key": key}, tc.token))
			if tc.token != nil {
				evs := parseSSE(r.Body)
				if r.Header.Get("Content-Type") != "text/event-stream" || len(evs) == 0 {
					t.Fatalf("want an SSE response: %s", r)
				}
				resultFromMessage(t, []byte(evs[len(evs)-1].Data), "61")
			} else {
				resultOf(t, r, "61")
			}
			blk.Release()
			waitChan(t, blk.finished, "the late message to be sent")
			_, m := get.nextMessage(t)
			if m.Method != protocol.NotificationMessage || !strings.Contains(string(m.Params), key) {
				t.Fatalf("GET stream got %+v, want the late notifications/message", m)
			}
		})
	}
}
