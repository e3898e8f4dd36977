package memstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// maxToolLen bounds a tool-name filter, in bytes.
const maxToolLen = 128

// InsertTraces stores a batch: all of it, or nothing if a trace breaks
// store.CheckTrace. A trace whose (tenant, id) is already stored is skipped,
// so a retried batch does not fail on the part that got through. Once
// Options.TraceLimit traces are held, each new one drops the earliest
// written, of whichever tenant (TraceStats counts them).
func (s *Store) InsertTraces(ctx context.Context, batch []store.Trace) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// The handles are computed before taking the lock: a hash each.
	handles := make([]string, len(batch))
	for i, tr := range batch {
		if err := store.CheckTrace(fmt.Sprintf("traces[%d]", i), tr); err != nil {
			return err
		}
		handles[i] = store.ClientSessionHandle(tr.ClientSession)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, tr := range batch {
		td := s.write(tr.Tenant)
		if td.traces[tr.ID] != nil {
			continue
		}
		// Kept as PostgreSQL's timestamptz would return it.
		tr.StartedAt = tr.StartedAt.UTC().Truncate(time.Microsecond)
		tr.ClientSession = handles[i]
		td.traces[tr.ID] = &tr
		if old := s.traceLog.push(&tr, s.opts.TraceLimit()); old != nil {
			delete(s.tenants[old.Tenant].traces, old.ID)
			s.traceLog.evicted++
		}
	}
	return nil
}

// traceLog holds every stored trace, of all tenants, in the order they
// were written, so that the bound on traces held (Options.TraceLimit)
// drops the earliest in O(1). It holds exactly the traces the tenants'
// maps hold; the caller holds s.mu.
type traceLog struct {
	buf     []*store.Trace // in order from head, circularly once full
	head    int
	evicted int64
}

// push appends tr; when limit traces are held it returns the earliest,
// which it no longer holds and the caller must delete.
func (l *traceLog) push(tr *store.Trace, limit int) (dropped *store.Trace) {
	if len(l.buf) < limit {
		// Growing: head stays 0 (the log only wraps once full).
		l.buf = append(l.buf, tr)
		return nil
	}
	dropped = l.buf[l.head]
	l.buf[l.head] = tr
	l.head = (l.head + 1) % len(l.buf)
	return dropped
}

// removeIf drops the traces gone reports, keeping the others in order,
// and returns them. A purge that finds nothing to remove, the usual
// case, allocates nothing.
func (l *traceLog) removeIf(gone func(*store.Trace) bool) []*store.Trace {
	if !slices.ContainsFunc(l.buf, gone) {
		return nil
	}
	var removed []*store.Trace
	kept := make([]*store.Trace, 0, len(l.buf))
	for i := range l.buf {
		tr := l.buf[(l.head+i)%len(l.buf)]
		if gone(tr) {
			removed = append(removed, tr)
		} else {
			kept = append(kept, tr)
		}
	}
	l.buf, l.head = kept, 0
	return removed
}

// TraceStats describes the traces the store holds.
type TraceStats struct {
	Held    int   // traces held now, of all tenants
	Evicted int64 // traces dropped for room since New (Options.TraceLimit)
}

// TraceStats returns the current figures.
func (s *Store) TraceStats() TraceStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return TraceStats{Held: len(s.traceLog.buf), Evicted: s.traceLog.evicted}
}

