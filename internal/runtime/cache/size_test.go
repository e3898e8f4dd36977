package cache

import (
	"encoding/json"
	"errors"
	"testing"
)

type reported struct{ n int64 }

func (r reported) SizeBytes() int64 { return r.n }

type label string

func TestDefaultSizer(t *testing.T) {
	over := entryOverhead[string, []byte]()
	if over < 100 || over > 300 {
		t.Fatalf("per-entry overhead %d bytes: implausible for a node and a map slot", over)
	}
	b := make([]byte, 10, 100)
	if got, want := DefaultSizer[string, []byte]()("key", b), over+3+100; got != want {
		t.Errorf("[]byte: %d, want %d (overhead + key length + capacity)", got, want)
	}
	raw := json.RawMessage(`{"a":1}`)
	if got, want := DefaultSizer[string, json.RawMessage]()("k", raw), entryOverhead[string, json.RawMessage]()+1+int64(cap(raw)); got != want {
		t.Errorf("json.RawMessage: %d, want %d", got, want)
	}
	if got, want := DefaultSizer[label, label]()("ab", "cdef"), entryOverhead[label, label]()+2+4; got != want {
		t.Errorf("named string types: %d, want %d", got, want)
	}
	if got, want := DefaultSizer[int, reported]()(1, reported{4096}), entryOverhead[int, reported]()+4096; got != want {
		t.Errorf("SizeReporter: %d, want %d", got, want)
	}
	if got, want := DefaultSizer[int, [4]float64]()(1, [4]float64{}), entryOverhead[int, [4]float64](); got != want {
		t.Errorf("pointer-free value: %d, want the overhead %d", got, want)
	}
	type doc struct {
		Title string
		Body  []byte
	}
	d := &doc{Title: "hello", Body: make([]byte, 50)}
	if got, want := DefaultSizer[int, *doc]()(1, d), entryOverhead[int, *doc]()+int64(16+24)+5+50; got != want {
		t.Errorf("*struct: %d, want %d", got, want)
	}
	if got, want := DefaultSizer[int, any]()(1, "abc"), entryOverhead[int, any]()+16+3; got != want {
		t.Errorf("string in an interface: %d, want %d", got, want)
	}
	var nilAny any
	if got, want := DefaultSizer[int, any]()(1, nilAny), entryOverhead[int, any](); got != want {
		t.Errorf("nil interface: %d, want %d", got, want)
	}
}

func TestEstimateSize(t *testing.T) {
	type node struct {
		next *node
		_    [8]byte
	}
	type pair struct{ a, b *[100]byte }
	type hidden struct{ s string }
	cyclic := &node{}
	cyclic.next = cyclic
	var long *node
	for range 200_000 {
		long = &node{next: long}
	}
	shared := new([100]byte)
	ch := make(chan int64, 10)

	for _, tc := range []struct {
		name string
		v    any
		want int64
	}{
		{"nil", nil, 0},
		{"string", "abc", 16 + 3},
		{"[]byte uses capacity", make([]byte, 1, 10), 24 + 10},
		{"json.RawMessage", json.RawMessage("[1,2]"), 24 + 5},
		{"int", 42, 8},
		{"SizeReporter", reported{7}, 7},
		{"cycle counted once", cyclic, 8 + 16},
		{"long list, no stack overflow", long, 8 + 200_000*16},
		{"shared pointer counted once", pair{shared, shared}, 16 + 100},
		{"unexported fields", hidden{"hello"}, 16 + 5},
		{"slice of interfaces", []any{"ab", int64(1)}, 24 + 2*16 + (16 + 2) + 8},
		{"map", map[int64]int64{1: 1, 2: 2}, 8 + mapHeader + 8*(8+8+1)},
		{"map of strings", map[string]string{"k": "vv"}, 8 + mapHeader + 8*(16+16+1) + 1 + 2},
		{"channel", ch, 8 + chanHeader + 10*8},
		{"nil slice", []string(nil), 24},
	} {
		if got := EstimateSize(tc.v); got != tc.want {
			t.Errorf("%s: EstimateSize = %d, want %d", tc.name, got, tc.want)
		}
	}
	if n := mapSlots(100); n != 128 {
		t.Errorf("mapSlots(100) = %d, want 128 (100 at 7/8 load is 115)", n)
	}
}

func TestSizerErrors(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSizeBytes = 100
	c := mustNew(t, cfg, WithSizer(func(_ string, v int64) int64 { return v }))
	if err := c.Set("ok", 100); err != nil {
		t.Fatalf("size equal to maxSizeBytes: %v", err)
	}
	if err := c.Set("neg", -1); !errors.Is(err, ErrInvalidEntry) {
		t.Fatalf("negative size: %v, want ErrInvalidEntry", err)
	}
	if err := c.Set("zero", 0); err != nil {
		t.Fatalf("zero size: %v", err)
	}
	if err := c.Set("prio", 1, WithPriority(Priority(9))); !errors.Is(err, ErrInvalidEntry) {
		t.Fatalf("unknown priority: %v, want ErrInvalidEntry", err)
	}
	mustCheck(t, c)
}
