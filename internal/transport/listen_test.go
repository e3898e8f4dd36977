package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// listenNotification is a notification read from a listen stream.
type listenNotification struct {
	Method string
	Sub    string // the raw JSON of _meta's subscriptionId
	Params map[string]json.RawMessage
}

func readListen(t *testing.T, c *th.SSEConn) listenNotification {
	t.Helper()
	ev, m := c.NextMessage(t)
	if ev.HasID {
		t.Fatalf("a listen event carries an id: %+v", ev)
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatalf("params of %s: %v", m.Method, err)
	}
	var all map[string]json.RawMessage
	_ = json.Unmarshal(m.Params, &all)
	return listenNotification{Method: m.Method, Sub: string(p.Meta[protocol.MetaSubscriptionID]), Params: all}
}

// openListen opens a listen with id and filter, and reads its
// acknowledgement, which it returns.
func openListen(t *testing.T, h *harness, id any, filter map[string]any) (*th.SSEConn, listenNotification) {
	t.Helper()
	c := h.PostSSE(t, "", modernBody(id, protocol.MethodSubscriptionsListen, map[string]any{"notifications": filter}, nil),
		modernHeaders(protocol.MethodSubscriptionsListen, "")...)
	ack := readListen(t, c)
	if ack.Method != protocol.NotificationSubscriptionsAcknowledged {
		t.Fatalf("first message %s, want the acknowledgement", ack.Method)
	}
	return c, ack
}

