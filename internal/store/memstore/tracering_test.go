package memstore

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// traceModel is what the store must answer, kept the plain way: every
// held trace in the order written.
type traceModel struct {
	limit int
	held  []store.Trace
}

func (m *traceModel) insert(batch []store.Trace) {
	for _, tr := range batch {
		if slices.ContainsFunc(m.held, func(h store.Trace) bool { return h.Tenant == tr.Tenant && h.ID == tr.ID }) {
			continue
		}
		tr.StartedAt = tr.StartedAt.UTC().Truncate(time.Microsecond)
		tr.ClientSession = store.ClientSessionHandle(tr.ClientSession)
		m.held = append(m.held, tr)
		if len(m.held) > m.limit {
			m.held = m.held[1:]
		}
	}
}

func (m *traceModel) purge(cutoff time.Time) int64 {
	n := len(m.held)
	m.held = slices.DeleteFunc(m.held, func(tr store.Trace) bool { return tr.StartedAt.Before(cutoff) })
	return int64(n - len(m.held))
}

// list is ListTraces without pages: newest first, by (startedAt, id).
func (m *traceModel) list(tenant string, q store.ListTraces) []store.Trace {
	var out []store.Trace
	for _, tr := range m.held {
		if tr.Tenant == tenant && (q.Tool == "" || tr.Tool == q.Tool) && (q.Status == "" || tr.Status == q.Status) &&
			!tr.StartedAt.Before(q.Since) {
			out = append(out, tr)
		}
	}
	slices.SortFunc(out, func(a, b store.Trace) int { return byTimeDesc(a.StartedAt, b.StartedAt, a.ID, b.ID) })
	return out
}

// randomTrace draws a trace whose every field may collide with another's:
// two tenants, UUID and other ids, few tools and times (so ties are
// common), a tool name used once, with and without a client session and
// an error code.
func randomTrace(r *rand.Rand, n int) store.Trace {
	tr := store.Trace{
		ID: store.NewID(), Tenant: []string{"a", "b"}[r.IntN(2)], Tool: []string{"echo", "fetch", "search"}[r.IntN(3)],
		Status: store.TraceOK, DurationMs: float64(r.IntN(50)) / 4, ArgBytes: int64(r.IntN(100)), ResultBytes: int64(r.IntN(1000)),
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(r.IntN(40)) * time.Millisecond).Add(time.Duration(r.IntN(3))),
	}
	switch r.IntN(4) {
	case 0:
		tr.ID = fmt.Sprintf("odd-%d", n) // not a UUID
	case 1:
		tr.ID = fmt.Sprintf("%d", r.IntN(20)) // and a retried one now and then
	}
	if r.IntN(10) == 0 {
		tr.Tool = fmt.Sprintf("once-%d", n)
	}
	if r.IntN(2) == 0 {
		tr.ClientSession = fmt.Sprintf("session-%d", r.IntN(5))
	}
	if r.IntN(3) == 0 {
		tr.Status, tr.ErrorCode = store.TraceError, []string{"", "TIMEOUT", "INTERNAL_ERROR"}[r.IntN(3)]
	}
	return tr
}

// The pointer-free ring answers every query as the plain list of held
// traces would, through inserts past the bound, retried ids, purges and
// ties in time (a property test over random histories).
func TestTraceRingMatchesModel(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 7))
		limit := 1 + r.IntN(60)
		s := New(store.Options{MaxTracesInMemory: limit})
		m := &traceModel{limit: limit}
		n := 0
		for step := range 30 {
			if r.IntN(6) == 0 {
				cutoff := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(r.IntN(40)) * time.Millisecond)
				got, err := s.PurgeTraces(ctx, cutoff)
				if want := m.purge(cutoff); err != nil || got != want {
					t.Fatalf("seed %d step %d: purged %d (%v), want %d", seed, step, got, err, want)
				}
			}
			batch := make([]store.Trace, r.IntN(12))
			for i := range batch {
				batch[i] = randomTrace(r, n)
				n++
			}
			if err := s.InsertTraces(ctx, batch); err != nil {
				t.Fatal(err)
			}
			m.insert(batch)
			checkTraceRing(t, s, m, fmt.Sprintf("seed %d step %d", seed, step), r)
		}
	}
}

