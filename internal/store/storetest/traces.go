package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// traceEpoch is when the suite's traces start; the purge test alone uses
// older ones, so its cutoff never catches another subtest's traces.
func traceEpoch() time.Time { return time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC) }

// purgeCutoff separates the purge test's traces from everyone else's.
func purgeCutoff() time.Time { return time.Date(2002, 1, 1, 0, 0, 0, 0, time.UTC) }

// trace builds an ok trace of tool, started i seconds after traceEpoch.
func trace(tenant, tool string, i int) store.Trace {
	return store.Trace{
		ID: store.NewID(), Tenant: tenant, Tool: tool, ClientSession: "client-1", Status: store.TraceOK,
		DurationMs: float64(i) + 0.5, ArgBytes: int64(10 * i), ResultBytes: int64(100 * i),
		StartedAt: traceEpoch().Add(time.Duration(i) * time.Second),
	}
}

// traceIDs returns the ids of traces, in order.
func traceIDs(traces []store.Trace) []string {
	out := make([]string, len(traces))
	for i, tr := range traces {
		out[i] = tr.ID
	}
	return out
}

// sameTrace compares traces without Tenant, which is not part of a
// trace's visible content; want's client session is the id written, of
// which the store keeps the handle.
func sameTrace(t testing.TB, what string, got, want store.Trace) {
	t.Helper()
	got.Tenant, want.Tenant = "", ""
	want.ClientSession = store.ClientSessionHandle(want.ClientSession)
	equal(t, what, got, want)
}

// walkTraces lists every item q selects.
func walkTraces(t testing.TB, h *harness, tenant string, q store.ListTraces) []store.Trace {
	t.Helper()
	return walkPages(t, q.Limit, func(c string) (store.Page[store.Trace], error) {
		q.Cursor = c
		return h.s.ListTraces(ctx(t), tenant, q)
	}, nil)
}

