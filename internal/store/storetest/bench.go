package storetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// benchEntries is how many entries the read benchmarks run against.
const benchEntries = 1000

// RunBenchmarks measures the hot paths of the store open returns: the
// memory reads and writes every agent makes, a session's life and a
// trace batch. Each benchmark works in a tenant of its own.
func RunBenchmarks(b *testing.B, open func(b testing.TB) store.Store) {
	s := open(b)
	h := &harness{s: s, run: store.NewID()}
	value := json.RawMessage(`{"note": "the mango crate left the dock", "n": 42}`)

	b.Run("put memory", func(b *testing.B) {
		tn := h.tenant()
		i := 0
		for b.Loop() {
			must(s.PutMemory(b.Context(), tn, store.PutMemory{
				Namespace: "ns", Key: fmt.Sprintf("k%d", i%benchEntries), Value: value, Tags: []string{"bench"},
			}))(b)
			i++
		}
	})

	tn := h.tenant()
	for i := range benchEntries {
		v := json.RawMessage(fmt.Sprintf(`{"note": "crate %d of mango", "n": %d}`, i, i))
		if i%10 == 0 {
			v = json.RawMessage(`{"note": "papaya"}`)
		}
		must(s.PutMemory(b.Context(), tn, store.PutMemory{Namespace: "ns", Key: fmt.Sprintf("k%04d", i), Value: v}))(b)
	}

	b.Run("get memory", func(b *testing.B) {
		i := 0
		for b.Loop() {
			must(s.GetMemory(b.Context(), tn, "ns", fmt.Sprintf("k%04d", i%benchEntries)))(b)
			i++
		}
	})
	b.Run("list memory page", func(b *testing.B) {
		for b.Loop() {
			must(s.ListMemory(b.Context(), tn, store.ListMemory{Namespace: "ns", Prefix: "k05", Limit: 50}))(b)
		}
	})
	b.Run("search memory", func(b *testing.B) {
		for b.Loop() {
			must(s.SearchMemory(b.Context(), tn, store.SearchMemory{Query: "papaya"}))(b)
		}
	})
	b.Run("recent memory", func(b *testing.B) {
		for b.Loop() {
			must(s.RecentMemory(b.Context(), tn, nil, 20))(b)
		}
	})

	b.Run("session lifecycle", func(b *testing.B) {
		tn := h.tenant()
		for b.Loop() {
			sess := must(s.CreateSession(b.Context(), tn, store.NewSession{Task: "t", Initiator: "lead"}))(b)
			must(s.JoinSession(b.Context(), tn, sess.ID, "helper", store.RoleCollaborator, 8))(b)
			must(s.CompleteSession(b.Context(), tn, sess.ID, "done"))(b)
		}
	})

	b.Run("insert 100 traces", func(b *testing.B) {
		tn := h.tenant()
		batch := make([]store.Trace, 100)
		for b.Loop() {
			for i := range batch {
				batch[i] = trace(tn, "tool", i)
			}
			noErr(b, s.InsertTraces(b.Context(), batch))
		}
	})
}
