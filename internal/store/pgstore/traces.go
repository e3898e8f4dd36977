package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

const traceCols = `id, tenant, tool, client_session, status, error_code, duration_ms, arg_bytes, result_bytes, started_at, otel_trace_id`

func scanTrace(row pgx.Row) (store.Trace, error) {
	var t store.Trace
	err := row.Scan(&t.ID, &t.Tenant, &t.Tool, &t.ClientSession, &t.Status, &t.ErrorCode,
		&t.DurationMs, &t.ArgBytes, &t.ResultBytes, &t.StartedAt, &t.OtelTraceID)
	t.StartedAt = utc(t.StartedAt)
	return t, err
}

// traceRow is t's values in traceCols order, its client session id
// replaced by its handle: the table never holds the id (migration 00004
// converts older rows and whatever an older replica still writes).
func traceRow(t store.Trace) []any {
	return []any{t.ID, t.Tenant, t.Tool, store.ClientSessionHandle(t.ClientSession), t.Status, t.ErrorCode,
		t.DurationMs, t.ArgBytes, t.ResultBytes, t.StartedAt, t.OtelTraceID}
}

// InsertTraces writes a batch with COPY: one round trip however large.
// A batch is all or nothing.
func (s *Store) InsertTraces(ctx context.Context, batch []store.Trace) error {
	if len(batch) == 0 {
		return nil
	}
	if err := store.CheckTraces(batch); err != nil {
		return err
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"traces"}, strings.Split(traceCols, ", "),
		pgx.CopyFromSlice(len(batch), func(i int) ([]any, error) { return traceRow(batch[i]), nil }))
	if isUniqueViolation(err) {
		// A writer retrying a batch whose first attempt did land (the
		// reply was lost) must not fail forever: insert what is new.
		err = s.insertTracesSkippingDuplicates(ctx, batch)
	}
	if err != nil {
		return fmt.Errorf("insert %d traces: %w", len(batch), classify(err))
	}
	return nil
}

