package memstore

import "hash/maphash"

// A Go map from trace id to ring slot, under the ring's steady churn (a
// trace written, the earliest dropped, on every call), fills with
// deleted-entry markers and grows: the 100,000 ids of a full ring took
// 6 MiB, then 12 MiB after about three million calls, the step in the
// server's memory midway through BENCHMARKS.md's ten-minute run. A
// uuidIndex cannot grow that way. It is open addressing with linear
// probing over the ring's slots: a bucket holds a slot, the id is the
// ring record's own, and a removal moves the entries after it back
// instead of leaving a marker. A bucket is 4 bytes and the table is kept
// between an eighth and a half full, so 8 to 32 bytes a trace held (1 MiB,
// about 10 bytes a trace, for the default limit), none of it scanned by
// the collector.

// minUUIDBuckets is the smallest table a tenant with traces has.
const minUUIDBuckets = 16

// uuidIndex finds one tenant's traces whose id is a canonical UUID. Its
// methods take the ring whose records its buckets name.
type uuidIndex struct {
	seed    maphash.Seed
	buckets []int32 // a ring slot + 1, or 0 for an empty bucket; a power of two long
	n       int
}

func (x *uuidIndex) home(id *[16]byte) int {
	return int(maphash.Comparable(x.seed, *id)) & (len(x.buckets) - 1)
}

// find returns the slot of the trace with id.
func (x *uuidIndex) find(recs []traceRec, id [16]byte) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	mask := len(x.buckets) - 1
	for i := x.home(&id); ; i = (i + 1) & mask {
		b := x.buckets[i]
		if b == 0 {
			return 0, false
		}
		if recs[b-1].id == id {
			return b - 1, true
		}
	}
}

// add indexes the record in slot, whose id is not indexed yet.
func (x *uuidIndex) add(recs []traceRec, slot int32) {
	if 2*(x.n+1) > len(x.buckets) {
		x.resize(recs, max(minUUIDBuckets, 2*len(x.buckets)))
	}
	x.place(recs, slot)
	x.n++
}

func (x *uuidIndex) place(recs []traceRec, slot int32) {
	mask := len(x.buckets) - 1
	i := x.home(&recs[slot].id)
	for x.buckets[i] != 0 {
		i = (i + 1) & mask
	}
	x.buckets[i] = slot + 1
}

// remove drops the record in slot before the slot is reused: its id is
// read from the ring. The record must be indexed (the probe would not end
// otherwise); every caller removes what it set.
func (x *uuidIndex) remove(recs []traceRec, slot int32) {
	mask := len(x.buckets) - 1
	p := x.home(&recs[slot].id)
	for x.buckets[p] != slot+1 {
		p = (p + 1) & mask
	}
	// Backward shift: an entry further along the run moves into the hole
	// when the hole lies between its home bucket and where it sits, so
	// every entry stays reachable from its home without a marker.
	x.buckets[p] = 0
	for j := (p + 1) & mask; x.buckets[j] != 0; j = (j + 1) & mask {
		home := x.home(&recs[x.buckets[j]-1].id)
		if (j-p)&mask <= (j-home)&mask {
			x.buckets[p], x.buckets[j] = x.buckets[j], 0
			p = j
		}
	}
	x.n--
	if len(x.buckets) > minUUIDBuckets && 8*x.n < len(x.buckets) {
		// A tenant whose traces were dropped gives the room back.
		x.resize(recs, len(x.buckets)/2)
	}
}

func (x *uuidIndex) resize(recs []traceRec, size int) {
	if x.buckets == nil {
		x.seed = maphash.MakeSeed()
	}
	old := x.buckets
	x.buckets = make([]int32, size)
	for _, b := range old {
		if b != 0 {
			x.place(recs, b-1)
		}
	}
}
