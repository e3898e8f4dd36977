package memstore

import (
	"encoding/json"
	"testing"
)

// The contract suite covers search end to end; these cases pin the
// query syntax corners it leaves alone.
func TestQueryMatching(t *testing.T) {
	fields, err := searchFields("fruit-log", json.RawMessage(`{"a": "Ripe Mango, green kiwi", "b": ["kiwi"], "mango": 1}`), []string{"daily"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		query string
		match bool
		score int
	}{
		{"kiwi", true, 2},
		{"KIWI mango", true, 3},
		{"kiwi papaya", false, 0},
		{"papaya or kiwi", true, 2},
		{"papaya or kiwi mango", true, 3}, // (papaya | kiwi) & mango
		{"or kiwi", true, 2},              // a leading "or" is a no-op
		{"kiwi or", true, 2},              // so is a trailing one
		{`"green kiwi"`, true, 1},
		{`"kiwi green"`, false, 0},
		{`"mango green"`, true, 1}, // punctuation does not break a phrase
		{`"kiwi kiwi"`, false, 0},  // fields are separate: no phrase across them
		{`"green kiwi`, true, 1},   // an unterminated quote runs to the end
		{`kiwi -"ripe mango"`, false, 0},
		{`kiwi -"mango ripe"`, true, 2},
		{"kiwi -papaya", true, 2},
		{"-papaya", false, 0}, // nothing to look for
		{"fruit daily", true, 2},
		{"fruit-log", true, 2}, // both words, as plainto_tsquery would
		{"!!!", false, 0},
		{"or", false, 0},
	}
	for _, c := range cases {
		q := parseQuery(c.query)
		score, ok := q.score(fields)
		ok = ok && q.hasPositive()
		if ok != c.match || (ok && score != c.score) {
			t.Errorf("query %q: got match %v score %d, want %v %d", c.query, ok, score, c.match, c.score)
		}
	}
}
