package memstore

import (
	"math/rand/v2"
	"testing"
)

// Property: a uuidIndex answers like a map from id to slot through any
// sequence of adds and removes, across its growth, its shrinking and runs
// that wrap around the table's end. Ids are drawn from a few hundred, so
// that finds of ids added and removed before are frequent.
func TestUUIDIndexMatchesMap(t *testing.T) {
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 11))
		recs := make([]traceRec, 512)
		free := make([]int32, 0, len(recs))
		for i := len(recs) - 1; i >= 0; i-- {
			free = append(free, int32(i))
		}
		pool := make([][16]byte, 300)
		for i := range pool {
			for j := range pool[i] {
				pool[i][j] = byte(r.Uint32())
			}
		}
		var x uuidIndex
		model := map[[16]byte]int32{}
		for step := range 4000 {
			id := pool[r.IntN(len(pool))]
			// Phases of mostly adds and mostly removes, so the table
			// both grows and gives room back.
			adding := (step/500)%2 == 0
			slot, held := model[id]
			switch {
			case !held && len(free) > 0 && (adding || r.IntN(4) == 0):
				slot, free = free[len(free)-1], free[:len(free)-1]
				recs[slot] = traceRec{id: id, flags: flagUUID}
				x.add(recs, slot)
				model[id] = slot
			case held && (!adding || r.IntN(4) == 0):
				x.remove(recs, slot)
				recs[slot] = traceRec{} // the slot is reused: nothing may read it
				free = append(free, slot)
				delete(model, id)
			}
			probe := pool[r.IntN(len(pool))]
			got, ok := x.find(recs, probe)
			want, wantOK := model[probe]
			if ok != wantOK || (ok && got != want) {
				t.Fatalf("seed %d step %d: find = %d, %v; want %d, %v", seed, step, got, ok, want, wantOK)
			}
			if x.n != len(model) {
				t.Fatalf("seed %d step %d: %d indexed, want %d", seed, step, x.n, len(model))
			}
			if len(x.buckets) > 0 && (2*x.n > len(x.buckets) || len(x.buckets) > minUUIDBuckets && 8*x.n < len(x.buckets)/2) {
				t.Fatalf("seed %d step %d: %d ids in %d buckets", seed, step, x.n, len(x.buckets))
			}
		}
		for id, slot := range model {
			if got, ok := x.find(recs, id); !ok || got != slot {
				t.Fatalf("seed %d: find(%x) = %d, %v; want %d", seed, id, got, ok, slot)
			}
		}
	}
}
