package handlers

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

const memoTestSchema = `{"type":"object","additionalProperties":false,"required":["key"],
	"properties":{"key":{"type":"string","minLength":1,"maxLength":8},
	"n":{"type":"integer","minimum":0},"tags":{"type":"array","items":{"type":"string"},"maxItems":2}}}`

// randomArgs draws arguments around memoTestSchema: valid and invalid
// ones, and the same texts again, so that the memo is both hit and missed.
func randomArgs(r *rand.Rand) string {
	members := []string{}
	if r.IntN(5) > 0 {
		members = append(members, fmt.Sprintf(`"key":%q`, strings.Repeat("k", r.IntN(10))))
	}
	switch r.IntN(4) {
	case 0:
		members = append(members, fmt.Sprintf(`"n":%d`, r.IntN(5)-2))
	case 1:
		members = append(members, `"n":"1"`)
	}
	if r.IntN(4) == 0 {
		members = append(members, fmt.Sprintf(`"tags":[%s]`, strings.TrimSuffix(strings.Repeat(`"t",`, r.IntN(4)), ",")))
	}
	if r.IntN(8) == 0 {
		members = append(members, `"extra":true`)
	}
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	return "{" + strings.Join(members, ",") + "}"
}

// Property: a schema with the memo answers every argument text as the same
// schema without it does, whatever came before.
func TestValidMemoAnswersAsTheSchema(t *testing.T) {
	plain, err := compileSchema("t", "inputSchema", json.RawMessage(memoTestSchema))
	if err != nil {
		t.Fatal(err)
	}
	memoized, err := compileSchema("t", "inputSchema", json.RawMessage(memoTestSchema))
	if err != nil {
		t.Fatal(err)
	}
	memoized.memo = &validMemo{}
	r := rand.New(rand.NewPCG(1, 2))
	valid := 0
	for range 5000 {
		args := randomArgs(r)
		want := plain.validate(json.RawMessage(args))
		if got := memoized.validate(json.RawMessage(args)); got != want {
			t.Fatalf("validate(%s) with the memo = %q, without = %q", args, got, want)
		}
		if want == "" {
			valid++
		}
	}
	if valid == 0 || valid == 5000 {
		t.Fatalf("%d of 5000 drawn arguments valid: the draw must give both", valid)
	}
	if memoized.memo.len() == 0 {
		t.Fatal("the memo kept nothing")
	}
}

// The arguments of a call alias the request's body buffer, which the
// transport reuses: a text that passed must not make the next request's
// different bytes, in the same buffer, pass.
func TestValidMemoKeepsItsOwnCopy(t *testing.T) {
	s, err := compileSchema("t", "inputSchema", json.RawMessage(memoTestSchema))
	if err != nil {
		t.Fatal(err)
	}
	s.memo = &validMemo{}
	buf := []byte(`{"key":"abc"}`)
	if msg := s.validate(buf); msg != "" {
		t.Fatalf("valid arguments refused: %s", msg)
	}
	copy(buf, `{"kez":"abc"}`) // same length, now invalid
	if msg := s.validate(buf); msg == "" {
		t.Fatal(`{"kez":"abc"} passed: the memo kept the buffer, not a copy`)
	}
}

func TestValidMemoIsBounded(t *testing.T) {
	tests := []struct {
		name    string
		texts   int
		pad     int // bytes of padding in each text
		maxHeld int
	}{
		{"many small texts", 3 * validMemoEntries, 0, validMemoEntries},
		{"texts over the size bound are not kept", 10, validMemoArgBytes, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open := json.RawMessage(`{"type":"object"}`)
			var m validMemo
			schemas := make([]*argSchema, 4)
			for i := range schemas {
				s, err := compileSchema("t", "inputSchema", open)
				if err != nil {
					t.Fatal(err)
				}
				s.memo = &m
				schemas[i] = s
			}
			for i := range tt.texts {
				args := fmt.Sprintf(`{"i":%d,"p":%q}`, i, strings.Repeat("x", tt.pad))
				if msg := schemas[i%len(schemas)].validate(json.RawMessage(args)); msg != "" {
					t.Fatalf("validate(%s) = %q", args, msg)
				}
				if n := m.len(); n > validMemoEntries {
					t.Fatalf("memo holds %d texts, bound %d", n, validMemoEntries)
				}
			}
			if n := m.len(); n > tt.maxHeld {
				t.Fatalf("memo holds %d texts, want at most %d", n, tt.maxHeld)
			}
		})
	}
}
