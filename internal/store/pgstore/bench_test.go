package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// latencies collects per-call durations from parallel workers.
type latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d...)
	l.mu.Unlock()
}

// report adds the nearest-rank p50 and p99 as custom metrics.
func (l *latencies) report(b *testing.B) {
	if len(l.all) == 0 {
		return
	}
	slices.Sort(l.all)
	at := func(p float64) float64 {
		i := max(int(float64(len(l.all))*p+0.999999)-1, 0)
		return float64(l.all[i].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkPutMemory measures unconditional upserts from parallel
// clients (4 per CPU, more than the pool has connections, as under load)
// over a working set of keys, so most writes update a row.
func BenchmarkPutMemory(b *testing.B) {
	if testing.Short() {
		b.Skip("needs PostgreSQL; skipped with -short")
	}
	s := openStore(b)
	const keys = 10000
	value := json.RawMessage(`{"text": "the quick brown fox jumps over the lazy dog", "n": 42}`)
	var lat latencies
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
		var mine []time.Duration
		for pb.Next() {
			start := time.Now()
			_, err := s.PutMemory(context.Background(), "bench", store.PutMemory{
				Namespace: "ns", Key: fmt.Sprintf("key-%05d", rng.IntN(keys)), Value: value, Tags: []string{"bench"},
			})
			mine = append(mine, time.Since(start))
			if err != nil {
				b.Error(err)
				return
			}
		}
		lat.add(mine)
	})
	b.StopTimer()
	lat.report(b)
}

// searchEntries is how many entries BenchmarkSearchMemory searches, all
// in one namespace of one tenant.
const searchEntries = 100_000

// BenchmarkSearchMemory measures full-text search over 100,000 entries
// in one namespace, for queries from very common to rare. ts_rank has to
// score every match before the top 10 are known, so the cost grows with
// the number of matches (reported as the "matches" metric).
func BenchmarkSearchMemory(b *testing.B) {
	if testing.Short() {
		b.Skip("needs PostgreSQL; skipped with -short")
	}
	s := openStore(b)
	words := vocabulary(2000)
	seedSearch(b, s, words)
	for _, c := range []struct{ name, query string }{
		{"very-common", words[0]},
		{"common", words[30]},
		{"rare", words[1500]},
		{"two-words", words[5] + " " + words[40]},
		{"phrase", `"` + words[1] + " " + words[2] + `"`},
	} {
		b.Run(c.name, func(b *testing.B) {
			var matches int64
			err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM memory_entries
				WHERE search @@ websearch_to_tsquery('english', $1)`, c.query).Scan(&matches)
			if err != nil {
				b.Fatal(err)
			}
			var lat latencies
			var mine []time.Duration
			for b.Loop() {
				start := time.Now()
				_, err := s.SearchMemory(context.Background(), "bench", store.SearchMemory{Query: c.query, Namespace: "ns"})
				if err != nil {
					b.Fatal(err)
				}
				mine = append(mine, time.Since(start))
			}
			lat.add(mine)
			lat.report(b)
			b.ReportMetric(float64(matches), "matches")
		})
	}
}

// vocabulary returns n distinct made-up words the English stemmer leaves
// alone (consonant-vowel syllables, no English suffixes to strip).
func vocabulary(n int) []string {
	cons, vows := "bdfgklmnprstvz", "aiou"
	seen := map[string]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	var out []string
	for len(out) < n {
		var w strings.Builder
		for range 3 {
			w.WriteByte(cons[rng.IntN(len(cons))])
			w.WriteByte(vows[rng.IntN(len(vows))])
		}
		if !seen[w.String()] {
			seen[w.String()] = true
			out = append(out, w.String())
		}
	}
	return out
}

// seedSearch writes searchEntries entries with COPY (the generated
// search column fills itself). Word frequencies follow a Zipf-like
// distribution, as in real text.
func seedSearch(b *testing.B, s *Store, words []string) {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(len(words)-1))
	now := store.Now()
	rows := make([][]any, searchEntries)
	for i := range rows {
		text := make([]string, 12)
		for j := range text {
			text[j] = words[zipf.Uint64()]
		}
		value, _ := json.Marshal(map[string]any{"text": strings.Join(text, " "), "n": i})
		rows[i] = []any{"bench", "ns", fmt.Sprintf("entry-%06d", i), value, []string{words[rng.IntN(20)]}, int64(1), now, now}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"memory_entries"},
		[]string{"tenant", "namespace", "key", "value", "tags", "version", "created_at", "updated_at"},
		pgx.CopyFromRows(rows))
	if err != nil {
		b.Fatalf("seed: %v", err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE memory_entries`); err != nil {
		b.Fatalf("analyze: %v", err)
	}
}
