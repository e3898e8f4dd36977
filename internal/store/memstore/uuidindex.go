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
// instead of leaving a marker. A bucket is 8 bytes and the table is kept
// between an eighth and a half full, so 16 to 64 bytes a trace held (2 MiB,
// about 21 bytes a trace, for the default limit), none of it scanned by
// the collector.

// minUUIDBuckets is the smallest table a tenant with traces has.
const minUUIDBuckets = 16

// uuidIndex finds one tenant's traces whose id is a canonical UUID. Its
// methods take the ring whose records its buckets name.
type uuidIndex struct {
	seed    maphash.Seed
	buckets []uuidBucket // a power of two long
	n       int
}

// uuidBucket names a ring slot and keeps the low bits of its id's hash:
// a probe compares the hash first and reads the ring (a cache miss, the
// ring is megabytes) only when it matches, and a removal finds the home
// of the entries it moves without reading the ring at all.
type uuidBucket struct {
	slot int32 // the ring slot + 1; 0 for an empty bucket
	hash uint32
}

func (x *uuidIndex) hash(id *[16]byte) uint32 {
	return uint32(maphash.Comparable(x.seed, *id))
}

// find returns the slot of the trace with id.
func (x *uuidIndex) find(recs []traceRec, id [16]byte) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	h := x.hash(&id)
	mask := len(x.buckets) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		b := x.buckets[i]
		if b.slot == 0 {
			return 0, false
		}
		if b.hash == h && recs[b.slot-1].id == id {
			return b.slot - 1, true
		}
	}
}

// add indexes the record in slot, whose id is not indexed yet.
func (x *uuidIndex) add(recs []traceRec, slot int32) {
	if 2*(x.n+1) > len(x.buckets) {
		x.resize(max(minUUIDBuckets, 2*len(x.buckets)))
	}
	x.place(uuidBucket{slot: slot + 1, hash: x.hash(&recs[slot].id)})
	x.n++
}

func (x *uuidIndex) place(b uuidBucket) {
	mask := len(x.buckets) - 1
	i := int(b.hash) & mask
	for x.buckets[i].slot != 0 {
		i = (i + 1) & mask
	}
	x.buckets[i] = b
}

// remove drops the record in slot before the slot is reused: its id is
// read from the ring. The record must be indexed (the probe would not end
// otherwise); every caller removes what it set.
func (x *uuidIndex) remove(recs []traceRec, slot int32) {
	mask := len(x.buckets) - 1
	p := int(x.hash(&recs[slot].id)) & mask
	for x.buckets[p].slot != slot+1 {
		p = (p + 1) & mask
	}
	// Backward shift: an entry further along the run moves into the hole
	// when the hole lies between its home bucket and where it sits, so
	// every entry stays reachable from its home without a marker.
	x.buckets[p] = uuidBucket{}
	for j := (p + 1) & mask; x.buckets[j].slot != 0; j = (j + 1) & mask {
		home := int(x.buckets[j].hash) & mask
		if (j-p)&mask <= (j-home)&mask {
			x.buckets[p], x.buckets[j] = x.buckets[j], uuidBucket{}
			p = j
		}
	}
	x.n--
	if len(x.buckets) > minUUIDBuckets && 8*x.n < len(x.buckets) {
		// A tenant whose traces were dropped gives the room back.
		x.resize(len(x.buckets) / 2)
	}
}

func (x *uuidIndex) resize(size int) {
	if x.buckets == nil {
		x.seed = maphash.MakeSeed()
	}
	old := x.buckets
	x.buckets = make([]uuidBucket, size)
	for _, b := range old {
		if b.slot != 0 {
			x.place(b)
		}
	}
}