func checkTraceRing(t *testing.T, s *Store, m *traceModel, at string, r *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	if st := s.TraceStats(); st.Held != len(m.held) {
		t.Fatalf("%s: %d held, want %d", at, st.Held, len(m.held))
	}
	for _, want := range m.held {
		got, err := s.GetTrace(ctx, want.Tenant, want.ID)
		if err != nil || got != want {
			t.Fatalf("%s: GetTrace(%s) = %+v (%v), want %+v", at, want.ID, got, err, want)
		}
	}
	// The interned names are those of held traces, no more.
	names := map[string]bool{}
	for _, tr := range m.held {
		names[tr.Tool], names[tr.ErrorCode] = true, true
	}
	delete(names, "")
	if got := len(s.traceRing.names.byName); got != len(names) {
		t.Fatalf("%s: %d names interned, want %d", at, got, len(names))
	}
	q := store.ListTraces{Limit: 1 + r.IntN(7)}
	switch r.IntN(4) {
	case 0:
		q.Tool = "fetch"
	case 1:
		q.Status = store.TraceError
	case 2:
		q.Since = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(r.IntN(40))*time.Millisecond + 1)
	}
	for _, tenant := range []string{"a", "b"} {
		var got []store.Trace
		for cursor := ""; ; {
			q.Cursor = cursor
			page, err := s.ListTraces(ctx, tenant, q)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page.Items...)
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if want := m.list(tenant, store.ListTraces{Tool: q.Tool, Status: q.Status, Since: q.Since}); !slices.Equal(got, want) {
			t.Fatalf("%s: ListTraces(%s, %+v) =\n%v\nwant\n%v", at, tenant, q, got, want)
		}
		stats, err := s.AnalyzeTraces(ctx, tenant, store.AnalyzeTraces{})
		if err != nil {
			t.Fatal(err)
		}
		calls := map[string][2]int64{}
		for _, tr := range m.list(tenant, store.ListTraces{}) {
			c := calls[tr.Tool]
			c[0]++
			if tr.Status == store.TraceError {
				c[1]++
			}
			calls[tr.Tool] = c
		}
		if len(stats) != len(calls) || !slices.IsSortedFunc(stats, func(a, b store.ToolStats) int { return cmp.Compare(a.Tool, b.Tool) }) {
			t.Fatalf("%s: AnalyzeTraces(%s) = %+v, want the tools of %v in order", at, tenant, stats, calls)
		}
		for _, st := range stats {
			if c := calls[st.Tool]; st.Calls != c[0] || st.Errors != c[1] {
				t.Fatalf("%s: %s has %d calls, %d errors; want %v", at, st.Tool, st.Calls, st.Errors, c)
			}
		}
	}
}

// Only the form uuid.UUID.String writes is kept as 16 bytes: any other
// spelling would read back differently.
func TestCanonicalUUID(t *testing.T) {
	id := store.NewID()
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{id, true},
		{strings.ToUpper(id), false},
		{"{" + id[:34] + "}", false},
		{strings.ReplaceAll(id, "-", "") + "xxxx", false},
		{"urn:uuid:" + id, false},
		{"odd", false},
	} {
		u, ok := canonicalUUID(tc.id)
		if ok != tc.want || ok && uuid.UUID(u).String() != tc.id {
			t.Errorf("canonicalUUID(%q) = %x, %v; want %v", tc.id, u, ok, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { canonicalUUID(id) }); n != 0 {
		t.Errorf("canonicalUUID allocates %v times", n)
	}
}
