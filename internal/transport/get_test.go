package transport

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

func resURI(i int) string { return fmt.Sprintf("test://res/%d", i) }

// standalone returns the session's GET stream (white-box).
func (h *harness) standalone(t testing.TB, sid string) *Stream {
	t.Helper()
	return h.session(t, sid).standalone
}

func (h *harness) updated(t testing.TB, uris ...string) {
	t.Helper()
	for _, u := range uris {
		if _, err := h.tr.ResourceUpdated("", u); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGET_ResumeExactlyOnce is the headline property of the design: a
// client that reconnects with Last-Event-ID receives every event after it
// exactly once, in order, and nothing from another stream. It uses the
// r3labs/sse client, an independent SSE parser.
func TestGET_ResumeExactlyOnce(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	uris := make([]string, 11)
	for i := 1; i <= 10; i++ {
		uris[i] = resURI(i)
	}
	h.Subscribe(t, sid, uris[1:]...)

	c := h.RClient(sid)
	sub := th.SubscribeR(t, c)
	if ev := sub.Next(t); ev.ID != "g-0" || ev.Data != "" {
		t.Fatalf("first event %+v, want the priming event g-0", ev)
	}
	h.updated(t, uris[1:6]...)
	var id3 string
	for i := 1; i <= 3; i++ {
		ev, m := sub.NextMessage(t)
		if got := th.ResourceUpdatedURI(t, m); got != uris[i] {
			t.Fatalf("event %d is for %s, want %s", i, got, uris[i])
		}
		if want := fmt.Sprintf("g-%d", i); ev.ID != want {
			t.Fatalf("event %d id %q, want %q", i, ev.ID, want)
		}
		id3 = ev.ID
	}
	// Cut the stream after event 3. Events 4 and 5 may or may not have
	// reached the client's buffers; the client has only processed 3.
	sub.Stop(t)

	// While disconnected: four more updates on the GET stream, and a tool
	// call whose progress travels on its own POST stream.
	h.updated(t, uris[6:10]...)
	r := h.Post(t, sid, th.ToolCall(50, "progress", map[string]any{"n": 3}, "other-stream"))
	if r.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("tool call during the disconnect: %s", r)
	}

	// Reconnect. The r3labs client sends its stored LastEventID; set it to
	// the last event processed, as a client that read exactly 3 would.
	c.LastEventID.Store([]byte(id3))
	sub2 := th.SubscribeR(t, c)
	for i := 4; i <= 9; i++ {
		ev := sub2.Next(t)
		if ev.Data == "" {
			t.Fatalf("resumed stream sent %+v; no priming event is expected on resumption", ev)
		}
		m := th.ParseMessage(t, ev.Data)
		if got := th.ResourceUpdatedURI(t, m); got != uris[i] {
			t.Fatalf("resumed event for %s, want %s (id %s)", got, uris[i], ev.ID)
		}
		if want := fmt.Sprintf("g-%d", i); ev.ID != want {
			t.Fatalf("resumed event id %q, want %q", ev.ID, want)
		}
	}
	// Nothing else is pending: the next event is the next update.
	h.updated(t, uris[10])
	ev, m := sub2.NextMessage(t)
	if got := th.ResourceUpdatedURI(t, m); got != uris[10] || ev.ID != "g-10" {
		t.Fatalf("after the replay got %s (%s), want %s (g-10): a duplicate or a foreign event", got, ev.ID, uris[10])
	}
}

// A fresh GET without Last-Event-ID starts after the last event some
// connection was given: it gets what was never written, and nothing twice.
func TestGET_FreshStreamGetsOnlyUnwritten(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	h.Subscribe(t, sid, "test://a")
	get := h.OpenGET(t, sid)
	if ev := get.Next(t); ev.ID != "g-0" || !ev.Priming() {
		t.Fatalf("first event %+v, want priming g-0", ev)
	}
	h.updated(t, "test://a", "test://a")
	for i := 1; i <= 2; i++ {
		if ev, _ := get.NextMessage(t); ev.ID != fmt.Sprintf("g-%d", i) {
			t.Fatalf("event id %q, want g-%d", ev.ID, i)
		}
	}
	get.Close()
	th.WaitDetached(t, h.standalone(t, sid))
	h.updated(t, "test://a", "test://a", "test://a")

	get2 := h.OpenGET(t, sid)
	if ev := get2.Next(t); ev.ID != "g-2" || !ev.Priming() {
		t.Fatalf("first event %+v, want priming g-2 (the position after the events already written)", ev)
	}
	for i := 3; i <= 5; i++ {
		if ev, _ := get2.NextMessage(t); ev.ID != fmt.Sprintf("g-%d", i) {
			t.Fatalf("event id %q, want g-%d", ev.ID, i)
		}
	}
	h.updated(t, "test://a")
	if ev, _ := get2.NextMessage(t); ev.ID != "g-6" {
		t.Fatalf("event id %q, want g-6", ev.ID)
	}
}

// A Last-Event-ID naming a POST stream this server issued but no longer
// holds is refused, rather than answered with a stream on which the client
// would wait forever for its response.
func TestGET_GonePostStream(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	r := h.Send(t, http.MethodGet, sid, nil, "Accept", "text/event-stream", "Last-Event-ID", "p99-1")
	th.WantRPCError(t, r, http.StatusBadRequest, "null", protocol.CodeInvalidRequest)
	h.ToolsListOK(t, sid)
}

// failingWriter is a ResponseWriter (with Flush) on a connection that dies
// when the response's result is written: everything before went out, the
// write carrying "result" fails as a write to a dead peer does.
type failingWriter struct {
	mu  sync.Mutex
	h   http.Header
	out bytes.Buffer
}

func (f *failingWriter) Header() http.Header { return f.h }
func (f *failingWriter) WriteHeader(int)     {}
func (f *failingWriter) FlushError() error   { return nil }
func (f *failingWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if bytes.Contains(p, []byte(`"result"`)) {
		return 0, errors.New("write tcp: broken pipe")
	}
	return f.out.Write(p)
}

func (f *failingWriter) Events() []th.SSEEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return th.ParseSSE(f.out.Bytes())
}

