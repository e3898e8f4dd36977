package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
)

// searchEntries is how many entries BenchmarkAPI_MemorySearch100k
// searches, all in one namespace.
const searchEntries = 100_000

// BenchmarkAPI_MemorySearch100k measures memory_search through the full
// request path of cmd/api (as BenchmarkAPI_ToolsCall) on PostgreSQL, over
// 100,000 entries in one namespace, one call at a time, for queries from
// rare to very common. Each sub-benchmark reports the nearest-rank p50,
// p95 and p99 of its calls, and how many entries its query matches
// (every match is ranked before the top 10 are known). Run it with a
// fixed count of calls, e.g. -benchtime 400x, so the p99 rests on enough
// samples.
func BenchmarkAPI_MemorySearch100k(b *testing.B) {
	if testing.Short() {
		b.Skip("needs PostgreSQL and ~1 min of seeding; skipped with -short")
	}
	cfg := config.Default()
	cfg.DatabaseURL = pgtest.NewDatabase(b)
	c := newBenchClient(b, cfg) // migrates the new database
	words := searchVocabulary(3000)
	conn := seedSearch(b, cfg.DatabaseURL, words)
	for _, q := range []struct{ kind, query string }{
		{"rare", words[2500]},
		{"two-words", words[20] + " " + words[200]},
		{"common", words[30]},
		{"very-common", words[0]},
		{"phrase", `"` + words[40] + " " + words[60] + `"`},
		{"phrase-common-words", `"` + words[1] + " " + words[2] + `"`},
	} {
		b.Run(q.kind, func(b *testing.B) {
			var matches int64
			err := conn.QueryRow(context.Background(), `SELECT count(*) FROM memory_entries
				WHERE search @@ websearch_to_tsquery('english', $1)`, q.query).Scan(&matches)
			if err != nil {
				b.Fatal(err)
			}
			args, _ := json.Marshal(map[string]any{"query": q.query, "namespace": "bench"})
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_search","arguments":` + string(args) + `}}`
			want := `"count":10`
			if matches < 10 {
				want = fmt.Sprintf(`"count":%d`, matches)
			}
			c.mustPost(b, body, want)
			lat := make([]time.Duration, 0, 1024)
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				c.post(body)
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
			b.ReportMetric(float64(matches), "matches")
		})
	}
}

// reportPercentiles adds the nearest-rank p50, p95 and p99 of lat, in
// milliseconds, as custom metrics.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	for _, p := range []struct {
		q    float64
		unit string
	}{{0.50, "p50-ms"}, {0.95, "p95-ms"}, {0.99, "p99-ms"}} {
		i := max(int(float64(len(lat))*p.q+0.999999)-1, 0)
		b.ReportMetric(float64(lat[i].Microseconds())/1000, p.unit)
	}
}

// searchVocabulary returns n distinct made-up words that the English
// stemmer leaves alone (consonant-vowel syllables without English
// suffixes), so every query word matches exactly the entries it was
// written into. Index 0 is the most frequent word in seedSearch's text.
func searchVocabulary(n int) []string {
	cons, vows := "bdfgklmnprstvz", "aiou"
	seen := map[string]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]string, 0, n)
	for len(out) < n {
		var w strings.Builder
		for range 2 + rng.IntN(3) {
			w.WriteByte(cons[rng.IntN(len(cons))])
			w.WriteByte(vows[rng.IntN(len(vows))])
		}
		if s := w.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// stopWords are English words text search drops; real sentences are full
// of them, and they cost parsing but never match.
var stopWords = []string{"the", "a", "of", "and", "to", "in", "is", "it", "for", "on", "with", "was", "that", "this"}

// seedSearch writes searchEntries entries into namespace "bench" of the
// default tenant with COPY (the generated search column fills itself),
// then vacuums and analyzes the table, as autovacuum would soon after. Each
// value is {"text": 2-4 sentences of 5-12 words, "author": "agent-N"}; the
// words follow a Zipf distribution (s = 1.1) over the vocabulary, with
// stop words in between, and each entry has 1-3 tags out of 40. It returns
// a connection to the database for the caller's own queries.
func seedSearch(b *testing.B, dbURL string, words []string) *pgx.Conn {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close(context.Background()) })
	rng := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(len(words)-1))
	tagSet := make([]string, 40)
	for i := range tagSet {
		tagSet[i] = "topic-" + words[100+i]
	}
	now := store.Now()
	var text strings.Builder
	var sentence []string
	rows := make([][]any, searchEntries)
	for i := range rows {
		text.Reset()
		for s := range 2 + rng.IntN(3) {
			sentence = sentence[:0]
			for range 5 + rng.IntN(8) {
				if rng.IntN(3) == 0 {
					sentence = append(sentence, stopWords[rng.IntN(len(stopWords))])
				}
				sentence = append(sentence, words[zipf.Uint64()])
			}
			if s > 0 {
				text.WriteByte(' ')
			}
			text.WriteString(strings.ToUpper(sentence[0][:1]))
			text.WriteString(strings.Join(sentence, " ")[1:])
			text.WriteByte('.')
		}
		value, err := json.Marshal(map[string]any{"text": text.String(), "author": fmt.Sprintf("agent-%d", rng.IntN(50))})
		if err != nil {
			b.Fatal(err)
		}
		tags := make([]string, 0, 3)
		for range 1 + rng.IntN(3) {
			if t := tagSet[rng.IntN(len(tagSet))]; !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
		slices.Sort(tags)
		at := now.Add(-time.Duration(searchEntries-i) * time.Second)
		rows[i] = []any{"default", "bench", fmt.Sprintf("note-%06d", i), value, tags, int64(1), at, at}
	}
	start := time.Now()
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"memory_entries"},
		[]string{"tenant", "namespace", "key", "value", "tags", "version", "created_at", "updated_at"},
		pgx.CopyFromRows(rows))
	if err != nil {
		b.Fatalf("seed: %v", err)
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE memory_entries`); err != nil {
		b.Fatalf("vacuum: %v", err)
	}
	b.Logf("seeded %d entries in %s", searchEntries, time.Since(start).Round(time.Millisecond))
	return conn
}