func (s *Store) insertTracesSkippingDuplicates(ctx context.Context, batch []store.Trace) error {
	var b pgx.Batch
	for _, t := range batch {
		b.Queue(`INSERT INTO traces (`+traceCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (tenant, id) DO NOTHING`, traceRow(t)...)
	}
	// A batch that is not in a transaction runs in an implicit one, so
	// this is all or nothing too.
	return s.pool.SendBatch(ctx, &b).Close()
}

// GetTrace returns one trace.
func (s *Store) GetTrace(ctx context.Context, tenant, id string) (store.Trace, error) {
	if err := checkTenant(tenant); err != nil {
		return store.Trace{}, err
	}
	if err := store.CheckName("traceId", id, store.MaxIDLen); err != nil {
		return store.Trace{}, err
	}
	t, err := scanTrace(s.pool.QueryRow(ctx, `SELECT `+traceCols+` FROM traces WHERE tenant = $1 AND id = $2`, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Trace{}, store.NotFoundf("trace %s", id)
	}
	if err != nil {
		return store.Trace{}, fmt.Errorf("get trace: %w", classify(err))
	}
	return t, nil
}

// traceFilter adds the tool and since filters ListTraces and
// AnalyzeTraces share.
func traceFilter(b *builder, tenant, tool string, since time.Time) error {
	b.where("tenant = %s", tenant)
	if tool != "" {
		if err := store.CheckText("tool", tool, store.MaxTraceText, false); err != nil {
			return err
		}
		b.where("tool = %s", tool)
	}
	if !since.IsZero() {
		b.where("started_at >= %s", since)
	}
	return nil
}

// ListTraces lists traces newest first: (started_at, id) descending.
func (s *Store) ListTraces(ctx context.Context, tenant string, q store.ListTraces) (store.Page[store.Trace], error) {
	var page store.Page[store.Trace]
	if err := checkTenant(tenant); err != nil {
		return page, err
	}
	b := builder{}
	if err := traceFilter(&b, tenant, q.Tool, q.Since); err != nil {
		return page, err
	}
	switch q.Status {
	case "":
	case store.TraceOK, store.TraceError:
		b.where("status = %s", q.Status)
	default:
		return page, store.Invalid("status", "must be %q or %q, got %q", store.TraceOK, store.TraceError, q.Status)
	}
	limit, err := store.CheckLimit(q.Limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return page, err
	}
	if q.Cursor != "" {
		t, id, _, err := store.DecodeCursor("traces", q.Cursor)
		if err != nil {
			return page, err
		}
		b.where("(started_at, id) < (%s, %s)", t, id)
	}
	sql := `SELECT ` + traceCols + ` FROM traces` + b.clause() +
		` ORDER BY started_at DESC, id COLLATE "C" DESC LIMIT ` + b.arg(limit+1)
	items, err := collect(ctx, s.pool, sql, b.args, scanTrace)
	if err != nil {
		return page, fmt.Errorf("list traces: %w", classify(err))
	}
	if len(items) > limit {
		items = items[:limit]
		last := items[limit-1]
		page.NextCursor = store.EncodeCursor("traces", last.StartedAt, last.ID, "")
	}
	page.Items = items
	return page, nil
}

// AnalyzeTraces summarizes the selected traces per tool in one
// statement: counts, nearest-rank percentiles (percentile_disc) and the
// most frequent error codes (ties by code), in tool byte order.
func (s *Store) AnalyzeTraces(ctx context.Context, tenant string, q store.AnalyzeTraces) ([]store.ToolStats, error) {
	if err := checkTenant(tenant); err != nil {
		return nil, err
	}
	b := builder{}
	if err := traceFilter(&b, tenant, q.Tool, q.Since); err != nil {
		return nil, err
	}
	sql := `
		WITH t AS (
			SELECT tool, status, error_code, duration_ms FROM traces` + b.clause() + `
		), stats AS (
			SELECT tool, count(*) AS calls, count(*) FILTER (WHERE status = 'error') AS errors,
			       percentile_disc(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY duration_ms) AS pct
			FROM t GROUP BY tool
		), codes AS (
			SELECT tool, error_code, count(*) AS n,
			       row_number() OVER (PARTITION BY tool ORDER BY count(*) DESC, error_code COLLATE "C") AS rank
			FROM t WHERE status = 'error' AND error_code <> ''
			GROUP BY tool, error_code
		)
		SELECT s.tool, s.calls, s.errors, s.pct,
		       coalesce(c.codes, '{}'), coalesce(c.counts, '{}')
		FROM stats s
		LEFT JOIN (
			SELECT tool, array_agg(error_code ORDER BY rank) AS codes, array_agg(n ORDER BY rank) AS counts
			FROM codes WHERE rank <= ` + b.arg(store.TopErrorCodes) + `
			GROUP BY tool
		) c ON c.tool = s.tool
		ORDER BY s.tool COLLATE "C"`
	stats, err := collect(ctx, s.pool, sql, b.args, func(r pgx.Row) (store.ToolStats, error) {
		var (
			st     store.ToolStats
			pct    []float64
			codes  []string
			counts []int64
		)
		if err := r.Scan(&st.Tool, &st.Calls, &st.Errors, &pct, &codes, &counts); err != nil {
			return st, err
		}
		st.P50Ms, st.P95Ms, st.P99Ms = pct[0], pct[1], pct[2]
		if st.Calls > 0 {
			st.ErrorRate = float64(st.Errors) / float64(st.Calls)
		}
		st.TopErrors = make([]store.CodeCount, len(codes))
		for i := range codes {
			st.TopErrors[i] = store.CodeCount{Code: codes[i], Count: counts[i]}
		}
		return st, nil
	})
	if err != nil {
		return nil, fmt.Errorf("analyze traces: %w", classify(err))
	}
	return stats, nil
}

// PurgeTraces deletes traces of every tenant started before cutoff.
func (s *Store) PurgeTraces(ctx context.Context, cutoff time.Time) (int64, error) {
	n, err := s.purge(ctx, `DELETE FROM traces WHERE (tenant, id) IN (
			SELECT tenant, id FROM traces WHERE started_at < $1 LIMIT $2)`, cutoff)
	if err != nil {
		return n, fmt.Errorf("purge traces: %w", err)
	}
	return n, nil
}