// A listen is acknowledged first, with what the server honours, and then
// hears exactly what its filter asks for, each message naming the listen
// request's id verbatim; nothing of another URI, list or tenant.
func TestListenDeliversWhatItsFilterAsks(t *testing.T) {
	h := newHarness(t)
	resources, ack := openListen(t, h, "listen:1", map[string]any{
		"resourceSubscriptions": []string{"memory://team/plan", "stale://memory.*", "memory://team/plan"},
		"resourcesListChanged":  true, "promptsListChanged": true,
	})
	if ack.Sub != `"listen:1"` {
		t.Errorf("acknowledgement names %s, want \"listen:1\"", ack.Sub)
	}
	// No federation: prompts do not change, and are not promised.
	if got := string(ack.Params["notifications"]); got != `{"resourcesListChanged":true,"resourceSubscriptions":["memory://team/plan","stale://memory.*"]}` {
		t.Errorf("acknowledged %s", got)
	}
	tools, ack := openListen(t, h, 7, map[string]any{"toolsListChanged": true})
	if ack.Sub != "7" {
		t.Errorf("acknowledgement names %s, want 7", ack.Sub)
	}

	for _, u := range []string{"memory://team/other", "memory://team/plan", "stale://memory.*"} {
		if _, err := h.tr.ResourceUpdated(tenant.Default, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.tr.ResourceUpdated("another", "memory://team/plan"); err != nil {
		t.Fatal(err)
	}
	h.tr.ResourcesListChanged(context.Background(), "another")
	h.tr.ResourcesListChanged(context.Background(), tenant.Default)
	if _, err := h.tr.ToolsListChanged(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"memory://team/plan", "stale://memory.*", ""} {
		n := readListen(t, resources)
		if n.Sub != `"listen:1"` {
			t.Errorf("%s names %s", n.Method, n.Sub)
		}
		switch {
		case want == "" && n.Method != protocol.NotificationResourcesListChange:
			t.Errorf("got %s, want the resource list's change", n.Method)
		case want != "" && (n.Method != protocol.NotificationResourcesUpdated || string(n.Params["uri"]) != `"`+want+`"`):
			t.Errorf("got %s %s, want the update of %s", n.Method, n.Params["uri"], want)
		}
	}
	if n := readListen(t, tools); n.Method != protocol.NotificationToolsListChanged || n.Sub != "7" {
		t.Errorf("tools listener got %s for %s", n.Method, n.Sub)
	}
	// Nothing more: the tools listener heard no resource, the resources
	// listener no tool list, neither another tenant.
	h.tr.CloseStreams(0)
	for _, c := range []*th.SSEConn{resources, tools} {
		rest := c.Rest(t)
		var msgs []string
		for _, ev := range rest {
			if ev.HasData {
				msgs = append(msgs, ev.Data)
			}
		}
		if len(msgs) != 1 || !strings.Contains(msgs[0], `"resultType":"complete"`) {
			t.Errorf("after the expected notifications: %q, want only the completion result", msgs)
		}
	}
}

// The server ends a listen (here: shutting down) with the completion
// result, correlated by id and naming the subscription, then closes it.
func TestListenEndsWithCompletionResult(t *testing.T) {
	h := newHarness(t)
	c, _ := openListen(t, h, 42, map[string]any{"toolsListChanged": true})
	if !c.Resp.Close {
		// Otherwise the client pools the connection the server closes,
		// and its next request on it fails.
		t.Error("an HTTP/1.1 listen does not say Connection: close")
	}
	h.tr.CloseStreams(0)
	_, m := c.NextMessage(t)
	var res struct {
		ResultType string                     `json:"resultType"`
		Meta       map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || string(m.ID) != "42" {
		t.Fatalf("want the response to 42, got %+v (%v)", m, err)
	}
	if res.ResultType != protocol.ResultComplete || string(res.Meta[protocol.MetaSubscriptionID]) != "42" || res.Meta[protocol.MetaServerInfo] == nil {
		t.Errorf("completion result %s", m.Result)
	}
	c.WaitEnd(t)
	testutil.Eventually(t, th.WaitLong, "the listen to leave the index", func() bool { return h.tr.listens.count() == 0 })
	// A shutting-down replica opens no new listen.
	rr := h.Post(t, "", modernBody(1, protocol.MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{}}, nil),
		modernHeaders(protocol.MethodSubscriptionsListen, "")...)
	if rr.Status != http.StatusServiceUnavailable {
		t.Errorf("listen while draining: %d, want 503", rr.Status)
	}
}

// A client that closes its stream has cancelled the listen: it leaves the
// index, and its principal's count.
func TestListenClosedByClientLeavesIndex(t *testing.T) {
	h := newHarness(t, withOpts(func(o *Options) { o.MaxListensPerPrincipal = 1 }))
	c, _ := openListen(t, h, 1, map[string]any{"resourceSubscriptions": []string{"memory://a/b"}})
	c.Close()
	testutil.Eventually(t, th.WaitLong, "the listen to leave the index", func() bool { return h.tr.listens.count() == 0 })
	openListen(t, h, 2, map[string]any{"toolsListChanged": true}) // its place is free again
}

// A listen's filter is bounded and checked; a principal's listens are
// capped; a listen needs an event stream.
func TestListenRefusals(t *testing.T) {
	h := newHarness(t, withOpts(func(o *Options) { o.MaxListensPerPrincipal = 1 }))
	many := make([]string, MaxListenURIs+1)
	for i := range many {
		many[i] = "memory://a/" + strings.Repeat("k", i%7+1)
	}
	listen := func(params map[string]any) []byte {
		return modernBody(1, protocol.MethodSubscriptionsListen, params, nil)
	}
	hdrs := modernHeaders(protocol.MethodSubscriptionsListen, "")
	cases := []struct {
		name   string
		body   []byte
		accept string
		status int
		code   int
		says   string
	}{
		{"no filter", listen(nil), "", http.StatusOK, protocol.CodeInvalidParams, "notifications is required"},
		{"a filter that is no object", listen(map[string]any{"notifications": []int{1}}), "", http.StatusOK, protocol.CodeInvalidParams, "invalid params"},
		{"too many URIs", listen(map[string]any{"notifications": map[string]any{"resourceSubscriptions": many}}), "", http.StatusOK, protocol.CodeInvalidParams, "at most 256"},
		{"a URI too long", listen(map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{"memory://a/" + strings.Repeat("x", 2048)}}}),
			"", http.StatusOK, protocol.CodeInvalidParams, "at most 2048"},
		{"a relative URI", listen(map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{"team/plan"}}}),
			"", http.StatusOK, protocol.CodeInvalidParams, "not an absolute URI"},
		{"JSON only", listen(map[string]any{"notifications": map[string]any{}}), "application/json", http.StatusNotAcceptable, protocol.CodeInvalidRequest, "text/event-stream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hd := hdrs
			if tc.accept != "" {
				hd = append(append([]string(nil), hdrs...), "Accept", tc.accept)
			}
			rr := h.Post(t, "", tc.body, hd...)
			th.WantRPCError(t, rr, tc.status, "1", tc.code)
			if !strings.Contains(string(rr.Body), tc.says) {
				t.Errorf("%s does not say %q", rr, tc.says)
			}
		})
	}
	openListen(t, h, 1, map[string]any{"toolsListChanged": true})
	rr := h.Post(t, "", listen(map[string]any{"notifications": map[string]any{}}), hdrs...)
	if rr.Status != http.StatusTooManyRequests || rr.Header.Get("Retry-After") == "" {
		t.Errorf("a second listen of the principal: %d %s, want 429 with Retry-After", rr.Status, rr.Body)
	}
}

// A client that lets more notifications wait than a listen queues is too
// slow to read: the server ends its listen rather than hold them.
func TestListenerTooSlowIsEnded(t *testing.T) {
	l := &listener{notes: make(chan *listenNote, listenQueue), end: make(chan struct{})}
	n := uriNote("memory://a/b")
	for range listenQueue {
		l.offer(n)
	}
	select {
	case <-l.end:
		t.Fatal("ended with a queue not yet full")
	default:
	}
	l.offer(n)
	select {
	case <-l.end:
	default:
		t.Fatal("not ended past its queue")
	}
}

