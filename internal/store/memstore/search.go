package memstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// maxQueryLen bounds a search query, in bytes.
const maxQueryLen = 1000

// SearchMemory ranks live entries by how often the query's terms occur
// in them: the in-memory stand-in for PostgreSQL's ts_rank, which orders
// simple cases the same way.
func (s *Store) SearchMemory(ctx context.Context, tenant string, q store.SearchMemory) ([]store.SearchHit, error) {
	if err := begin(ctx, tenant); err != nil {
		return nil, err
	}
	if err := store.CheckText("query", q.Query, maxQueryLen, true); err != nil {
		return nil, err
	}
	if err := checkOptionalName("namespace", q.Namespace, store.MaxNamespaceLen); err != nil {
		return nil, err
	}
	tags, err := store.NormalizeTags("tags", q.Tags)
	if err != nil {
		return nil, err
	}
	limit, err := store.CheckLimit(q.Limit, store.DefSearchLimit, store.MaxSearchLimit)
	if err != nil {
		return nil, err
	}
	query := parseQuery(q.Query)
	if !query.hasPositive() {
		return []store.SearchHit{}, nil
	}

	s.mu.RLock()
	defer s.mu.RUnlock()
	type scored struct {
		e     *entry
		score int
	}
	var hits []scored
	for _, e := range s.liveEntries(tenant, func(e *entry) bool {
		return (q.Namespace == "" || e.Namespace == q.Namespace) && hasTags(e.Tags, tags)
	}) {
		if score, ok := query.score(e.fields); ok {
			hits = append(hits, scored{e, score})
		}
	}
	slices.SortFunc(hits, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := b.e.UpdatedAt.Compare(a.e.UpdatedAt); c != 0 {
			return c
		}
		return compareKeys(memKey{a.e.Namespace, a.e.Key}, memKey{b.e.Namespace, b.e.Key})
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]store.SearchHit, len(hits))
	for i, h := range hits {
		out[i] = store.SearchHit{Entry: h.e.copyOut(), Score: float64(h.score)}
	}
	return out, nil
}

// words splits text into lowercase words: runs of letters and digits.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// searchFields returns the searchable text of an entry as separate word
// sequences — the key, each JSON string value (not object keys) and each
// tag — so that a phrase never matches across two of them.
func searchFields(key string, value json.RawMessage, tags []string) ([][]string, error) {
	fields := [][]string{words(key)}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber() // numbers are not searched; no need to parse them as floats
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			fields = append(fields, words(v))
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			// Object keys are structure, not content, as for jsonb's
			// to_tsvector; the order of values does not matter to a score.
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	for _, t := range tags {
		fields = append(fields, words(t))
	}
	return fields, nil
}

// term is a word or a quoted phrase of a query, possibly excluded.
type term struct {
	words   []string
	negated bool
}

// query is a parsed search: every group must match, and a group matches
// when any of its terms does ("or" binds tighter than the implicit
// "and", as in websearch_to_tsquery).
type query struct{ groups [][]term }

// parseQuery reads web-search syntax: words, "quoted phrases",
// -excluded words or phrases, and "or" between alternatives.
func parseQuery(text string) query {
	var q query
	pendingOr := false
	add := func(t term) {
		if len(t.words) == 0 {
			return
		}
		if pendingOr && len(q.groups) > 0 {
			last := len(q.groups) - 1
			q.groups[last] = append(q.groups[last], t)
		} else {
			q.groups = append(q.groups, []term{t})
		}
		pendingOr = false
	}
	for rest := text; rest != ""; {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			break
		}
		negated := false
		if rest[0] == '-' {
			negated = true
			rest = rest[1:]
		}
		if rest != "" && rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			phrase := rest[1:]
			rest = ""
			if end >= 0 {
				phrase, rest = phrase[:end], phrase[end+1:]
			}
			add(term{words: words(phrase), negated: negated})
			continue
		}
		end := strings.IndexFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
		if end < 0 {
			end = len(rest)
		}
		chunk := rest[:end]
		rest = rest[end:]
		if !negated && strings.EqualFold(chunk, "or") {
			pendingOr = len(q.groups) > 0
			continue
		}
		ws := words(chunk)
		if negated {
			// -well-known excludes the phrase, not each word.
			add(term{words: ws, negated: true})
			continue
		}
		for _, w := range ws {
			add(term{words: []string{w}})
		}
	}
	return q
}

// hasPositive reports whether any term is not excluded: a query of only
// exclusions (or of nothing searchable) finds nothing.
func (q query) hasPositive() bool {
	for _, g := range q.groups {
		for _, t := range g {
			if !t.negated {
				return true
			}
		}
	}
	return false
}

// score reports whether fields match q and, if so, the total number of
// occurrences of the matched positive terms.
func (q query) score(fields [][]string) (int, bool) {
	total := 0
	for _, g := range q.groups {
		matched := false
		for _, t := range g {
			n := occurrences(t.words, fields)
			switch {
			case t.negated && n == 0:
				matched = true
			case !t.negated && n > 0:
				matched = true
				total += n
			}
		}
		if !matched {
			return 0, false
		}
	}
	return total, true
}

// occurrences counts where phrase occurs, as consecutive words within
// one field.
func occurrences(phrase []string, fields [][]string) int {
	n := 0
	for _, f := range fields {
		for i := 0; i+len(phrase) <= len(f); i++ {
			if slices.Equal(f[i:i+len(phrase)], phrase) {
				n++
			}
		}
	}
	return n
}
