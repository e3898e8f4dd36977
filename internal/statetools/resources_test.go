package statetools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

func (e *env) read(t *testing.T, uri string) (protocol.ResourceContents, error) {
	t.Helper()
	res, err := e.request(context.Background(), t, protocol.MethodResourcesRead, fmt.Sprintf(`{"uri":%q}`, uri))
	if err != nil {
		return protocol.ResourceContents{}, err
	}
	rr := res.(*protocol.ReadResourceResult)
	if len(rr.Contents) != 1 {
		t.Fatalf("%s: %d contents", uri, len(rr.Contents))
	}
	return rr.Contents[0], nil
}

// Every entity reads back as JSON through its URI; a missing or malformed
// one is -32002 (resource not found).
func TestResourcesRead(t *testing.T) {
	e := newEnv(t, nil)
	e.ok(t, "memory_store", `{"namespace":"team/a","key":"notes/today","value":{"x":1}}`, nil)
	var s store.Session
	e.ok(t, "session_create", `{"task":"t","initiator":"lead"}`, &s)
	e.ok(t, "agent_register", `{"agentId":"rev","description":"d"}`, nil)
	tr := store.Trace{ID: store.NewID(), Tenant: "default", Tool: "memory.store", Status: store.TraceOK, DurationMs: 1.5, StartedAt: store.Now()}
	if err := e.backend.InsertTraces(context.Background(), []store.Trace{tr}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ uri, want string }{
		{memoryURI("team/a", "notes/today"), `"x":1`},
		{"session://" + s.ID, `"initiator":"lead"`},
		{"agent://rev", `"description":"d"`},
		{"trace://" + tr.ID, `"tool":"memory.store"`},
	} {
		c, err := e.read(t, tc.uri)
		if err != nil {
			t.Errorf("read %s: %v", tc.uri, err)
			continue
		}
		if c.MimeType != "application/json" || !strings.Contains(c.Text, tc.want) || !json.Valid([]byte(c.Text)) {
			t.Errorf("read %s: %+v, want JSON containing %s", tc.uri, c, tc.want)
		}
	}
	for _, uri := range []string{"memory://default/missing", "session://nope", "agent://nope", "trace://nope", "agent://bad%07id"} {
		_, err := e.read(t, uri)
		perr, ok := err.(*protocol.Error)
		if !ok || perr.Code != protocol.CodeResourceNotFound {
			t.Errorf("read %s: %v, want resource not found", uri, err)
		}
	}
	var b []byte
	for params := `{}`; ; {
		res, err := e.request(context.Background(), t, protocol.MethodResourcesTemplatesList, params)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := json.Marshal(res)
		b = append(b, page...)
		next := res.(*protocol.ListResourceTemplatesResult).NextCursor
		if next == "" {
			break
		}
		params = fmt.Sprintf(`{"cursor":%q}`, next)
	}
	for _, tmpl := range []string{"memory://{namespace}/{key}", "session://{id}", "agent://{id}", "trace://{id}"} {
		if !strings.Contains(string(b), tmpl) {
			t.Errorf("template %s not listed in %s", tmpl, b)
		}
	}
}

// resources/list is most recently updated first across kinds, paginated,
// each entity exactly once — also when entities change between pages.
func TestResourcesListRecentFirst(t *testing.T) {
	e := newEnv(t, nil) // page size 3
	var want []string
	for i := range 4 {
		key := fmt.Sprintf("k%d", i)
		e.ok(t, "memory_store", fmt.Sprintf(`{"key":%q,"value":%d}`, key, i), nil)
		want = append(want, memoryURI("default", key))
		time.Sleep(2 * time.Millisecond)
		if i == 1 {
			var s store.Session
			e.ok(t, "session_create", `{"task":"t","initiator":"lead"}`, &s)
			want = append(want, "session://"+s.ID)
			time.Sleep(2 * time.Millisecond)
			e.ok(t, "agent_register", `{"agentId":"rev","description":"d"}`, nil)
			want = append(want, "agent://rev")
			time.Sleep(2 * time.Millisecond)
		}
	}
	var got []string
	params := `{}`
	for page := 0; ; page++ {
		res, err := e.request(context.Background(), t, protocol.MethodResourcesList, params)
		if err != nil {
			t.Fatal(err)
		}
		lr := res.(*protocol.ListResourcesResult)
		if page > 10 {
			t.Fatalf("pagination does not end: %v", got)
		}
		if len(lr.Resources) > 3 {
			t.Fatalf("page of %d, limit 3", len(lr.Resources))
		}
		for _, r := range lr.Resources {
			got = append(got, r.URI)
		}
		if lr.NextCursor == "" {
			break
		}
		if page == 0 {
			// A write between pages moves an entry to the front; the
			// listing goes on from where it was without repeating.
			e.ok(t, "memory_store", `{"key":"k3","value":"again"}`, nil)
		}
		params = fmt.Sprintf(`{"cursor":%q}`, lr.NextCursor)
	}
	// Newest first: reverse of creation order.
	for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
		want[i], want[j] = want[j], want[i]
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("listed\n  %v\nwant\n  %v", got, want)
	}
	if _, err := e.request(context.Background(), t, protocol.MethodResourcesList, `{"cursor":"d:%%%"}`); err == nil {
		t.Error("a forged cursor was accepted")
	}
}

