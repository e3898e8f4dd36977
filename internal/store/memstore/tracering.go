package memstore

import (
	"encoding/hex"
	"math"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// The embedded store holds up to Options.TraceLimit traces (100,000 by
// default) while calls come in at full speed, so a held trace must cost
// little memory and nothing at each collection. A *store.Trace with its
// id, handle and map entry took about 300 bytes in five objects the
// garbage collector walked on every cycle. A traceRec has no pointers:
// the ring is one allocation the collector never scans, 80 bytes a
// trace, 16 of them the OpenTelemetry trace id (BENCHMARKS.md, "Cached
// reads side by side").

// traceRec is one held trace.
type traceRec struct {
	id       [16]byte // the id, when flagUUID; otherwise traceRing.oddIDs
	otel     [16]byte // the OpenTelemetry trace id, when flagOtel
	handle   uint64   // the client session handle's 64 bits, when flagHandle
	started  int64    // Unix microseconds
	duration float64  // milliseconds
	// args and result are byte counts, which the body and response
	// limits keep within ±2 GiB; beyond, they are held at its bounds.
	args   int32
	result int32
	tenant uint32 // index in Store.tenantList
	tool   uint32 // in traceRing.names
	code   uint32 // in traceRing.names; 0 for no error code
	flags  uint8
}

const (
	flagUUID   uint8 = 1 << iota // id holds the trace id
	flagHandle                   // handle holds a client session handle
	flagError                    // status is store.TraceError
	flagOtel                     // otel holds an OpenTelemetry trace id
)

// traceRing holds every stored trace, of all tenants, in the order they
// were written, so that the bound on traces held (Options.TraceLimit)
// drops the earliest in O(1); the tenants' maps index it by id. The
// caller holds Store.mu.
type traceRing struct {
	recs    []traceRec // in order from head, circularly once full
	head    int
	evicted int64
	names   interner
	// oddIDs are the ids that are not canonical UUIDs (the recorder
	// writes UUIDs; the store takes any id CheckTrace accepts), by slot.
	oddIDs map[int32]string
}

// traceIndex finds a tenant's traces by id. Its methods take the ring.
type traceIndex struct {
	uuids uuidIndex        // ids that are canonical UUIDs (uuidindex.go)
	byOdd map[string]int32 // the others, which the recorder never writes
}

func (x *traceIndex) find(recs []traceRec, id string) (int32, bool) {
	if u, ok := canonicalUUID(id); ok {
		return x.uuids.find(recs, u)
	}
	slot, ok := x.byOdd[id]
	return slot, ok
}

// set indexes the record in slot.
func (x *traceIndex) set(recs []traceRec, oddID string, slot int32) {
	if recs[slot].flags&flagUUID != 0 {
		x.uuids.add(recs, slot)
		return
	}
	if x.byOdd == nil {
		x.byOdd = make(map[string]int32)
	}
	x.byOdd[oddID] = slot
}

// remove drops the record in slot, before the slot is reused.
func (x *traceIndex) remove(recs []traceRec, oddID string, slot int32) {
	if recs[slot].flags&flagUUID != 0 {
		x.uuids.remove(recs, slot)
	} else {
		delete(x.byOdd, oddID)
	}
}

// canonicalUUID returns id's 16 bytes when id is a UUID in the form
// uuid.UUID.String writes (lowercase, hyphenated), so that it reads back
// exactly as written.
func canonicalUUID(id string) ([16]byte, bool) {
	if len(id) != 36 {
		return [16]byte{}, false
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return [16]byte{}, false
	}
	// Parse also takes uppercase digits; only the form String writes
	// reads back as written. Compared without allocating the string.
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	hex.Encode(b[9:13], u[4:6])
	hex.Encode(b[14:18], u[6:8])
	hex.Encode(b[19:23], u[8:10])
	hex.Encode(b[24:], u[10:])
	b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
	return u, string(b[:]) == id
}

// handleBits returns the 64 bits of a client session handle.
func handleBits(h string) (uint64, bool) {
	if !store.IsClientSessionHandle(h) {
		return 0, false
	}
	n, err := strconv.ParseUint(h[len(h)-16:], 16, 64)
	return n, err == nil
}

// handleString is handleBits's inverse.
func handleString(n uint64) string {
	var b [8]byte
	for i := range b {
		b[7-i] = byte(n >> (8 * i))
	}
	return "cs." + hex.EncodeToString(b[:])
}

// encode returns tr as a record; oddID is its id when that is not a
// canonical UUID. tr.ClientSession is already a handle.
func (g *traceRing) encode(tr *store.Trace, tenant uint32) (r traceRec, oddID string) {
	r = traceRec{
		started: tr.StartedAt.UnixMicro(), duration: tr.DurationMs, args: byteCount(tr.ArgBytes), result: byteCount(tr.ResultBytes),
		tenant: tenant, tool: g.names.hold(tr.Tool), code: g.names.hold(tr.ErrorCode),
	}
	if u, ok := canonicalUUID(tr.ID); ok {
		r.id, r.flags = u, flagUUID
	} else {
		oddID = tr.ID
	}
	if n, ok := handleBits(tr.ClientSession); ok {
		r.handle, r.flags = n, r.flags|flagHandle
	}
	if tr.Status == store.TraceError {
		r.flags |= flagError
	}
	if _, err := hex.Decode(r.otel[:], []byte(tr.OtelTraceID)); err == nil && tr.OtelTraceID != "" {
		r.flags |= flagOtel // CheckTrace let only 32 hex digits through
	}
	return r, oddID
}

// byteCount is n as a record holds it (traceRec.args).
func byteCount(n int64) int32 { return int32(min(max(n, math.MinInt32), math.MaxInt32)) }

// id returns the id of the record in slot.
func (g *traceRing) id(slot int32) string {
	r := &g.recs[slot]
	if r.flags&flagUUID != 0 {
		return uuid.UUID(r.id).String()
	}
	return g.oddIDs[slot]
}

// decode returns the record in slot as a trace of tenant.
func (g *traceRing) decode(slot int32, tenant string) store.Trace {
	r := &g.recs[slot]
	tr := store.Trace{
		ID: g.id(slot), Tenant: tenant, Tool: g.names.name(r.tool), ErrorCode: g.names.name(r.code),
		Status: store.TraceOK, DurationMs: r.duration, ArgBytes: int64(r.args), ResultBytes: int64(r.result),
		StartedAt: time.UnixMicro(r.started).UTC(),
	}
	if r.flags&flagError != 0 {
		tr.Status = store.TraceError
	}
	if r.flags&flagHandle != 0 {
		tr.ClientSession = handleString(r.handle)
	}
	if r.flags&flagOtel != 0 {
		tr.OtelTraceID = hex.EncodeToString(r.otel[:])
	}
	return tr
}

// release gives back what the record in slot holds.
func (g *traceRing) release(slot int32) {
	r := &g.recs[slot]
	g.dropNames(r)
	if r.flags&flagUUID == 0 {
		delete(g.oddIDs, slot)
	}
}

// dropNames gives back r's uses of the interned names.
func (g *traceRing) dropNames(r *traceRec) {
	g.names.drop(r.tool)
	g.names.drop(r.code)
}

// interner numbers the tool names and error codes the held traces use,
// counting their uses so that a name no trace holds any more is
// forgotten: the table stays bounded by the traces held, whatever names
// callers send. Number 0 is "".
type interner struct {
	byName map[string]uint32
	names  []string
	refs   []int
	free   []uint32
}

func (n *interner) hold(s string) uint32 {
	if s == "" {
		return 0
	}
	if i, ok := n.byName[s]; ok {
		n.refs[i]++
		return i
	}
	if n.byName == nil {
		n.byName, n.names, n.refs = make(map[string]uint32), []string{""}, []int{0}
	}
	var i uint32
	if k := len(n.free); k > 0 {
		i, n.free = n.free[k-1], n.free[:k-1]
		n.names[i], n.refs[i] = s, 1
	} else {
		i = uint32(len(n.names))
		n.names, n.refs = append(n.names, s), append(n.refs, 1)
	}
	n.byName[s] = i
	return i
}

func (n *interner) drop(i uint32) {
	if i == 0 {
		return
	}
	if n.refs[i]--; n.refs[i] == 0 {
		delete(n.byName, n.names[i])
		n.names[i] = ""
		n.free = append(n.free, i)
	}
}

func (n *interner) name(i uint32) string {
	if i == 0 {
		return ""
	}
	return n.names[i]
}

// lookup returns the number of s, if a held trace uses it.
func (n *interner) lookup(s string) (uint32, bool) {
	i, ok := n.byName[s]
	return i, ok
}
