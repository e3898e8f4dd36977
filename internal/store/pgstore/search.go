package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// maxQueryLen bounds a search query (bytes).
const maxQueryLen = 1000

// maxRanked bounds how many matching entries are ranked. ts_rank needs
// every match's tsvector before the top ones are known, and reading them
// costs ~3.5 µs a row: a word in 9 % of 100k entries took 33 ms (p50) to
// rank exactly, one in nearly all of them 22 ms with a bound of 10,000.
// With 2,000 both take under 10 ms (BENCHMARKS.md, "memory_search"). The
// price: a query matching more entries than this ranks the first 2,000
// the index yields (table order), not all of them. A query that unspecific
// gets a best-effort top list; any query matching fewer (the useful ones)
// is ranked exactly.
const maxRanked = 2_000

// maxRankedPhrase is maxRanked for a query with a "quoted phrase". The
// index finds the entries holding every word of the phrase, and each of
// them must then be read to check the words' positions: for a phrase of
// two common words that is most of the table for a tenth of it matching,
// so each match costs about ten row reads (~130 ms to collect all 6,000
// over 100k entries). 500 matches keep it near 10 ms.
const maxRankedPhrase = 500

// candidateCap is how many matches of query are ranked.
func candidateCap(query string) int {
	if strings.Contains(query, `"`) {
		return maxRankedPhrase
	}
	return maxRanked
}

// SearchMemory runs a full-text query over the generated search column
// (key, tags and the string values of the JSON value; see the migration)
// and ranks hits by ts_rank, then most recently updated, then
// (namespace, key). A query of only stop words has no lexemes, matches
// nothing and so returns no hits rather than an error.
func (s *Store) SearchMemory(ctx context.Context, tenant string, q store.SearchMemory) ([]store.SearchHit, error) {
	if err := checkTenant(tenant); err != nil {
		return nil, err
	}
	if err := store.CheckText("query", q.Query, maxQueryLen, true); err != nil {
		return nil, err
	}
	if q.Namespace != "" {
		if err := store.CheckName("namespace", q.Namespace, store.MaxNamespaceLen); err != nil {
			return nil, err
		}
	}
	tags, err := store.NormalizeTags("tags", q.Tags)
	if err != nil {
		return nil, err
	}
	limit, err := store.CheckLimit(q.Limit, store.DefSearchLimit, store.MaxSearchLimit)
	if err != nil {
		return nil, err
	}
	b := builder{}
	b.where("tenant = %s", tenant)
	// The tsquery is written out where it is used rather than computed
	// once in a CTE: with its text known at planning (below) it folds to
	// a constant, which the GIN index needs.
	query := `websearch_to_tsquery('english', ` + b.arg(q.Query) + `)`
	b.where("search @@ " + query)
	b.where(live, s.opts.Now())
	if q.Namespace != "" {
		b.where("namespace = %s", q.Namespace)
	}
	if len(tags) > 0 {
		b.where("tags @> %s", tags)
	}
	// Rank only the sort keys of the candidates, then fetch the few rows
	// that made the page: carrying whole rows (value and all) through the
	// CTE spilled a common word's ~9k matches to a temporary file.
	sql := `WITH matches AS MATERIALIZED (
			SELECT namespace, key, updated_at, search FROM memory_entries` + b.clause() + `
			LIMIT ` + b.arg(candidateCap(q.Query)) + `),
		top AS (
			SELECT namespace, key, ts_rank(search, ` + query + `) AS score, updated_at FROM matches
			ORDER BY score DESC, updated_at DESC, namespace COLLATE "C", key COLLATE "C"
			LIMIT ` + b.arg(limit) + `)
		SELECT ` + qualified("m", memoryCols) + `, top.score
		FROM top JOIN memory_entries m ON m.tenant = $1 AND m.namespace = top.namespace AND m.key = top.key
		ORDER BY top.score DESC, top.updated_at DESC, top.namespace COLLATE "C", top.key COLLATE "C"`
	// Planned with the query text in hand (an unnamed statement, not the
	// cached prepared one), so websearch_to_tsquery is folded into a
	// constant once: under a generic plan PostgreSQL re-parses the query
	// for every candidate row in ts_rank and the recheck, which made a
	// query matching most of 100k entries four times slower, and it
	// cannot weigh a seq scan against the GIN index by how common the
	// words are.
	args := append([]any{pgx.QueryExecModeExec}, b.args...)
	hits, err := collect(ctx, s.pool, sql, args, func(r pgx.Row) (store.SearchHit, error) {
		var h store.SearchHit
		var score float32
		e, err := scanMemory(scanTail{r, []any{&score}})
		h.Entry, h.Score = e, float64(score)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", classify(err))
	}
	return hits, nil
}

// qualified prefixes each column of a comma-separated list with alias.
func qualified(alias, cols string) string {
	parts := strings.Split(cols, ", ")
	for i, c := range parts {
		parts[i] = alias + "." + c
	}
	return strings.Join(parts, ", ")
}

// scanTail lets a row scanner for a fixed column list read a row that
// has extra columns after them, into extra.
type scanTail struct {
	row   pgx.Row
	extra []any
}

func (s scanTail) Scan(dest ...any) error {
	return s.row.Scan(append(dest, s.extra...)...)
}