// GetTrace returns one trace.
func (s *Store) GetTrace(ctx context.Context, tenant, id string) (store.Trace, error) {
	if err := begin(ctx, tenant); err != nil {
		return store.Trace{}, err
	}
	if err := store.CheckName("traceId", id, store.MaxIDLen); err != nil {
		return store.Trace{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if td := s.read(tenant); td != nil {
		if tr := td.traces[id]; tr != nil {
			return *tr, nil
		}
	}
	return store.Trace{}, store.NotFoundf("trace %s", id)
}

// checkTraceFilter validates the tool and status filters, which may be
// empty.
func checkTraceFilter(tool, status string) error {
	if err := checkOptionalName("tool", tool, maxToolLen); err != nil {
		return err
	}
	switch status {
	case "", store.TraceOK, store.TraceError:
		return nil
	}
	return store.Invalid("status", "must be %q or %q, got %q", store.TraceOK, store.TraceError, status)
}

// traces returns tenant's traces of tool ("" for any) started at or
// after since; the caller holds s.mu.
func (s *Store) traces(tenant, tool string, since time.Time, keep func(*store.Trace) bool) []store.Trace {
	td := s.read(tenant)
	if td == nil {
		return nil
	}
	var out []store.Trace
	for _, tr := range td.traces {
		if (tool == "" || tr.Tool == tool) && !tr.StartedAt.Before(since) && keep(tr) {
			out = append(out, *tr)
		}
	}
	return out
}

// ListTraces lists traces newest first, by (startedAt, id).
func (s *Store) ListTraces(ctx context.Context, tenant string, q store.ListTraces) (store.Page[store.Trace], error) {
	var none store.Page[store.Trace]
	if err := begin(ctx, tenant); err != nil {
		return none, err
	}
	if err := checkTraceFilter(q.Tool, q.Status); err != nil {
		return none, err
	}
	limit, err := store.CheckLimit(q.Limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return none, err
	}
	var afterAt time.Time
	var afterID string
	if q.Cursor != "" {
		if afterAt, afterID, _, err = store.DecodeCursor("traces", q.Cursor); err != nil {
			return none, err
		}
	}

	s.mu.RLock()
	defer s.mu.RUnlock()
	out := s.traces(tenant, q.Tool, q.Since, func(tr *store.Trace) bool {
		return (q.Status == "" || tr.Status == q.Status) &&
			(q.Cursor == "" || byTimeDesc(afterAt, tr.StartedAt, afterID, tr.ID) < 0)
	})
	slices.SortFunc(out, func(a, b store.Trace) int { return byTimeDesc(a.StartedAt, b.StartedAt, a.ID, b.ID) })
	return paginate(out, limit, func(tr store.Trace) string {
		return store.EncodeCursor("traces", tr.StartedAt, tr.ID, "")
	}), nil
}

// AnalyzeTraces summarizes the selected traces per tool, in tool order.
func (s *Store) AnalyzeTraces(ctx context.Context, tenant string, q store.AnalyzeTraces) ([]store.ToolStats, error) {
	if err := begin(ctx, tenant); err != nil {
		return nil, err
	}
	if err := checkTraceFilter(q.Tool, ""); err != nil {
		return nil, err
	}
	s.mu.RLock()
	selected := s.traces(tenant, q.Tool, q.Since, func(*store.Trace) bool { return true })
	s.mu.RUnlock()

	byTool := make(map[string][]store.Trace)
	for _, tr := range selected {
		byTool[tr.Tool] = append(byTool[tr.Tool], tr)
	}
	out := make([]store.ToolStats, 0, len(byTool))
	for tool, trs := range byTool {
		out = append(out, toolStats(tool, trs))
	}
	slices.SortFunc(out, func(a, b store.ToolStats) int { return cmp.Compare(a.Tool, b.Tool) })
	return out, nil
}

// toolStats summarizes the traces of one tool.
func toolStats(tool string, trs []store.Trace) store.ToolStats {
	st := store.ToolStats{Tool: tool, Calls: int64(len(trs))}
	durations := make([]float64, len(trs))
	codes := make(map[string]int64)
	for i, tr := range trs {
		durations[i] = tr.DurationMs
		if tr.Status == store.TraceError {
			st.Errors++
			// An error without a code has nothing to rank.
			if tr.ErrorCode != "" {
				codes[tr.ErrorCode]++
			}
		}
	}
	st.ErrorRate = float64(st.Errors) / float64(st.Calls)
	slices.Sort(durations)
	st.P50Ms = percentileDisc(durations, 0.50)
	st.P95Ms = percentileDisc(durations, 0.95)
	st.P99Ms = percentileDisc(durations, 0.99)

	st.TopErrors = make([]store.CodeCount, 0, len(codes))
	for code, n := range codes {
		st.TopErrors = append(st.TopErrors, store.CodeCount{Code: code, Count: n})
	}
	slices.SortFunc(st.TopErrors, func(a, b store.CodeCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Code, b.Code)
	})
	if len(st.TopErrors) > store.TopErrorCodes {
		st.TopErrors = st.TopErrors[:store.TopErrorCodes]
	}
	return st
}

// percentileDisc is PostgreSQL's percentile_disc over sorted values: the
// value at 1-based row ceil(p·n), computed in float64 as PostgreSQL does
// so that both stores pick the same row.
func percentileDisc(sorted []float64, p float64) float64 {
	row := int(math.Ceil(p * float64(len(sorted))))
	row = max(1, min(row, len(sorted)))
	return sorted[row-1]
}

// PurgeTraces deletes traces of every tenant started before cutoff.
func (s *Store) PurgeTraces(ctx context.Context, cutoff time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	purged := s.traceLog.removeIf(func(tr *store.Trace) bool { return tr.StartedAt.Before(cutoff) })
	for _, tr := range purged {
		delete(s.tenants[tr.Tenant].traces, tr.ID)
	}
	return int64(len(purged)), nil
}
