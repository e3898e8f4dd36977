package limits

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

// docGen writes random JSON documents that exercise the corners of the
// walk: escapes of every kind, raw and escaped non-ASCII, invalid UTF-8,
// surrogates, awkward member names, whitespace, nesting and arrays around
// the small limits the property test uses.
type docGen struct {
	r *rand.Rand
	b []byte
}

func (g *docGen) space() {
	if g.r.IntN(4) == 0 {
		g.b = append(g.b, " \t\n\r"[g.r.IntN(4)])
	}
}

func (g *docGen) str() {
	// The fragments strings are made of.
	pieces := [...]string{
		"a", "b", "z", "0", " ", "/", "~", "~1", "~0", "é", "😀", "\xff", "\xe2\x82",
		`\"`, `\\`, `\/`, `\n`, `\t`, `\u0041`, `\u00e9`, `\u007e`, `\u002f`, `\ud83d\ude00`,
		`\ud83d`, `\ude00`, `\ud83d\ud83d\ude00`, `\u0000`, "[", "]", "{", "}", ",", ":",
	}
	g.b = append(g.b, '"')
	for n := g.r.IntN(9); n > 0; n-- {
		g.b = append(g.b, pieces[g.r.IntN(len(pieces))]...)
	}
	g.b = append(g.b, '"')
}

func (g *docGen) value(depth int) {
	g.space()
	k := g.r.IntN(10)
	if depth > 8 {
		k = 5 + g.r.IntN(5) // scalars only
	}
	switch {
	case k < 2:
		g.b = append(g.b, '{')
		for i, n := 0, g.r.IntN(5); i < n; i++ {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			g.space()
			g.str()
			g.space()
			g.b = append(g.b, ':')
			g.value(depth + 1)
		}
		g.space()
		g.b = append(g.b, '}')
	case k < 5:
		g.b = append(g.b, '[')
		for i, n := 0, g.r.IntN(7); i < n; i++ {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			g.value(depth + 1)
		}
		g.space()
		g.b = append(g.b, ']')
	case k < 7:
		g.str()
	case k == 7:
		g.b = strconv.AppendFloat(g.b, g.r.NormFloat64()*1e6, 'g', -1, 64)
	default:
		g.b = append(g.b, []string{"true", "false", "null", "0", "-1"}[g.r.IntN(5)]...)
	}
	g.space()
}

func (g *docGen) doc() []byte {
	g.b = g.b[:0]
	if g.r.IntN(10) == 0 {
		g.value(0) // any value at the top, now and then
	} else {
		// The arguments object, with at least one member.
		g.b = append(g.b, '{')
		g.str()
		g.b = append(g.b, ':')
		g.value(1)
		g.b = append(g.b, '}')
	}
	return g.b
}

// TestCheckMatchesReference compares Check with the decoding reference
// implementation on random documents under small random limits.
func TestCheckMatchesReference(t *testing.T) {
	found := map[string]int{}
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		g := &docGen{r: r}
		for i := 0; i < 500; i++ {
			c := Config{
				MaxArraySize:    1 + r.IntN(5),
				MaxStringLength: 1 + r.IntN(8),
				MaxObjectDepth:  1 + r.IntN(6),
				MaxRequestBytes: 1 << 20,
				ToolArrayLimits: map[string]int{"x.y": 1 + r.IntN(5)},
			}
			if r.IntN(50) == 0 {
				c.MaxRequestBytes = int64(1 + r.IntN(64))
			}
			k := mustNew(t, c)
			tool := []string{"x.y", "x_y", "other"}[r.IntN(3)]
			doc := g.doc()
			if !json.Valid(doc) {
				t.Fatalf("seed %d doc %d: generated invalid JSON %q", seed, i, doc)
			}
			got := strip(k.Check(tool, doc))
			want, err := refCheck(c, k.ArrayLimit(tool), doc)
			if err != nil {
				t.Fatalf("seed %d doc %d: reference: %v", seed, i, err)
			}
			if len(got) == 0 && len(want) == 0 {
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d doc %d, config %+v, tool %s, document\n%s\n got  %v\n want %v",
					seed, i, c, tool, doc, got, want)
			}
			for _, v := range got {
				found[v.Code]++
			}
		}
	}
	// The generator must actually reach every kind of violation.
	for _, code := range []string{CodeArrayTooLarge, CodeStringTooLong, CodeMaxDepthExceeded, CodeRequestTooLarge} {
		if found[code] == 0 {
			t.Errorf("no %s generated; violations seen: %v", code, found)
		}
	}
	t.Logf("violations compared: %v", found)
}

// FuzzCheck: on any input Check must not panic; on valid JSON it must agree
// with the reference implementation.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `"x"`, `1`, `{"a":[1,2,3]}`, `{"a/b":{"m~n":"long string"}}`,
		`{"\u00e9\ud83d\ude00":["\ud800","\\\"",[[[[[]]]]]]}`, typicalArgs,
		"{\"a\xff\":\"\xfe\xfd\xfc\xfb\"}", `[[["]]}"],{"a":{"b":[]}}]]`, ` { "k" : [ 1 , 2 ] } `,
	} {
		f.Add([]byte(s))
	}
	c := Config{MaxArraySize: 2, MaxStringLength: 3, MaxObjectDepth: 3, MaxRequestBytes: 1 << 16}
	k := mustNew(f, c)
	f.Fuzz(func(t *testing.T, data []byte) {
		got := strip(k.Check("t", data))
		if !json.Valid(data) {
			return
		}
		want, err := refCheck(c, k.ArrayLimit("t"), data)
		if err != nil {
			t.Fatalf("reference: %v", err)
		}
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("document %q\n got  %v\n want %v", data, got, want)
		}
	})
}