// A response whose write failed stays with the session for resumption: the
// client resumes after the last event it received and gets the response,
// once. (An event once counted as sent when it was taken from the log, before
// the write, so the stream was released as delivered and the response lost.)
func TestGET_ResumeAfterFailedWrite(t *testing.T) {
	h := newHarness(t)
	for _, tool := range []string{"block", "block_long"} {
		t.Run(tool, func(t *testing.T) {
			sid := h.Initialize(t)
			key := "failed-write-" + tool
			blk := h.Fx.Block(key)
			fw := &failingWriter{h: http.Header{}}
			req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(th.ToolCall(31, tool, map[string]any{"key": key}, "pt")))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", th.AcceptBoth)
			req.Header.Set("Mcp-Session-Id", sid)
			served := make(chan struct{})
			go func() {
				defer close(served)
				h.Router.ServeHTTP(fw, req)
			}()
			blk.WaitStarted(t)
			// The client has the progress notification before the handler
			// goes on.
			testutil.Eventually(t, th.WaitLong, "the first progress notification to be written", func() bool {
				for _, ev := range fw.Events() {
					if strings.Contains(ev.Data, `"started"`) {
						return true
					}
				}
				return false
			})
			blk.Release()
			th.WaitChan(t, served, "the POST to end after its failed write")

			var got []string // messages the client received, over both connections
			last := ""
			for _, ev := range fw.Events() {
				if ev.HasID {
					last = ev.ID
				}
				if ev.Data != "" {
					got = append(got, ev.Data)
				}
			}
			name, _ := th.SplitEventID(t, last)
			if h.session(t, sid).Stream(name) == nil {
				t.Fatalf("stream %s was released although its last write failed (client has %q)", name, got)
			}
			res := h.OpenGET(t, sid, "Last-Event-ID", last)
			for _, ev := range res.Rest(t) {
				if ev.Data != "" {
					got = append(got, ev.Data)
				}
			}
			var results int
			for _, data := range got {
				if m := th.ParseMessage(t, data); m.Method == "" {
					results++
					if text, _ := th.ToolText(t, th.ResultFromMessage(t, []byte(data), "31")); text != "released "+key {
						t.Errorf("result %q", text)
					}
				}
			}
			if results != 1 || len(got) != 3 {
				t.Fatalf("client received %q after resuming from %s; want two progress notifications and the result, once each", got, last)
			}
			h.ToolsListOK(t, sid)
		})
	}
}

