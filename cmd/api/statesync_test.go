package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
)

// notified collects the URIs of notifications/resources/updated a client
// receives.
type notified struct {
	mu   sync.Mutex
	uris []string
}

func (n *notified) handler(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	n.mu.Lock()
	n.uris = append(n.uris, req.Params.URI)
	n.mu.Unlock()
}

func (n *notified) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.uris
	n.uris = nil
	return out
}

// waitFor waits until the client has received every URI of want (in any
// order), then a little longer to catch extras.
func (n *notified) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var got []string
	for {
		got = append(got, n.take()...)
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	got = append(got, n.take()...)
	if strings.Join(sorted(got), " ") != strings.Join(sorted(want), " ") {
		t.Fatalf("notified %v, want %v", got, want)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func connectWith(t *testing.T, url string, n *notified) *mcp.ClientSession {
	t.Helper()
	return connectAs(t, url, "", n)
}

// Three agents share one server. B subscribes to an entry and to the
// memory domain's stale pattern; A changes the entry. B is told about
// both, A sees what its mutation invalidated, C (not subscribed) hears
// nothing; a failed mutation tells nobody; after B unsubscribes, neither
// does a successful one.
func TestStateSync_MultiAgent(t *testing.T) {
	url, _ := runServer(t, config.Default(), io.Discard)
	var bGot, cGot notified
	a := connectWith(t, url, nil)
	b := connectWith(t, url, &bGot)
	_ = connectWith(t, url, &cGot)
	ctx := context.Background()
	for _, uri := range []string{"memory://team/plan", "stale://memory.*"} {
		if err := b.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	time.Sleep(100 * time.Millisecond) // let B's GET stream attach

	res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "memory_store", Arguments: map[string]any{"namespace": "team", "key": "plan", "value": "v1"}})
	if err != nil || res.IsError {
		t.Fatalf("memory_store: %v %+v", err, res)
	}
	first := res.Content[0].(*mcp.TextContent).Text
	if first != "[System: Cache invalidated for memory.* — caused by memory.store]" {
		t.Errorf("A's first block = %q", first)
	}
	envelope(t, res) // the envelope follows, unchanged
	bGot.waitFor(t, "memory://team/plan", "stale://memory.*")

	// A failed mutation changed nothing: no block, no notification.
	res, err = a.CallTool(ctx, &mcp.CallToolParams{Name: "memory_store", Arguments: map[string]any{"namespace": "team", "key": "plan", "value": "v2", "ifVersion": 9}})
	if err != nil || !res.IsError {
		t.Fatalf("conflicting memory_store: %v %+v", err, res)
	}
	if strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "[System:") {
		t.Error("a failed mutation carries an invalidation block")
	}
	bGot.waitFor(t)
	cGot.waitFor(t)

	for _, uri := range []string{"memory://team/plan", "stale://memory.*"} {
		if err := b.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatalf("unsubscribe %s: %v", uri, err)
		}
	}
	if _, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "memory_store", Arguments: map[string]any{"namespace": "team", "key": "plan", "value": "v3"}}); err != nil {
		t.Fatal(err)
	}
	bGot.waitFor(t)

	// Reads are marked volatile in tools/list.
	tools, err := a.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "memory_retrieve" && !strings.HasSuffix(tool.Description, " [Cache-Control: no-store]") {
			t.Errorf("memory_retrieve description %q lacks the directive", tool.Description)
		}
	}
}

// rawClient speaks Streamable HTTP by hand, to cut and resume a GET
// stream precisely.
type rawClient struct {
	t   *testing.T
	url string
	sid string
}

func (c *rawClient) post(body string) string {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if c.sid == "" {
		c.sid = resp.Header.Get("Mcp-Session-Id")
	}
	if resp.StatusCode >= 300 {
		c.t.Fatalf("POST %s: %d %s", body, resp.StatusCode, b)
	}
	return string(b)
}

// stream opens the GET stream (resuming after lastID if set) and returns
// a channel of (id, data) pairs and a function that cuts the connection.
func (c *rawClient) stream(lastID string) (<-chan [2]string, func()) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", c.sid)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET: %d", resp.StatusCode)
	}
	events := make(chan [2]string, 64)
	go func() {
		defer close(events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var id, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = line[4:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			case line == "":
				if data != "" {
					events <- [2]string{id, data}
				}
				id, data = "", ""
			}
		}
	}()
	return events, cancel
}

// B's stream is cut; A mutates twice; B resumes with Last-Event-ID and
// gets both notifications exactly once.
func TestStateSync_ResumeAfterCut(t *testing.T) {
	url, _ := runServer(t, config.Default(), io.Discard)
	a := connectWith(t, url, nil)
	b := &rawClient{t: t, url: url}
	b.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
	b.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	b.post(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"memory://team/plan"}}`)
	events, cut := b.stream("")
	store := func(v int) {
		if _, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory_store",
			Arguments: map[string]any{"namespace": "team", "key": "plan", "value": v}}); err != nil {
			t.Fatal(err)
		}
	}
	store(1)
	var lastID string
	select {
	case ev := <-events:
		if !strings.Contains(ev[1], `"uri":"memory://team/plan"`) {
			t.Fatalf("first event %q", ev[1])
		}
		lastID = ev[0]
	case <-time.After(5 * time.Second):
		t.Fatal("no notification on the live stream")
	}
	cut()
	for range events {
	}
	store(2)
	store(3)
	events, cut = b.stream(lastID)
	defer cut()
	var got []string
	timeout := time.After(2 * time.Second)
	for len(got) < 3 {
		select {
		case ev := <-events:
			if strings.Contains(ev[1], "notifications/resources/updated") {
				got = append(got, ev[0])
			}
			continue
		case <-timeout:
		}
		break
	}
	if len(got) != 2 || got[0] == got[1] || got[0] == lastID || got[1] == lastID {
		t.Fatalf("after resuming from %s got events %v, want the two missed ones exactly once", lastID, got)
	}
}