// An HTTP/2 stream cannot be taken over from net/http: its handler
// serves the listen to the end, with the same messages.
func TestListenOverHTTP2(t *testing.T) {
	h := newHarness(t)
	srv := httptest.NewUnstartedServer(h.Router)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	body := modernBody("h2", protocol.MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{"memory://a/b"}}}, nil)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", bytes.NewReader(body))
	hd := modernHeaders(protocol.MethodSubscriptionsListen, "")
	for i := 0; i < len(hd); i += 2 {
		req.Header.Set(hd[i], hd[i+1])
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", th.AcceptBoth)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtoMajor != 2 || res.StatusCode != http.StatusOK {
		t.Fatalf("%s %d, want HTTP/2 200", res.Proto, res.StatusCode)
	}
	c := th.NewSSEConn(res, func() {})
	t.Cleanup(c.Close)
	if ack := readListen(t, c); ack.Method != protocol.NotificationSubscriptionsAcknowledged {
		t.Fatalf("first %s", ack.Method)
	}
	if _, err := h.tr.ResourceUpdated(tenant.Default, "memory://a/b"); err != nil {
		t.Fatal(err)
	}
	if n := readListen(t, c); n.Method != protocol.NotificationResourcesUpdated || n.Sub != `"h2"` {
		t.Errorf("got %s for %s", n.Method, n.Sub)
	}
	h.tr.CloseStreams(0)
	if _, m := c.NextMessage(t); !strings.Contains(string(m.Result), `"resultType":"complete"`) || string(m.ID) != `"h2"` {
		t.Errorf("want the completion result, got %+v", m)
	}
	c.WaitEnd(t)
}

// A client that keeps sending on its listen's connection (nothing is
// expected there after the request) has its listen ended, rather than
// have the server read what it streams.
func TestListenClientSendingMoreIsCut(t *testing.T) {
	h := newHarness(t)
	addr := strings.TrimSuffix(strings.TrimPrefix(h.URL, "http://"), "/mcp")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := modernBody(1, protocol.MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	req := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: " + th.AcceptBoth +
		"\r\nMcp-Protocol-Version: " + protocol.Version20260728 + "\r\nMcp-Method: subscriptions/listen\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + string(body)
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(th.WaitLong))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("before the acknowledgement: %v", err)
		}
		if strings.Contains(line, protocol.NotificationSubscriptionsAcknowledged) {
			break
		}
	}
	testutil.Eventually(t, th.WaitLong, "the listen to be open", func() bool { return h.tr.listens.count() == 1 })
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\n\r\nmore and more")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, th.WaitLong, "the listen to end", func() bool { return h.tr.listens.count() == 0 })
	if _, err := io.ReadAll(r); err != nil && !errors.Is(err, net.ErrClosed) {
		var ne net.Error
		if !errors.As(err, &ne) || ne.Timeout() {
			t.Errorf("the connection was not closed: %v", err)
		}
	}
}

// Subscribers names an open listen of a URI, so that the federation's
// sweeper keeps the upstream subscription it holds for it, and stops
// naming it once the listen ends (docs/adr/0054-listen-across-replicas.md).
func TestSubscribersNameListens(t *testing.T) {
	h := newHarness(t)
	const uri = "file:///notes.txt"
	named := func() bool {
		ids, err := h.tr.Subscribers(context.Background(), "", uri)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(ids, func(id string) bool { return strings.HasPrefix(id, "listen-") })
	}
	c, _ := openListen(t, h, "l", map[string]any{"resourceSubscriptions": []string{uri}})
	if !named() {
		t.Fatal("an open listen of the URI is not among its subscribers")
	}
	c.Close()
	testutil.Eventually(t, th.WaitLong, "the ended listen to leave the subscribers", func() bool { return !named() })
}

// A listen that passed the draining check just before the transport
// ended every listen, and was added just after, is ended too: nothing is
// left open for Close to wait on.
func TestListenAddedAfterStopAllIsEnded(t *testing.T) {
	x := newListens()
	x.stopAll()
	l := &listener{tenant: tenant.Default, notes: make(chan *listenNote, 1), end: make(chan struct{})}
	if !x.add(l, 0) {
		t.Fatal("refused")
	}
	select {
	case <-l.end:
	default:
		t.Fatal("a listen added after stopAll is still open")
	}
}

// A listen's id is kept for the stream's life and repeated in every
// message: more than 256 bytes of it is refused, 256 are served.
func TestListenIDIsBounded(t *testing.T) {
	h := newHarness(t)
	longest := strings.Repeat("i", maxListenIDBytes-2) // with its quotes
	_, ack := openListen(t, h, longest, map[string]any{"toolsListChanged": true})
	if ack.Sub != strconv.Quote(longest) {
		t.Errorf("acknowledgement names %.20s…, want the id", ack.Sub)
	}
	rr := h.Post(t, "", modernBody(longest+"i", protocol.MethodSubscriptionsListen, map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil),
		modernHeaders(protocol.MethodSubscriptionsListen, "")...)
	th.WantRPCError(t, rr, http.StatusBadRequest, "null", protocol.CodeInvalidRequest)
}