// A Last-Event-ID beyond anything issued must not make the stream skip
// the events that come next.
func TestGET_LastEventIDFromTheFuture(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	h.Subscribe(t, sid, "test://a")
	h.updated(t, "test://a")
	get := h.OpenGET(t, sid, "Last-Event-ID", "g-999")
	h.updated(t, "test://a")
	if ev, _ := get.NextMessage(t); ev.ID != "g-2" {
		t.Fatalf("event id %q, want g-2: an id from the future skipped events", ev.ID)
	}
}

// Resuming a POST stream whose client went away before the response
// replays the rest of that stream, the response included, and ends.
func TestGET_ResumePostStream(t *testing.T) {
	h := newHarness(t)
	for _, tool := range []string{"block", "block_long"} {
		t.Run(tool, func(t *testing.T) { resumePostStream(t, h, tool) })
	}
}

func resumePostStream(t *testing.T, h *harness, tool string) {
	sid := h.Initialize(t)
	key := "resume-post-" + tool
	blk := h.Fx.Block(key)
	ps := h.PostSSE(t, sid, th.ToolCall(31, tool, map[string]any{"key": key}, "pt"))
	prime := ps.Next(t)
	if !prime.Priming() {
		t.Fatalf("first event %+v, want priming", prime)
	}
	name, _ := th.SplitEventID(t, prime.ID)
	if name == standaloneStreamName {
		t.Fatalf("POST stream uses the standalone stream name")
	}
	if _, m := ps.NextMessage(t); th.ProgressOf(t, m).Message != "started" {
		t.Fatalf("want the started progress, got %+v", m)
	}
	blk.WaitStarted(t)
	st := h.session(t, sid).Stream(name)
	ps.Close()
	th.WaitDetached(t, st)
	blk.Release()
	th.WaitChan(t, blk.Finished, "the handler to finish")

	h.Subscribe(t, sid, "test://a") // standalone events must not appear below
	h.updated(t, "test://a")

	res := h.OpenGET(t, sid, "Last-Event-ID", prime.ID)
	want := []string{"started", "released"}
	for i, msg := range want {
		ev, m := res.NextMessage(t)
		if ev.ID != fmt.Sprintf("%s-%d", name, i+1) {
			t.Fatalf("replayed event id %q, want %s-%d", ev.ID, name, i+1)
		}
		if p := th.ProgressOf(t, m); p.Message != msg || p.Token != `"pt"` {
			t.Fatalf("replayed event %d = %+v, want progress %q", i+1, p, msg)
		}
	}
	ev, _ := res.NextMessage(t)
	if ev.ID != fmt.Sprintf("%s-3", name) {
		t.Fatalf("response event id %q, want %s-3", ev.ID, name)
	}
	if text, _ := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), "31")); text != "released "+key {
		t.Fatalf("replayed response %q", text)
	}
	res.WaitEnd(t)

	// Delivered once: the stream is gone, and resuming it again is refused
	// rather than answered with a stream that would never carry a response.
	testutil.Eventually(t, th.WaitLong, "the delivered stream to be released", func() bool { return h.session(t, sid).Stream(name) == nil })
	r := h.Send(t, http.MethodGet, sid, nil, "Accept", "text/event-stream", "Last-Event-ID", prime.ID)
	th.WantRPCError(t, r, http.StatusBadRequest, "null", protocol.CodeInvalidRequest)
	// The standalone stream's earlier event was never written, so a fresh
	// GET gets it now.
	again := h.OpenGET(t, sid)
	if ev := again.Next(t); !ev.Priming() || !strings.HasPrefix(ev.ID, standaloneStreamName+"-") {
		t.Fatalf("fresh GET: first event %+v, want the standalone priming event", ev)
	}
	if ev, m := again.NextMessage(t); th.ResourceUpdatedURI(t, m) != "test://a" || ev.ID != "g-1" {
		t.Fatalf("standalone event %+v", ev)
	}
}

