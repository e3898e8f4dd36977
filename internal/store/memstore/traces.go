package memstore

import (
	"bytes"
	"cmp"
	"context"
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
// written, of whichever tenant (TraceStats counts them). Traces are held
// as pointer-free records (tracering.go).
func (s *Store) InsertTraces(ctx context.Context, batch []store.Trace) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := store.CheckTraces(batch); err != nil {
		return err
	}
	// The handles are computed before taking the lock: a hash each.
	handles := make([]string, len(batch))
	for i, tr := range batch {
		handles[i] = store.ClientSessionHandle(tr.ClientSession)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &s.traceRing
	for i := range batch {
		tr := &batch[i]
		td := s.write(tr.Tenant)
		if _, dup := td.traces.find(g.recs, tr.ID); dup {
			continue
		}
		tr.ClientSession = handles[i]
		rec, oddID := g.encode(tr, td.idx)
		slot := s.traceSlot()
		g.recs[slot] = rec
		if oddID != "" {
			if g.oddIDs == nil {
				g.oddIDs = make(map[int32]string)
			}
			g.oddIDs[slot] = oddID
		}
		td.traces.set(g.recs, oddID, slot)
	}
	return nil
}

// traceSlot returns the slot for a new trace: a new one while fewer than
// the limit are held, else the earliest written, whose trace it drops.
func (s *Store) traceSlot() int32 {
	g := &s.traceRing
	if limit := s.opts.TraceLimit(); len(g.recs) < limit {
		// Growing: head stays 0 (the ring only wraps once full).
		if len(g.recs) == cap(g.recs) {
			// Doubling, but never past the limit: append's growth would
			// leave the full ring with spare capacity it never uses.
			grown := make([]traceRec, len(g.recs), min(max(2*cap(g.recs), 256), limit))
			copy(grown, g.recs)
			g.recs = grown
		}
		g.recs = append(g.recs, traceRec{})
		return int32(len(g.recs) - 1)
	}
	slot := int32(g.head)
	s.tenantList[g.recs[slot].tenant].traces.remove(g.recs, g.oddIDs[slot], slot)
	g.release(slot)
	g.evicted++
	g.head = (g.head + 1) % len(g.recs)
	return slot
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
	return TraceStats{Held: len(s.traceRing.recs), Evicted: s.traceRing.evicted}
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
		if slot, ok := td.traces.find(s.traceRing.recs, id); ok {
			return s.traceRing.decode(slot, tenant), nil
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

// traceSlots returns the slots of tenant's traces of tool ("" for any)
// started at or after since that keep accepts; the caller holds s.mu.
func (s *Store) traceSlots(tenant, tool string, since time.Time, keep func(int32, *traceRec) bool) []int32 {
	td := s.read(tenant)
	if td == nil {
		return nil
	}
	g := &s.traceRing
	var toolID uint32
	if tool != "" {
		var ok bool
		if toolID, ok = g.names.lookup(tool); !ok {
			return nil
		}
	}
	sinceMicro := int64(math.MinInt64)
	if !since.IsZero() {
		// A trace at since counts; one a nanosecond before does not.
		sinceMicro = since.UnixMicro()
		if time.UnixMicro(sinceMicro).Before(since) {
			sinceMicro++
		}
	}
	var out []int32
	for i := range g.recs {
		r := &g.recs[i]
		if r.tenant == td.idx && (tool == "" || r.tool == toolID) && r.started >= sinceMicro && keep(int32(i), r) {
			out = append(out, int32(i))
		}
	}
	return out
}

// compareTraces orders slots a and b newest first, by (startedAt, id).
func (g *traceRing) compareTraces(a, b int32) int {
	ra, rb := &g.recs[a], &g.recs[b]
	if c := cmp.Compare(rb.started, ra.started); c != 0 {
		return c
	}
	if ra.flags&rb.flags&flagUUID != 0 {
		// The canonical form's hex digits order as the bytes do.
		return bytes.Compare(rb.id[:], ra.id[:])
	}
	return cmp.Compare(g.id(b), g.id(a))
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
	wantError := q.Status == store.TraceError

	s.mu.RLock()
	defer s.mu.RUnlock()
	g := &s.traceRing
	slots := s.traceSlots(tenant, q.Tool, q.Since, func(slot int32, r *traceRec) bool {
		if q.Status != "" && (r.flags&flagError != 0) != wantError {
			return false
		}
		if q.Cursor == "" {
			return true
		}
		at := time.UnixMicro(r.started)
		if c := afterAt.Compare(at); c != 0 {
			return c > 0
		}
		return cmp.Compare(g.id(slot), afterID) < 0
	})
	slices.SortFunc(slots, g.compareTraces)
	page := paginate(slots, limit, func(slot int32) string {
		return store.EncodeCursor("traces", time.UnixMicro(g.recs[slot].started).UTC(), g.id(slot), "")
	})
	out := store.Page[store.Trace]{Items: make([]store.Trace, len(page.Items)), NextCursor: page.NextCursor}
	for i, slot := range page.Items {
		out.Items[i] = g.decode(slot, tenant)
	}
	return out, nil
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
	defer s.mu.RUnlock()
	g := &s.traceRing
	byTool := make(map[uint32][]*traceRec)
	for _, slot := range s.traceSlots(tenant, q.Tool, q.Since, func(int32, *traceRec) bool { return true }) {
		r := &g.recs[slot]
		byTool[r.tool] = append(byTool[r.tool], r)
	}
	out := make([]store.ToolStats, 0, len(byTool))
	for tool, recs := range byTool {
		out = append(out, toolStats(g.names.name(tool), recs, &g.names))
	}
	slices.SortFunc(out, func(a, b store.ToolStats) int { return cmp.Compare(a.Tool, b.Tool) })
	return out, nil
}

// toolStats summarizes the traces of one tool.
func toolStats(tool string, recs []*traceRec, names *interner) store.ToolStats {
	st := store.ToolStats{Tool: tool, Calls: int64(len(recs))}
	durations := make([]float64, len(recs))
	codes := make(map[string]int64)
	for i, r := range recs {
		durations[i] = r.duration
		if r.flags&flagError != 0 {
			st.Errors++
			// An error without a code has nothing to rank.
			if r.code != 0 {
				codes[names.name(r.code)]++
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

// PurgeTraces deletes traces of every tenant started before cutoff. The
// ring is rebuilt with the rest in the order they were written.
func (s *Store) PurgeTraces(ctx context.Context, cutoff time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &s.traceRing
	gone := func(r *traceRec) bool { return time.UnixMicro(r.started).Before(cutoff) }
	// A purge that finds nothing to remove, the usual case, allocates
	// nothing.
	if !slices.ContainsFunc(g.recs, func(r traceRec) bool { return gone(&r) }) {
		return 0, nil
	}
	old, oldOdd := g.recs, g.oddIDs
	kept := make([]traceRec, 0, len(old))
	g.oddIDs = nil
	var purged int64
	for i := range old {
		slot := int32((g.head + i) % len(old))
		r := &old[slot]
		if gone(r) {
			g.dropNames(r)
			purged++
			continue
		}
		n := int32(len(kept))
		kept = append(kept, *r)
		if r.flags&flagUUID == 0 {
			if g.oddIDs == nil {
				g.oddIDs = make(map[int32]string)
			}
			g.oddIDs[n] = oldOdd[slot]
		}
	}
	g.recs, g.head = kept, 0
	// Every slot moved: the indexes are made again over the new ring.
	for _, td := range s.tenantList {
		td.traces = traceIndex{}
	}
	for slot := range kept {
		s.tenantList[kept[slot].tenant].traces.set(kept, g.oddIDs[int32(slot)], int32(slot))
	}
	return purged, nil
}
