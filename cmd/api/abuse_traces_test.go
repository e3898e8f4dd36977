package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// tracesCall calls tool and returns its envelope's data.
func tracesCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) json.RawMessage {
	t.Helper()
	env := call(t, cs, tool, args)
	mustSucceed(t, env, tool)
	return env.Data
}

// Item 3 of the abuse list: every tools/call adds a trace, and the
// embedded store used to keep them all, so a client calling at full speed
// grew the process without limit. With traces.maxInMemory the store
// holds at most that many, drops the earliest and counts them.
func TestAbuse_TracesInMemoryStayBounded(t *testing.T) {
	const maxInMemory, clients, each = 100, 4, 500
	cfg := config.Default()
	cfg.Traces.MaxInMemory = maxInMemory
	cfg.Traces.FlushIntervalMs = 10
	url, _ := startServer(t, cfg)
	underAttack(t, url, "", func() {
		var wg sync.WaitGroup
		for c := range clients {
			cs := connect(t, url)
			wg.Go(func() {
				for i := range each {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "runtime_echo", Arguments: map[string]any{"text": fmt.Sprintf("flood %d/%d", c, i)}})
					cancel()
					if err != nil || res.IsError {
						t.Errorf("client %d call %d: %v", c, i, err)
						return
					}
				}
			})
		}
		// While the flood runs, the store never holds more than the bound.
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		most := 0.0
		for flooding := true; flooding; {
			select {
			case <-done:
				flooding = false
			case <-time.After(20 * time.Millisecond):
			}
			most = max(most, scrape(t, url, "mcp_traces_in_memory")["mcp_traces_in_memory"])
		}
		if most > maxInMemory {
			t.Fatalf("the embedded store held up to %v traces, more than traces.maxInMemory %d", most, maxInMemory)
		}
	})
	// The bystander has stopped: once the queue is empty and the last
	// batch counted, every trace written is held or was evicted, and the
	// store holds the bound. (Every call was queued: the queue is larger
	// than the flood.)
	const (
		written = "mcp_traces_written_total"
		held    = "mcp_traces_in_memory"
		evicted = "mcp_traces_evicted_total"
		queued  = "mcp_trace_queue_length"
		dropped = "mcp_trace_queue_dropped_total"
	)
	var m map[string]float64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		m = scrape(t, url, written, held, evicted, queued, dropped)
		settled := m[queued] == 0 && m[written] >= clients*each && m[written] == m[held]+m[evicted]
		if settled || time.Now().After(deadline) {
			break
		}
	}
	if m[dropped] != 0 || m[written] < clients*each || m[held] != maxInMemory || m[evicted] != m[written]-m[held] {
		t.Fatalf("after %d calls: %v; want every call written, %d held and the rest evicted", clients*each, m, maxInMemory)
	}
	// trace_analyze sees the bound too.
	var an struct {
		Tools []store.ToolStats `json:"tools"`
	}
	if err := json.Unmarshal(tracesCall(t, connect(t, url), "trace_analyze", map[string]any{}), &an); err != nil {
		t.Fatal(err)
	}
	var calls int64
	for _, st := range an.Tools {
		calls += st.Calls
	}
	if calls > maxInMemory {
		t.Errorf("trace_analyze counts %d traces, more than traces.maxInMemory %d", calls, maxInMemory)
	}
}

// Item 10 of the abuse list: trace_list, trace_get and trace:// showed
// every client's Mcp-Session-Id, and in auth mode none any caller could
// take over or end another client's session with it. Now client B, who
// reads everything the traces show, finds nothing that works as client
// A's session id: every string it tries in Mcp-Session-Id gets 404, and
// A keeps working. The calls of one client session still share one
// handle, so an operator can group them.
func TestAbuse_TracesDoNotRevealClientSessionIDs(t *testing.T) {
	cfg := config.Default()
	cfg.Traces.FlushIntervalMs = 10
	url, _ := startServer(t, cfg)
	underAttack(t, url, "", func() {
		// A calls a tool nobody else calls here, so that its traces are
		// easy to find among the bystander's.
		a := connect(t, url)
		const aCalls = 3
		for range aCalls {
			tracesCall(t, a, "runtime_info", map[string]any{})
		}
		aHandle := store.ClientSessionHandle(a.ID())

		b := connect(t, url)
		// Everything B can read about the traces, as JSON texts.
		var seen []string
		var traces []store.Trace
		list := func(args map[string]any) {
			data := tracesCall(t, b, "trace_list", args)
			var page store.Page[store.Trace]
			if err := json.Unmarshal(data, &page); err != nil {
				t.Fatal(err)
			}
			seen = append(seen, string(data))
			traces = append(traces, page.Items...)
		}
		waitFor(t, func() bool {
			seen, traces = nil, nil
			list(map[string]any{"tool": "runtime.info"})
			return len(traces) == aCalls
		})
		for _, tr := range traces {
			if tr.ClientSession != aHandle {
				t.Fatalf("A's call traced with client session %q, want its handle %s (one for all its calls)", tr.ClientSession, aHandle)
			}
		}
		list(map[string]any{"limit": 100})
		seen = append(seen, string(tracesCall(t, b, "trace_analyze", map[string]any{})))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for _, tr := range traces {
			seen = append(seen, string(tracesCall(t, b, "trace_get", map[string]any{"traceId": tr.ID})))
			res, err := b.ReadResource(ctx, &mcp.ReadResourceParams{URI: "trace://" + tr.ID})
			if err != nil {
				t.Fatalf("read trace://%s: %v", tr.ID, err)
			}
			for _, c := range res.Contents {
				seen = append(seen, c.Text)
			}
		}

		// Every string in what B read, tried as a session id.
		candidates := make(map[string]bool)
		for _, text := range seen {
			if strings.Contains(text, a.ID()) {
				t.Fatalf("client B read client A's session id in %s", text)
			}
			var doc any
			if err := json.Unmarshal([]byte(text), &doc); err != nil {
				t.Fatalf("not JSON: %s", text)
			}
			tracesStrings(doc, candidates)
		}
		if !candidates[aHandle] {
			t.Fatalf("B did not see A's handle %s; the search below would prove nothing", aHandle)
		}
		for s := range candidates {
			if code := tracesDelete(t, url, s); code != http.StatusNotFound {
				t.Errorf("DELETE with Mcp-Session-Id %q from what the traces show: %d, want 404", s, code)
			}
		}
		tracesCall(t, a, "runtime_info", map[string]any{})
	})
}

// tracesStrings adds every string of a decoded JSON document that could
// be sent as a header value to out.
func tracesStrings(v any, out map[string]bool) {
	switch v := v.(type) {
	case string:
		if v != "" && !strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
			out[v] = true
		}
	case []any:
		for _, e := range v {
			tracesStrings(e, out)
		}
	case map[string]any:
		for k, e := range v {
			tracesStrings(k, out)
			tracesStrings(e, out)
		}
	}
}

// tracesDelete ends the client session sid, as any caller may try, and
// returns the status.
func tracesDelete(t *testing.T, url, sid string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("DELETE: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