// An unknown Last-Event-ID is not an error: the client gets the standalone
// stream.
func TestGET_UnknownLastEventID(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	h.Subscribe(t, sid, "test://a")
	for i, last := range []string{"zzz-5", "garbage", "-5", "g-", "g-x", "p1-18446744073709551616", strings.Repeat("x", 4000)} {
		t.Run(fmt.Sprintf("%.20s", last), func(t *testing.T) {
			get := h.OpenGET(t, sid, "Last-Event-ID", last)
			if ev := get.Next(t); !ev.Priming() || !strings.HasPrefix(ev.ID, "g-") {
				t.Fatalf("first event %+v, want the standalone priming event", ev)
			}
			h.updated(t, "test://a")
			if ev, _ := get.NextMessage(t); ev.ID != fmt.Sprintf("g-%d", i+1) {
				t.Fatalf("event id %q, want g-%d", ev.ID, i+1)
			}
			get.Close()
			th.WaitDetached(t, h.standalone(t, sid))
		})
	}
	h.ToolsListOK(t, sid)
}

// The log is bounded: 100 events while disconnected, resumed from event 1,
// yield the newest EventLogSize (16) events and no more.
func TestGET_BoundedLog(t *testing.T) {
	h := newHarness(t) // EventLogSize 16
	sid := h.Initialize(t)
	h.Subscribe(t, sid, "test://bulk")
	get := h.OpenGET(t, sid)
	get.Next(t) // priming
	h.updated(t, "test://bulk")
	first, _ := get.NextMessage(t)
	if first.ID != "g-1" {
		t.Fatalf("first event id %q", first.ID)
	}
	get.Close()
	th.WaitDetached(t, h.standalone(t, sid))
	for i := 0; i < 100; i++ {
		h.updated(t, "test://bulk")
	}
	// Events 2..101 were sent; the log keeps 86..101.
	c := h.RClient(sid)
	c.Headers["Last-Event-ID"] = first.ID
	sub := th.SubscribeR(t, c)
	got := 0
	for seq := 86; seq <= 101; seq++ {
		ev, m := sub.NextMessage(t)
		th.ResourceUpdatedURI(t, m)
		if ev.ID != fmt.Sprintf("g-%d", seq) {
			t.Fatalf("resumed event %d has id %q, want g-%d (the newest 16)", got, ev.ID, seq)
		}
		got++
	}
	h.updated(t, "test://bulk")
	if ev, _ := sub.NextMessage(t); ev.ID != "g-102" {
		t.Fatalf("after the 16 retained events got %q, want g-102: more than the log size was replayed", ev.ID)
	}
	h.ToolsListOK(t, sid)
}

func TestGET_KeepAlive(t *testing.T) {
	h := newHarness(t) // KeepAliveInterval 50ms
	sid := h.Initialize(t)
	get := h.OpenGET(t, sid)
	deadline := time.Now().Add(time.Second)
	n := 0
	for n < 2 {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("%d keep-alive comments within 1s at a 50ms interval, want at least 2", n)
		}
		ev, ok := get.NextFrame(t, left)
		if !ok {
			t.Fatal("GET stream ended")
		}
		if ev.IsComment() {
			if ev.Comment != "keep-alive" {
				t.Fatalf("comment %q", ev.Comment)
			}
			n++
		}
	}
}

func TestGET_SecondSupersedesFirst(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	h.Subscribe(t, sid, "test://a")
	first := h.OpenGET(t, sid)
	first.Next(t) // priming: attached
	second := h.OpenGET(t, sid)
	second.Next(t)
	first.WaitEnd(t)
	touch(t, h, sid, "test://a") // through the protocol this time
	ev, m := second.NextMessage(t)
	if th.ResourceUpdatedURI(t, m) != "test://a" || ev.ID != "g-1" {
		t.Fatalf("second stream got %+v", ev)
	}
}

