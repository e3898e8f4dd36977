package limits

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const typicalArgs = `{"namespace":"team","key":"plan","value":{"steps":["a","b","c"]},"tags":["x","y"]}`

// largeArgs is about 1 MiB of arguments within the default limits: 100
// documents of ~10 KiB text (some of it non-ASCII and escaped) with tags
// and a little nesting.
func largeArgs() []byte {
	var b strings.Builder
	b.WriteString(`{"namespace":"bench","docs":[`)
	para := strings.Repeat(`Lorem ipsum dolor sit amet, \"consectetur\" adipiscing élit, sed do eiusmod \u00e9 tempor. `, 112)
	for i := 0; i < 100; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"title":"document %d","text":"%s","tags":["alpha","beta","gamma",%d],"meta":{"score":%d.5,"ok":true,"refs":[{"id":1},{"id":2}]}}`,
			i, i, para, i, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func BenchmarkCheck(b *testing.B) {
	k := mustNew(b, DefaultConfig())
	large := largeArgs()
	if !json.Valid(large) {
		b.Fatal("largeArgs is not valid JSON")
	}
	for _, bc := range []struct {
		name string
		args []byte
	}{
		{"typical", []byte(typicalArgs)},
		{"1MiB", large},
	} {
		if vs := k.Check("memory.store", bc.args); vs != nil {
			b.Fatalf("%s: unexpected violations %+v", bc.name, vs)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.args)))
			b.ReportAllocs()
			for b.Loop() {
				k.Check("memory.store", bc.args)
			}
		})
		// For scale: the cheapest thing encoding/json can do with the same bytes.
		b.Run(bc.name+"/json.Valid", func(b *testing.B) {
			b.SetBytes(int64(len(bc.args)))
			b.ReportAllocs()
			for b.Loop() {
				json.Valid(bc.args)
			}
		})
	}
}

// BenchmarkCheckViolations measures the reporting path: a 1 MiB document
// whose arrays are all too large for the limit.
func BenchmarkCheckViolations(b *testing.B) {
	c := DefaultConfig()
	c.MaxArraySize = 2
	k := mustNew(b, c)
	large := largeArgs()
	n := len(k.Check("t", large))
	b.SetBytes(int64(len(large)))
	b.ReportAllocs()
	for b.Loop() {
		k.Check("t", large)
	}
	b.ReportMetric(float64(n), "violations/op")
}
