package traces

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/memstore"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// The Recorder over the real in-memory store: traces land as recorded,
// per tenant; one the store refuses costs only itself; retention purges
// the old ones.
func TestWithMemstore(t *testing.T) {
	t.Parallel()
	st := memstore.New(store.Options{})
	defer st.Close()
	now := time.Now().UTC().Truncate(time.Microsecond)
	r := start(t, st, Options{
		BatchSize:     10,
		FlushInterval: 10 * time.Millisecond,
		PurgeInterval: time.Second,
		Retention:     7 * 24 * time.Hour,
		Now:           func() time.Time { return now },
	})

	fresh := store.Trace{Tenant: "acme", Tool: "memory.store", ClientSession: "cs1", Status: store.TraceError,
		ErrorCode: "NOT_FOUND", DurationMs: 12.5, ArgBytes: 10, ResultBytes: 20}
	old := store.Trace{ID: store.NewID(), Tenant: "acme", Tool: "memory.get", Status: store.TraceOK,
		StartedAt: now.Add(-8 * 24 * time.Hour)}
	other := store.Trace{ID: store.NewID(), Tenant: "globex", Tool: "memory.get", Status: store.TraceOK}
	invalid := store.Trace{Tool: "memory.get", Status: store.TraceOK} // no tenant
	for _, tr := range []store.Trace{fresh, old, invalid, other} {
		if !r.Record(tr) {
			t.Fatal("Record dropped a trace")
		}
	}

	ctx := context.Background()
	testutil.Eventually(t, testutil.Wait, "writes and the first purge", func() bool {
		s := r.Stats()
		return s.Written == 3 && s.Purged == 1
	})
	if s := r.Stats(); s.Rejected != 1 {
		t.Errorf("stats = %+v, want the tenant-less trace rejected", s)
	}
	if _, err := st.GetTrace(ctx, "acme", old.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTrace(old) = %v, want ErrNotFound after the purge", err)
	}
	if _, err := st.GetTrace(ctx, "acme", other.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTrace(globex's trace as acme) = %v, want ErrNotFound", err)
	}
	if got, err := st.GetTrace(ctx, "globex", other.ID); err != nil || got.Tool != other.Tool {
		t.Errorf("GetTrace(globex) = %+v, %v", got, err)
	}

	page, err := st.ListTraces(ctx, "acme", store.ListTraces{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 {
		t.Fatalf("acme has %d traces, want only the fresh one: %+v", len(page.Items), page.Items)
	}
	got := page.Items[0]
	want := fresh
	want.ID, want.StartedAt = got.ID, now
	want.Tenant = got.Tenant // not returned by every store; scoped by the query
	want.ClientSession = store.ClientSessionHandle(fresh.ClientSession)
	if got.ID == "" || got != want {
		t.Errorf("stored %+v, want %+v", got, want)
	}

	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, r.Stats())
}