// Only subscribed sessions are notified, and unsubscribing stops it.
func TestGET_ResourceUpdatedOnlyToSubscribers(t *testing.T) {
	h := newHarness(t)
	a := h.Initialize(t)
	b := h.Initialize(t)
	h.Subscribe(t, a, "test://a")
	h.Subscribe(t, b, "test://b")
	ga, gb := h.OpenGET(t, a), h.OpenGET(t, b)
	ga.Next(t)
	gb.Next(t)
	h.updated(t, "test://a", "test://b")
	if _, m := ga.NextMessage(t); th.ResourceUpdatedURI(t, m) != "test://a" {
		t.Fatal("a got another resource")
	}
	if _, m := gb.NextMessage(t); th.ResourceUpdatedURI(t, m) != "test://b" {
		t.Fatal("b got another resource")
	}
	r := h.Post(t, a, th.RPC(1, "resources/unsubscribe", map[string]any{"uri": "test://a"}))
	th.ResultOf(t, r, "1")
	h.Subscribe(t, a, "test://c")
	h.updated(t, "test://a", "test://c")
	if _, m := ga.NextMessage(t); th.ResourceUpdatedURI(t, m) != "test://c" {
		t.Fatal("a got an update after unsubscribing")
	}
}

// CloseStreams ends the GET streams with a retry hint and keeps sessions.
func TestCloseStreams_RetryHint(t *testing.T) {
	h := newHarness(t)
	sid := h.Initialize(t)
	get := h.OpenGET(t, sid)
	get.Next(t)
	h.tr.CloseStreams(1234)
	ev := get.Next(t)
	if ev.Retry != "1234" {
		t.Fatalf("want retry: 1234 before the end, got %+v", ev)
	}
	get.WaitEnd(t)
	h.ToolsListOK(t, sid)
	// The server is draining: a new stream would hold shutdown up, so the
	// client is told to retry (in a deployment, on another replica).
	r := h.Send(t, http.MethodGet, sid, nil, "Accept", "text/event-stream")
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("GET after CloseStreams: %s, want 503 with Retry-After", r)
	}
}

// SEP-1699 polling: a LongRunning tool closes its POST stream early (with a
// retry hint) and keeps working; the client resumes with Last-Event-ID and
// gets the rest, the response included, exactly once. For a tool that is not
// LongRunning CloseStream does nothing and the response completes normally.
func TestPostSSE_CloseStreamPolling(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name, tool string
		early      bool
		polls      bool
	}{
		{"after a message", "poll", false, true},
		{"before any message", "poll", true, true},
		{"not LongRunning", "poll_inline", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sid := h.Initialize(t)
			key := "poll-" + tc.name
			blk := h.Fx.Block(key)
			ps := h.PostSSE(t, sid, th.ToolCall(41, tc.tool, map[string]any{"key": key, "early": tc.early}, "pt"))
			var got []string // messages, in order, over every connection
			var ids []string
			record := func(ev th.SSEEvent) {
				m := th.ParseMessage(t, ev.Data)
				ids = append(ids, ev.ID)
				if m.Method != "" {
					got = append(got, th.ProgressOf(t, m).Message)
				} else {
					text, _ := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), "41"))
					got = append(got, text)
				}
			}
			last := ""
			if !tc.polls {
				blk.WaitStarted(t)
				blk.Release()
				for _, ev := range ps.Rest(t) {
					if ev.Retry != "" {
						t.Fatalf("retry hint %q from a tool that is not LongRunning", ev.Retry)
					}
					if ev.HasData && ev.Data != "" {
						record(ev)
					}
				}
			} else {
				sawRetry := false
				for _, ev := range ps.Rest(t) {
					if ev.Retry != "" {
						sawRetry = ev.Retry == "25"
					}
					if ev.HasID {
						last = ev.ID
					}
					if ev.HasData && ev.Data != "" {
						record(ev)
					}
				}
				if !sawRetry {
					t.Fatal("the stream ended without the retry hint")
				}
				if last == "" {
					t.Fatal("the closed stream gave no event id to resume from")
				}
				blk.WaitStarted(t)
				blk.Release()
				th.WaitChan(t, blk.Finished, "the handler to finish")
				res := h.OpenGET(t, sid, "Last-Event-ID", last)
				for _, ev := range res.Rest(t) {
					if ev.HasData && ev.Data != "" {
						record(ev)
					}
				}
			}
			want := []string{"started", "after", "polled " + key}
			if tc.early {
				want = want[1:]
			}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("messages %q (ids %q), want %q exactly once each", got, ids, want)
			}
			for i := 1; i < len(ids); i++ {
				n0, s0 := th.SplitEventID(t, ids[i-1])
				n1, s1 := th.SplitEventID(t, ids[i])
				if n0 != n1 || s1 != s0+1 {
					t.Errorf("event ids %q are not consecutive on one stream", ids)
				}
			}
			h.ToolsListOK(t, sid)
		})
	}
}

