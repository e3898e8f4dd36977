package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// TestCanonicalFormIsJSONBs holds store.CheckValue to what it promises:
// every document it accepts, PostgreSQL accepts too and gives back as
// exactly the canonical form (once jsonb_out's spaces are compacted), and
// every document PostgreSQL refuses, it refuses. The documents are tricky
// ones written out, then generated ones from a fixed seed.
func TestCanonicalFormIsJSONBs(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	lim := store.Options{}.JSONLimits()
	docs := []string{
		`{"bb":1,"a":2,"c":3}`, `{"é":1,"z":2,"":0}`, `{"a":{"d":1,"c":[{"y":1,"x":2}]},"b":0}`,
		`[1E2, 1.0, -0, -0.0, 1.50, 100e-2, 1e-5, 0.0e5, 1E+2, 0e-10, -0e3, 12.50e-1, 10e-1, 0.5e1]`,
		`[123456789012345678901234567890, 1.5e-20, 0.0000000000000000000001e22, -1.7976931348623157e308, 5e-324]`,
		`[1e399, 1e400, 1e-398, 0e400, 0e401, 0.000e-396, -12345.678e-3, 1.000e3, 1e0, 1e-0, 1E+00, 0.001]`,
		`["\u00e9\/\u001f\u007f\u2028\ud83d\ude00\uD83D\uDE00", "\b\f\n\r\t\"\\", "\u0001\u000b\u001F"]`,
		`{"\u0061":1,"b\n":2,"\ud83d\ude00":3,"😀x":4}`,
		`"\ufffe\uffff\udbff\udfff\uFDD0"`, `[true,false,null,"",{},[]]`, " \t\n\r[ 1 , { } ]\n ",
		`"\udfff"`, `"\ud800"`, `"\ud800x"`, `"\ud800\u0041"`, `"\u0000"`, `{"\u0000":1}`, "\"\xff\"", "\"\xed\xa0\x80\"",
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `1e131071`, `0e1073741823`, `[01]`, `[1.]`, `[.5]`, `-`, `1e`, `+1`,
	}
	rng := rand.New(rand.NewPCG(15, 2))
	for range 3000 {
		docs = append(docs, genDoc(rng, 0))
	}
	ctx := context.Background()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var accepted, refusedByBoth int
	for _, doc := range docs {
		ours, ourErr := store.CheckValue(json.RawMessage(doc), lim)
		var text string
		pgErr := conn.QueryRow(ctx, `SELECT $1::text::jsonb::text`, doc).Scan(&text)
		switch {
		case ourErr == nil && pgErr != nil:
			t.Errorf("accepted %q, which PostgreSQL refuses: %v", doc, pgErr)
		case ourErr == nil:
			var got bytes.Buffer
			if err := json.Compact(&got, []byte(text)); err != nil {
				t.Fatalf("jsonb gave %q: %v", text, err)
			}
			if got.String() != string(ours) {
				t.Errorf("%q: canonical form %s, jsonb gives %s", doc, ours, got.String())
			}
			accepted++
		case pgErr != nil:
			refusedByBoth++
		}
	}
	t.Logf("%d documents: %d accepted by both, %d refused by both, the rest refused by the store only", len(docs), accepted, refusedByBoth)
	if accepted < len(docs)/3 {
		t.Errorf("only %d of %d documents accepted: the generator tests little", accepted, len(docs))
	}
}

// genDoc writes a random JSON document, mostly valid, rich in what jsonb
// renders its own way.
func genDoc(rng *rand.Rand, depth int) string {
	var b strings.Builder
	genValue(&b, rng, depth)
	return b.String()
}

func genValue(b *strings.Builder, rng *rand.Rand, depth int) {
	space := func() {
		if rng.IntN(8) == 0 {
			b.WriteString([]string{" ", "\n", "\t ", "\r\n"}[rng.IntN(4)])
		}
	}
	space()
	k := rng.IntN(10)
	if depth >= 4 {
		k = 4 + rng.IntN(6)
	}
	switch {
	case k < 2:
		b.WriteByte('[')
		for i := range rng.IntN(5) {
			if i > 0 {
				b.WriteByte(',')
			}
			genValue(b, rng, depth+1)
		}
		space()
		b.WriteByte(']')
	case k < 4:
		b.WriteByte('{')
		var names []string
		for i := range rng.IntN(6) {
			if i > 0 {
				b.WriteByte(',')
			}
			space()
			name := genString(rng)
			if len(names) > 0 && rng.IntN(20) == 0 {
				name = names[rng.IntN(len(names))] // a duplicate
			}
			names = append(names, name)
			b.WriteString(name)
			space()
			b.WriteByte(':')
			genValue(b, rng, depth+1)
		}
		space()
		b.WriteByte('}')
	case k < 7:
		b.WriteString(genNumber(rng))
	case k < 9:
		b.WriteString(genString(rng))
	default:
		b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
	}
	space()
}

func genNumber(rng *rand.Rand) string {
	var b strings.Builder
	if rng.IntN(3) == 0 {
		b.WriteByte('-')
	}
	digits := func(n int, zeros bool) {
		for range n {
			if zeros && rng.IntN(3) == 0 {
				b.WriteByte('0')
			} else {
				b.WriteByte(byte('0' + rng.IntN(10)))
			}
		}
	}
	if rng.IntN(3) == 0 {
		b.WriteByte('0')
	} else {
		b.WriteByte(byte('1' + rng.IntN(9)))
		digits(rng.IntN([]int{3, 20, 40}[rng.IntN(3)]), true)
	}
	if rng.IntN(2) == 0 {
		b.WriteByte('.')
		digits(1+rng.IntN([]int{3, 20, 40}[rng.IntN(3)]), true)
	}
	if rng.IntN(2) == 0 {
		b.WriteString([]string{"e", "E", "e+", "E-", "e-", "e0"}[rng.IntN(6)])
		fmt.Fprint(&b, []int{rng.IntN(10), rng.IntN(40), rng.IntN(450)}[rng.IntN(3)])
	}
	return b.String()
}

func genString(rng *rand.Rand) string {
	pieces := []string{
		"a", "Z", "é", "😀", " ", "~", "/", "\u007f", "\u2028", "\ufffe",
		`\u00e9`, `\/`, `\n`, `\t`, `\b`, `\f`, `\r`, `\"`, `\\`, `\u001f`, `\u0001`, `\u007F`,
		`\ud83d\ude00`, `\uD83D\uDE00`, `\u0061`, `\u2028`,
	}
	bad := []string{`\udfff`, `\ud800`, `\u0000`, "\xff", `\ud800\u0041`}
	var b strings.Builder
	b.WriteByte('"')
	for range rng.IntN(6) {
		if rng.IntN(60) == 0 {
			b.WriteString(bad[rng.IntN(len(bad))])
		} else {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
	}
	b.WriteByte('"')
	return b.String()
}