func testTraces(t *testing.T, h *harness) {
	t.Run("insert then get", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		a, b := trace(tn, "search", 1), trace(tn, "fetch", 2)
		b.Status, b.ErrorCode = store.TraceError, "timeout"
		a.OtelTraceID = "4bf92f3577b34da6a3ce929d0e0e4736" // the OpenTelemetry trace it was part of
		noErr(t, h.s.InsertTraces(ctx(t), []store.Trace{a, b}))
		sameTrace(t, "a", must(h.s.GetTrace(ctx(t), tn, a.ID))(t), a)
		sameTrace(t, "b", must(h.s.GetTrace(ctx(t), tn, b.ID))(t), b)
		for _, id := range []string{store.NewID(), "no-such-trace"} {
			_, err := h.s.GetTrace(ctx(t), tn, id)
			wantIs(t, err, store.ErrNotFound)
		}
		noErr(t, h.s.InsertTraces(ctx(t), nil))
	})

	t.Run("client session ids are kept as handles", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		// Client session ids as the transport makes them, and a handle
		// written again (a store may be given one back).
		const a, b = "q9Vz3kT0cWm1YpL8aB2xEw", "Zm9vYmFyYmF6cXV4cXV1eA"
		written := []store.Trace{trace(tn, "x", 1), trace(tn, "x", 2), trace(tn, "x", 3), trace(tn, "x", 4), trace(tn, "x", 5)}
		for i, cs := range []string{a, a, b, "", store.ClientSessionHandle(b)} {
			written[i].ClientSession = cs
		}
		noErr(t, h.s.InsertTraces(ctx(t), written))
		got := make([]string, len(written))
		for i, tr := range written {
			got[i] = must(h.s.GetTrace(ctx(t), tn, tr.ID))(t).ClientSession
		}
		ha, hb := store.ClientSessionHandle(a), store.ClientSessionHandle(b)
		equal(t, "handles", got, []string{ha, ha, hb, "", hb})
		if ha == hb || !store.IsClientSessionHandle(ha) || strings.Contains(ha, a) || strings.Contains(hb, b) {
			t.Fatalf("handles %q (of %q) and %q (of %q): want two distinct handles that do not contain the ids", ha, a, hb, b)
		}
		for _, tr := range walkTraces(t, h, tn, store.ListTraces{}) {
			if strings.Contains(tr.ClientSession, a) || strings.Contains(tr.ClientSession, b) {
				t.Fatalf("listed trace %s keeps a client session id: %q", tr.ID, tr.ClientSession)
			}
		}
	})

	t.Run("insert refuses malformed traces, whole batches, the same way in both stores", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		bad := map[string]func(*store.Trace){
			"tenant":        func(tr *store.Trace) { tr.Tenant = "" },
			"id":            func(tr *store.Trace) { tr.ID = "" },
			"tool":          func(tr *store.Trace) { tr.Tool = strings.Repeat("t", store.MaxTraceText+1) },
			"clientSession": func(tr *store.Trace) { tr.ClientSession = strings.Repeat("s", store.MaxTraceText+1) },
			"errorCode":     func(tr *store.Trace) { tr.ErrorCode = strings.Repeat("e", store.MaxTraceText+1) },
			"status":        func(tr *store.Trace) { tr.Status = "maybe" },
			"otelTraceId":   func(tr *store.Trace) { tr.OtelTraceID = "4BF92F3577B34DA6A3CE929D0E0E4736" },
		}
		for field, spoil := range bad {
			good, tr := trace(tn, "x", 1), trace(tn, "x", 2)
			spoil(&tr)
			err := h.s.InsertTraces(ctx(t), []store.Trace{good, tr})
			wantField(t, err, "traces[1]."+field)
			_, err = h.s.GetTrace(ctx(t), tn, good.ID)
			wantIs(t, err, store.ErrNotFound) // a refused batch keeps nothing
		}
		atLimit := trace(tn, strings.Repeat("t", store.MaxTraceText), 3)
		noErr(t, h.s.InsertTraces(ctx(t), []store.Trace{atLimit}))
	})

	t.Run("list filters, newest first, in pages", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		var batch []store.Trace
		for i := range 9 {
			tool := "search"
			if i%3 == 0 {
				tool = "fetch"
			}
			tr := trace(tn, tool, i)
			if i%2 == 1 {
				tr.Status, tr.ErrorCode = store.TraceError, "boom"
			}
			batch = append(batch, tr)
		}
		// Two traces started at the same instant: the id breaks the tie.
		twin := trace(tn, "search", 4)
		batch = append(batch, twin)
		noErr(t, h.s.InsertTraces(ctx(t), batch))

		newest := func(keep func(store.Trace) bool) []string {
			var out []store.Trace
			for _, tr := range batch {
				if keep(tr) {
					out = append(out, tr)
				}
			}
			sortTraces(out)
			return traceIDs(out)
		}
		since := traceEpoch().Add(4 * time.Second) // inclusive: the twins are in
		cases := []struct {
			name string
			q    store.ListTraces
			keep func(store.Trace) bool
		}{
			{"all", store.ListTraces{}, func(store.Trace) bool { return true }},
			{"all in pages of 3", store.ListTraces{Limit: 3}, func(store.Trace) bool { return true }},
			{"by tool", store.ListTraces{Tool: "fetch", Limit: 2}, func(tr store.Trace) bool { return tr.Tool == "fetch" }},
			{"by status", store.ListTraces{Status: store.TraceError, Limit: 2}, func(tr store.Trace) bool { return tr.Status == store.TraceError }},
			{"since", store.ListTraces{Since: since, Limit: 2}, func(tr store.Trace) bool { return !tr.StartedAt.Before(since) }},
			{"all filters", store.ListTraces{Tool: "search", Status: store.TraceOK, Since: since}, func(tr store.Trace) bool {
				return tr.Tool == "search" && tr.Status == store.TraceOK && !tr.StartedAt.Before(since)
			}},
			{"unknown tool", store.ListTraces{Tool: "nope"}, func(store.Trace) bool { return false }},
		}
		for _, c := range cases {
			equal(t, c.name, traceIDs(walkTraces(t, h, tn, c.q)), newest(c.keep))
		}
		page := must(h.s.ListTraces(ctx(t), tn, store.ListTraces{Limit: 1}))(t)
		want := batch[8]
		sameTrace(t, "newest trace", page.Items[0], want)

		_, err := h.s.ListTraces(ctx(t), tn, store.ListTraces{Limit: store.MaxListLimit + 1})
		wantField(t, err, "limit")
		_, err = h.s.ListTraces(ctx(t), tn, store.ListTraces{Cursor: store.EncodeCursor("sessions", traceEpoch(), store.NewID(), "")})
		wantField(t, err, "cursor")
	})

	t.Run("analyze: calls, errors, nearest-rank percentiles, top errors", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		var batch []store.Trace
		// "alpha": durations 1..100 in shuffled order, 12 errors over 6 codes.
		codes := []string{"e-b", "e-b", "e-b", "e-a", "e-a", "e-a", "e-c", "e-c", "e-d", "e-e", "e-f", ""}
		for i := range 100 {
			tr := trace(tn, "alpha", i)
			tr.DurationMs = float64((i*37)%100 + 1)
			if i < len(codes) {
				tr.Status, tr.ErrorCode = store.TraceError, codes[i]
			}
			batch = append(batch, tr)
		}
		// "beta": one call, no errors; "gamma" is older than the since filter.
		beta := trace(tn, "beta", 200)
		beta.DurationMs = 7.25
		gamma := trace(tn, "gamma", -100)
		batch = append(batch, beta, gamma)
		noErr(t, h.s.InsertTraces(ctx(t), batch))

		stats := must(h.s.AnalyzeTraces(ctx(t), tn, store.AnalyzeTraces{Since: traceEpoch()}))(t)
		if len(stats) != 2 {
			t.Fatalf("got stats for %d tools, want alpha and beta: %+v", len(stats), stats)
		}
		alpha := stats[0]
		equal(t, "tool", alpha.Tool, "alpha")
		equal(t, "calls", alpha.Calls, int64(100))
		equal(t, "errors", alpha.Errors, int64(12))
		equal(t, "error rate", alpha.ErrorRate, 0.12)
		equal(t, "percentiles", []float64{alpha.P50Ms, alpha.P95Ms, alpha.P99Ms}, []float64{50, 95, 99})
		equal(t, "top errors", alpha.TopErrors, []store.CodeCount{
			{Code: "e-a", Count: 3}, {Code: "e-b", Count: 3}, {Code: "e-c", Count: 2}, {Code: "e-d", Count: 1}, {Code: "e-e", Count: 1},
		})
		b := stats[1]
		equal(t, "beta", b, store.ToolStats{Tool: "beta", Calls: 1, P50Ms: 7.25, P95Ms: 7.25, P99Ms: 7.25, TopErrors: []store.CodeCount{}})

		all := must(h.s.AnalyzeTraces(ctx(t), tn, store.AnalyzeTraces{}))(t)
		equal(t, "tools without since", []string{all[0].Tool, all[1].Tool, all[2].Tool}, []string{"alpha", "beta", "gamma"})
		one := must(h.s.AnalyzeTraces(ctx(t), tn, store.AnalyzeTraces{Tool: "beta"}))(t)
		equal(t, "one tool", one, []store.ToolStats{b})
		none := must(h.s.AnalyzeTraces(ctx(t), tn, store.AnalyzeTraces{Tool: "nope"}))(t)
		equal(t, "unknown tool", len(none), 0)
	})

	t.Run("analyze: small samples", func(t *testing.T) {
		t.Parallel()
		tn := h.tenant()
		var batch []store.Trace
		for i, d := range []float64{40, 10, 30, 20} {
			tr := trace(tn, "four", i)
			tr.DurationMs = d
			batch = append(batch, tr)
		}
		noErr(t, h.s.InsertTraces(ctx(t), batch))
		stats := must(h.s.AnalyzeTraces(ctx(t), tn, store.AnalyzeTraces{}))(t)
		// Nearest rank over 10, 20, 30, 40: ceil(0.5*4)=2nd, ceil(0.95*4)=4th.
		equal(t, "percentiles", []float64{stats[0].P50Ms, stats[0].P95Ms, stats[0].P99Ms}, []float64{20, 40, 40})
	})

	t.Run("purge removes old traces of every tenant", func(t *testing.T) {
		t.Parallel()
		t1, t2 := h.tenant(), h.tenant()
		old := func(tn string, i int) store.Trace {
			tr := trace(tn, "old", i)
			tr.StartedAt = purgeCutoff().Add(-time.Duration(i+1) * time.Hour)
			return tr
		}
		batch := []store.Trace{old(t1, 0), old(t1, 1), old(t2, 2), trace(t1, "new", 1), trace(t2, "new", 2)}
		noErr(t, h.s.InsertTraces(ctx(t), batch))
		n := must(h.s.PurgeTraces(ctx(t), purgeCutoff()))(t)
		if n < 3 {
			t.Fatalf("purge reported %d traces, want at least 3", n)
		}
		for _, tr := range batch[:3] {
			_, err := h.s.GetTrace(ctx(t), tr.Tenant, tr.ID)
			wantIs(t, err, store.ErrNotFound)
		}
		for _, tr := range batch[3:] {
			must(h.s.GetTrace(ctx(t), tr.Tenant, tr.ID))(t)
		}
		equal(t, "t1 left", len(walkTraces(t, h, t1, store.ListTraces{})), 1)
	})
}

// sortTraces sorts traces newest first: (StartedAt, ID) descending.
func sortTraces(traces []store.Trace) {
	slices.SortFunc(traces, func(a, b store.Trace) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
}