// Before 2025-11-25 a client gets no priming event, so a stream closed
// before its first event would leave it nothing to resume from: CloseStream
// does nothing on such sessions, and the response arrives on the POST stream.
// (From 2025-11-25 on it closes the stream: TestPostSSE_CloseStreamPolling.)
func TestPostSSE_CloseStreamIgnoredBefore2025_11_25(t *testing.T) {
	h := newHarness(t)
	for _, version := range []string{"2025-06-18", "2025-03-26"} {
		for _, early := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/early=%v", version, early), func(t *testing.T) {
				sid, got := h.InitializeWith(t, version, nil)
				if got != version {
					t.Fatalf("negotiated %s, want %s", got, version)
				}
				key := fmt.Sprintf("poll-%s-%v", version, early)
				blk := h.Fx.Block(key)
				ps := h.PostSSE(t, sid, th.ToolCall(43, "poll", map[string]any{"key": key, "early": early}, "pt"), "Mcp-Protocol-Version", version)
				blk.WaitStarted(t) // CloseStream has been called
				blk.Release()
				var msgs []string
				for _, ev := range ps.Rest(t) {
					if ev.Retry != "" {
						t.Errorf("retry hint %q on a %s session", ev.Retry, version)
					}
					if ev.Priming() {
						t.Errorf("priming event %+v on a %s session", ev, version)
					}
					if ev.Data == "" {
						continue
					}
					if m := th.ParseMessage(t, ev.Data); m.Method != "" {
						msgs = append(msgs, th.ProgressOf(t, m).Message)
					} else {
						text, _ := th.ToolText(t, th.ResultFromMessage(t, []byte(ev.Data), "43"))
						msgs = append(msgs, text)
					}
				}
				want := []string{"started", "after", "polled " + key}
				if early {
					want = want[1:]
				}
				if strings.Join(msgs, "|") != strings.Join(want, "|") {
					t.Fatalf("POST stream carried %q, want %q", msgs, want)
				}
				h.ToolsListOK(t, sid)
			})
		}
	}
}

// rawGET opens the standalone stream on a bare TCP connection that is never
// read from: a client that stopped reading. The connection closes with t.
func (h *harness) rawGET(t testing.TB, sid string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", h.TS.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", h.TS.Listener.Addr(), sid); err != nil {
		t.Fatal(err)
	}
	return c
}

// caughtUp reports whether every event in the log has been flushed to a
// connection (white-box).
func (s *Stream) caughtUp() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushed == s.nextSeq-1
}

// A client that stops reading its stream while the server keeps sending is
// dropped once a write has waited WriteTimeout: its connection is not held,
// and its stream is free for the client to resume. (Without a write deadline
// the writer blocked for as long as the peer kept the connection open.)
func TestGET_ClientThatStopsReadingIsDropped(t *testing.T) {
	h := newHarness(t, withOpts(func(o *Options) { o.WriteTimeout = 200 * time.Millisecond }))
	sid := h.Initialize(t)
	// Large events fill the socket buffers (several MB on loopback) in a
	// few dozen writes. Subscribed white-box: the protocol bounds URIs.
	big := "test://big/" + strings.Repeat("x", 1<<20)
	if err := h.session(t, sid).Subscribe(big); err != nil {
		t.Fatal(err)
	}
	st := h.standalone(t, sid)
	h.rawGET(t, sid)
	testutil.Eventually(t, th.WaitLong, "the raw GET to attach", st.Attached)
	start := time.Now()
	pushed := 0
	// Push whenever the writer has caught up, until a write blocks for
	// good and the deadline ends the connection.
	testutil.Eventually(t, 2*th.WaitLong, "the stream of a client that stopped reading to be detached", func() bool {
		if !st.Attached() {
			return true
		}
		if st.caughtUp() {
			h.updated(t, big)
			pushed++
		}
		return false
	})
	t.Logf("detached %v after the first event, %d events of 1 MiB pushed", time.Since(start).Round(time.Millisecond), pushed)
	// The session is fine: the client may come back.
	h.ToolsListOK(t, sid)
}

