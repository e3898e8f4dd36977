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
// transport reuses: the memo must keep a copy of a text that passed, not
// the buffer, or the next request's bytes would rewrite what it holds.
func TestValidMemoKeepsItsOwnCopy(t *testing.T) {
	s, err := compileSchema("t", "inputSchema", json.RawMessage(memoTestSchema))
	if err != nil {
		t.Fatal(err)
	}
	s.memo = &validMemo{}
	const passed = `{"key":"abc"}`
	buf := []byte(passed)
	if msg := s.validate(buf); msg != "" {
		t.Fatalf("valid arguments refused: %s", msg)
	}
	copy(buf, `{"kez":"abc"}`) // the next request, same length, invalid
	if msg := s.validate(buf); msg == "" {
		t.Fatal(`{"kez":"abc"} passed`)
	}
	if !s.memo.has(s, []byte(passed)) {
		t.Fatalf("the memo no longer holds %s: it kept the request's buffer", passed)
	}
}

// An upstream's tools are registered again on every sync of its list,
// each with a newly compiled schema: the memo must let the replaced ones
// go, or a gateway whose upstream changes often keeps a compiled schema
// per sync.
func TestValidMemoForgetsReplacedTools(t *testing.T) {
	reg, err := NewToolRegistry("_")
	if err != nil {
		t.Fatal(err)
	}
	tool := Tool{Name: "up.echo", Description: "d", Group: "up", Handler: nopHandler,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"k":{"type":"string"}}}`)}
	for range 200 {
		if _, errs := reg.ReplaceGroup("up", []Tool{tool}); len(errs) > 0 {
			t.Fatal(errs)
		}
		if msg := reg.lookup("up_echo").schema.validate(json.RawMessage(`{"k":"v"}`)); msg != "" {
			t.Fatal(msg)
		}
	}
	reg.valid.mu.RLock()
	schemas := len(reg.valid.seen)
	reg.valid.mu.RUnlock()
	if schemas != 1 || reg.valid.len() != 1 {
		t.Errorf("the memo holds %d texts of %d schemas for one registered tool, want 1 of 1", reg.valid.len(), schemas)
	}
	if _, errs := reg.ReplaceGroup("up", nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	if n := reg.valid.len(); n != 0 {
		t.Errorf("the memo holds %d texts after the group's tools were removed, want 0", n)
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
