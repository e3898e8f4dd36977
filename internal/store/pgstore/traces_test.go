package pgstore

import (
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
)

// A trace writer that retries a batch whose first attempt landed (its
// reply lost) must not fail on the duplicates: the fallback inserts only
// what is new.
func TestInsertTracesToleratesARetriedBatch(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := t.Context()
	now := store.Now()
	trace := func(id string) store.Trace {
		return store.Trace{Tenant: "t", ID: id, Tool: "echo", Status: store.TraceOK, DurationMs: 1, StartedAt: now}
	}
	if err := s.InsertTraces(ctx, []store.Trace{trace("a"), trace("b")}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertTraces(ctx, []store.Trace{trace("a"), trace("b"), trace("c")}); err != nil {
		t.Fatalf("retried batch: %v", err)
	}
	page := must(s.ListTraces(ctx, "t", store.ListTraces{Since: now.Add(-time.Minute)}))(t)
	if len(page.Items) != 3 {
		t.Fatalf("got %d traces, want 3", len(page.Items))
	}
}

func TestAnalyzeTracesTopErrorsAreCappedAndOrdered(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := t.Context()
	now := store.Now()
	var batch []store.Trace
	add := func(code string, n int) {
		for range n {
			batch = append(batch, store.Trace{Tenant: "t", ID: store.NewID(), Tool: "x", Status: store.TraceError,
				ErrorCode: code, DurationMs: float64(len(batch) + 1), StartedAt: now})
		}
	}
	add("e-seven", 7)
	add("b-three", 3)
	add("a-three", 3)
	add("one", 1)
	add("two", 2)
	add("z-sixth-code", 1)
	if err := s.InsertTraces(ctx, batch); err != nil {
		t.Fatal(err)
	}
	stats := must(s.AnalyzeTraces(ctx, "t", store.AnalyzeTraces{}))(t)
	if len(stats) != 1 {
		t.Fatalf("got %d tools, want 1", len(stats))
	}
	got := stats[0].TopErrors
	want := []store.CodeCount{{Code: "e-seven", Count: 7}, {Code: "a-three", Count: 3}, {Code: "b-three", Count: 3}, {Code: "two", Count: 2}, {Code: "one", Count: 1}}
	if len(got) != len(want) {
		t.Fatalf("top errors %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("top errors %v, want %v", got, want)
		}
	}
	// 17 calls with durations 1..17: nearest rank p50 = 9, p95 = 17, p99 = 17.
	if st := stats[0]; st.Calls != 17 || st.Errors != 17 || st.P50Ms != 9 || st.P95Ms != 17 || st.P99Ms != 17 {
		t.Fatalf("stats %+v", st)
	}
}

// Migration 00004: rows written with raw client session ids are
// converted to the handle store.ClientSessionHandle computes, and an
// older replica still inserting raw ids during a rolling upgrade has
// them converted on the way in; handles and empty values stay as they
// are.
func TestMigrationReplacesClientSessionIDs(t *testing.T) {
	t.Parallel()
	pool := newPool(t, pgtest.NewDatabase(t))
	ctx := t.Context()
	provider := newProvider(t, pool)
	if _, err := provider.UpTo(ctx, 3); err != nil {
		t.Fatalf("up to 3: %v", err)
	}
	const raw, raw2 = "q9Vz3kT0cWm1YpL8aB2xEw", "AAAAAAAAAAAAAAAAAAAAAA"
	handle := store.ClientSessionHandle(raw)
	insert := func(id, session string) {
		t.Helper()
		// What a replica of the previous version writes.
		_, err := pool.Exec(ctx, `INSERT INTO traces (tenant, id, tool, client_session, status, duration_ms, arg_bytes, result_bytes, started_at)
			VALUES ('t', $1, 'x', $2, 'ok', 1, 0, 0, now())`, id, session)
		if err != nil {
			t.Fatalf("insert %s: %v", id, err)
		}
	}
	insert("old-raw", raw)
	insert("old-empty", "")
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	insert("during-upgrade", raw)
	insert("other-session", raw2)
	insert("handle", handle)
	want := map[string]string{
		"old-raw": handle, "old-empty": "", "during-upgrade": handle,
		"other-session": store.ClientSessionHandle(raw2), "handle": handle,
	}
	s := must(newStore(pool, store.Options{}))(t)
	for id, w := range want {
		tr := must(s.GetTrace(ctx, "t", id))(t)
		if tr.ClientSession != w {
			t.Errorf("trace %s: client session %q, want %q", id, tr.ClientSession, w)
		}
	}
	if want["other-session"] == handle || !store.IsClientSessionHandle(handle) {
		t.Errorf("handles %q and %q: want two distinct handles", handle, want["other-session"])
	}
}