// The lister takes back only cursors it issued; one of another listing,
// or one with no position, is -32602 rather than a silent first page.
func TestResourcesListCursors(t *testing.T) {
	e := newEnv(t, nil)
	e.ok(t, "memory_store", `{"key":"k","value":1}`, nil)
	b64 := func(s string) string { return "d:" + base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, cursor string
		ok           bool
	}{
		{"the lister's first page", "d:", true},
		{"a position", b64(`{"m":{"t":"2025-01-01T00:00:00Z","i":"x"}}`), true},
		{"not base64", "d:%%%", false},
		{"not JSON", b64(`{"m":`), false},
		{"no position", b64(`{}`), false},
		{"another listing's", "d:" + store.EncodeCursor("memory", time.Now(), "ns", "k"), false},
		{"another listing's, time only", "d:" + store.EncodeCursor("traces", time.Now(), "", ""), false},
		{"no id", b64(`{"m":{"t":"2025-01-01T00:00:00Z","i":""}}`), false},
		{"no time", b64(`{"s":{"i":"x"}}`), false},
		{"trailing data", b64(`{"a":{"t":"2025-01-01T00:00:00Z","i":"x"}}{}`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.request(context.Background(), t, protocol.MethodResourcesList, fmt.Sprintf(`{"cursor":%q}`, tc.cursor))
			perr, isPerr := err.(*protocol.Error)
			switch {
			case tc.ok && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.ok && (!isPerr || perr.Code != protocol.CodeInvalidParams):
				t.Errorf("got %v, want -32602", err)
			}
		})
	}
}

func TestTraceTools(t *testing.T) {
	e := newEnv(t, nil)
	now := store.Now()
	var batch []store.Trace
	for i := 1; i <= 100; i++ {
		tr := store.Trace{ID: store.NewID(), Tenant: "default", Tool: "memory.store", Status: store.TraceOK,
			DurationMs: float64(i), StartedAt: now.Add(time.Duration(i-100) * time.Second)}
		if i%10 == 0 {
			tr.Status, tr.ErrorCode = store.TraceError, "CONFLICT"
		}
		batch = append(batch, tr)
	}
	if err := e.backend.InsertTraces(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	var page store.Page[store.Trace]
	e.ok(t, "trace_list", `{"status":"error","limit":5}`, &page)
	if len(page.Items) != 5 || page.Items[0].ID != batch[99].ID || page.NextCursor == "" {
		t.Errorf("trace_list: %+v", page)
	}
	var one store.Trace
	e.ok(t, "trace_get", fmt.Sprintf(`{"traceId":%q}`, batch[0].ID), &one)
	if one.DurationMs != 1 {
		t.Errorf("trace_get: %+v", one)
	}
	var an struct {
		Tools []store.ToolStats `json:"tools"`
	}
	e.ok(t, "trace_analyze", `{"tool":"memory.store"}`, &an)
	if len(an.Tools) != 1 {
		t.Fatalf("trace_analyze: %+v", an)
	}
	st := an.Tools[0]
	if st.Calls != 100 || st.ErrorRate != 0.1 || st.P50Ms != 50 || st.P95Ms != 95 || st.P99Ms != 99 ||
		len(st.TopErrors) != 1 || st.TopErrors[0].Code != "CONFLICT" {
		t.Errorf("trace_analyze: %+v", st)
	}
	e.fails(t, "INVALID_INPUT", "trace_list", `{"since":"yesterday"}`)
}

// trace_analyze says whether its figures are over sampled traces, and
// estimates all calls when successful ones were sampled: 10 failed and
// 20 successful traces at a rate of 0.2 are 10 failed of about 110 calls.
func TestTraceAnalyzeSampled(t *testing.T) {
	rate := func(r float64) *float64 { return &r }
	type tool struct {
		store.ToolStats
		EstimatedCalls     *int64   `json:"estimatedCalls"`
		EstimatedErrorRate *float64 `json:"estimatedErrorRate"`
	}
	tests := []struct {
		name      string
		rate      *float64
		wantRate  float64
		note      bool
		estimated int64 // 0: no estimates
	}{
		{"every call traced", nil, 1, false, 0},
		{"rate 1", rate(1), 1, false, 0},
		{"a fifth of the successes", rate(0.2), 0.2, true, 110},
		{"failed calls only", rate(0), 0, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvOpts(t, nil, Options{ParticipantLimit: 3, TraceSampleRate: tt.rate})
			var batch []store.Trace
			for i := range 30 {
				tr := store.Trace{ID: store.NewID(), Tenant: "default", Tool: "memory.store", Status: store.TraceOK, DurationMs: float64(i)}
				if i < 10 {
					tr.Status, tr.ErrorCode = store.TraceError, "CONFLICT"
				}
				batch = append(batch, tr)
			}
			if err := e.backend.InsertTraces(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
			var an struct {
				Tools      []tool   `json:"tools"`
				SampleRate *float64 `json:"sampleRate"`
				Note       string   `json:"note"`
			}
			e.ok(t, "trace_analyze", `{}`, &an)
			if len(an.Tools) != 1 || an.Tools[0].Calls != 30 || an.Tools[0].Errors != 10 {
				t.Fatalf("trace_analyze: %+v", an)
			}
			if an.SampleRate == nil || *an.SampleRate != tt.wantRate || (an.Note != "") != tt.note {
				t.Errorf("sampleRate %v, note %q; want %v and a note: %v", an.SampleRate, an.Note, tt.wantRate, tt.note)
			}
			got := an.Tools[0]
			switch {
			case tt.estimated == 0 && (got.EstimatedCalls != nil || got.EstimatedErrorRate != nil):
				t.Errorf("estimates in %+v; want none", got)
			case tt.estimated != 0 && (got.EstimatedCalls == nil || *got.EstimatedCalls != tt.estimated ||
				got.EstimatedErrorRate == nil || *got.EstimatedErrorRate != 10/float64(tt.estimated)):
				t.Errorf("estimates %+v; want %d calls, error rate %v", got, tt.estimated, 10/float64(tt.estimated))
			}
		})
	}
}