// The same for a JSON response: a client that sends a request and never
// reads the (large) answer must not hold the handler's connection beyond
// WriteTimeout.
func TestPost_JSONClientThatStopsReadingIsDropped(t *testing.T) {
	var logs th.LockedBuffer
	h := newHarness(t, withOpts(func(o *Options) {
		o.WriteTimeout = 200 * time.Millisecond
		o.MaxBodyBytes = 16 << 20
		o.Logger = zerolog.New(&logs).Level(zerolog.InfoLevel)
	}))
	sid := h.Initialize(t)
	// An answer larger than the loopback socket buffers can take, to a
	// small request: the time the test waits is the write timeout's, not
	// that of decoding a large request.
	body := th.ToolCall(1, "big", map[string]any{"n": 8 << 20}, nil)
	c, err := net.Dial("tcp", h.TS.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s", sid, len(body), body); err != nil {
		t.Fatal(err)
	}
	// The request's log line is written when its handler returns.
	testutil.Eventually(t, th.WaitLong, "the handler of a client that stopped reading to return", func() bool {
		return strings.Contains(logs.String(), `"method":"tools/call"`)
	})
}

// The retry hint of a stream closed by CloseStreams (or a polling tool)
// reaches the client even when the stream has been quiet for longer than
// WriteTimeout (a keep-alive interval longer than the write timeout).
func TestCloseStreams_RetryHintAfterQuietPeriod(t *testing.T) {
	const writeTimeout = 100 * time.Millisecond
	h := newHarness(t, withOpts(func(o *Options) { o.WriteTimeout, o.KeepAliveInterval = writeTimeout, time.Minute }))
	sid := h.Initialize(t)
	get := h.OpenGET(t, sid)
	get.Next(t)
	time.Sleep(3 * writeTimeout) // quiet for longer than WriteTimeout: not synchronisation
	h.tr.CloseStreams(1234)
	if ev := get.Next(t); ev.Retry != "1234" {
		t.Fatalf("want retry: 1234 before the end, got %+v", ev)
	}
	get.WaitEnd(t)
}

// A client session may hold only so many SSE streams open
// (Options.MaxStreamsPerSession): with two POST responses streaming, a
// GET that would open a third stream is 429; once one of them is gone it
// passes, and a GET that reconnects the open stream supersedes it and
// always passes.
func TestGET_StreamsPerSessionCap(t *testing.T) {
	h := newHarness(t, withOpts(func(o *Options) { o.MaxStreamsPerSession = 2 }))
	sid := h.Initialize(t)
	blocks := make([]*th.BlockState, 2)
	posts := make([]*th.SSEConn, 2)
	names := make([]string, 2)
	for i := range posts {
		key := fmt.Sprintf("cap-%d", i)
		blocks[i] = h.Fx.Block(key)
		posts[i] = h.PostSSE(t, sid, th.ToolCall(40+i, "block", map[string]any{"key": key}, fmt.Sprintf("pt%d", i)))
		names[i], _ = th.SplitEventID(t, posts[i].Next(t).ID) // priming: the stream is attached
		blocks[i].WaitStarted(t)
	}
	t.Cleanup(func() {
		for _, b := range blocks {
			b.Release()
		}
	})
	r := h.Send(t, http.MethodGet, sid, nil, "Accept", "text/event-stream")
	th.WantRPCError(t, r, http.StatusTooManyRequests, "null", protocol.CodeInvalidRequest)
	if r.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}

	blocks[1].Release()
	posts[1].Rest(t) // its response delivered, the stream closed
	if st := h.session(t, sid).Stream(names[1]); st != nil {
		th.WaitDetached(t, st)
	}
	first := h.OpenGET(t, sid)
	if ev := first.Next(t); !ev.Priming() {
		t.Fatalf("GET after a stream closed: %+v, want the priming event", ev)
	}
	second := h.OpenGET(t, sid) // reconnects the same stream
	if ev := second.Next(t); !ev.Priming() {
		t.Fatalf("reconnecting GET: %+v, want the priming event", ev)
	}
	first.WaitEnd(t)
}
