package cache

import (
	"encoding/json"
	"reflect"
	"unsafe"
)

// SizeReporter is implemented by values that know their own memory size.
// The default sizer trusts it instead of estimating; implement it for
// values whose size the estimate below would get wrong (memory-mapped or
// pooled buffers, values sharing large read-only parts).
type SizeReporter interface {
	SizeBytes() int64
}

// DefaultSizer returns the sizer a cache uses without WithSizer. An
// entry's size is
//
//	entryOverhead + indirect(key) + indirect(value)
//
// where entryOverhead is the fixed cost of one entry: the list node that
// holds the key and value inline, plus its map slot (key, pointer and
// control byte at the map's 7/8 maximum load). indirect is the memory a
// key or value reaches beyond its inline header:
//
//   - string: its length; []byte and json.RawMessage (any slice of bytes):
//     its capacity, since that is what the backing array holds on to;
//   - a SizeReporter: what SizeBytes reports (taken as the whole value, so
//     its header is counted twice, a few bytes);
//   - a type with no pointers (numbers, arrays and structs of them): 0;
//   - anything else: a reflection walk, see EstimateSize.
//
// The string and byte-slice cases are decided once per cache from the
// type, so they cost a length read per Set; the walk costs time
// proportional to the value, so values stored on a hot path should be
// []byte, json.RawMessage, strings or SizeReporters.
func DefaultSizer[K comparable, V any]() func(K, V) int64 {
	overhead := entryOverhead[K, V]()
	ks, vs := indirectSizer[K](), indirectSizer[V]()
	return func(k K, v V) int64 { return overhead + ks(k) + vs(v) }
}

// Pointer and map header sizes on the running platform.
const (
	ptrSize    = int64(unsafe.Sizeof(uintptr(0)))
	mapHeader  = 48 // runtime map header (swiss table: directory, seed, counts)
	chanHeader = 96 // runtime hchan
)

// entryOverhead is the fixed per-entry cost; see DefaultSizer.
func entryOverhead[K comparable, V any]() int64 {
	node := int64(reflect.TypeFor[entry[K, V]]().Size())
	slot := int64(reflect.TypeFor[K]().Size()) + ptrSize + 1
	return node + (slot*8+6)/7
}

// indirectSizer picks, once per type, how to measure what a T reaches
// beyond its inline size.
func indirectSizer[T any]() func(T) int64 {
	t := reflect.TypeFor[T]()
	switch {
	case t.Implements(reflect.TypeFor[SizeReporter]()):
		return func(v T) int64 {
			if r, ok := any(v).(SizeReporter); ok {
				return r.SizeBytes()
			}
			return 0 // a nil interface value
		}
	case t.Kind() == reflect.String:
		// T's underlying type is string: read it without boxing.
		return func(v T) int64 { return int64(len(*(*string)(unsafe.Pointer(&v)))) }
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		// T's underlying type is []byte (json.RawMessage is one).
		return func(v T) int64 { return int64(cap(*(*[]byte)(unsafe.Pointer(&v)))) }
	case !hasIndirect(t):
		return func(T) int64 { return 0 }
	case t.Kind() == reflect.Interface:
		// The interface header is inline; the value it holds is boxed
		// (or, for a pointer, reached through the data word; the 8 bytes
		// EstimateSize then adds for the pointer itself are the error).
		return func(v T) int64 { return EstimateSize(any(v)) }
	default:
		return func(v T) int64 {
			var w walker
			return w.walk(reflect.ValueOf(&v).Elem())
		}
	}
}

// EstimateSize estimates the bytes of memory that v occupies: its inline
// size plus everything it reaches through pointers, slices, strings, maps,
// interfaces and channels. It is the estimate the default sizer uses,
// exported so that other packages charge memory the same way.
//
// The walk is an approximation, in these ways:
//   - memory reached through several pointers, maps or slices is counted
//     once per address and type (two slices of one array with different
//     starts count twice); a string is counted at every reference;
//   - a map counts its header plus one slot per entry at the 7/8 load
//     factor, rounded up to a power of two, plus what its keys and values
//     reach; the runtime's indirect storage of large keys is ignored;
//   - a channel counts its header and buffer, not what buffered values
//     reach; functions and unsafe pointers count as nothing behind them;
//   - SizeReporter is honoured for v itself, not for values inside it;
//   - allocator rounding to size classes is ignored.
//
// It is iterative over the heap objects it visits, so a long linked list
// does not grow the stack, and costs time proportional to what v reaches.
func EstimateSize(v any) int64 {
	if v == nil {
		return 0
	}
	if r, ok := v.(SizeReporter); ok {
		return r.SizeBytes()
	}
	return int64(reflect.TypeOf(v).Size()) + estimateIndirect(v)
}

// estimateIndirect is what v reaches beyond its inline size.
func estimateIndirect(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x))
	case []byte:
		return int64(cap(x))
	case json.RawMessage:
		return int64(cap(x))
	case SizeReporter:
		return x.SizeBytes()
	}
	var w walker
	return w.walk(reflect.ValueOf(v))
}

// hasIndirect reports whether a value of type t can reach memory beyond
// its inline size. It terminates on recursive types because recursion
// needs a pointer, slice or map, which answer at once.
func hasIndirect(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map, reflect.Chan:
		return true
	case reflect.Array:
		return t.Len() > 0 && hasIndirect(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasIndirect(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// walker sums what a value reaches. Heap objects go on a work list rather
// than the Go stack; recursion is only through inline structs and arrays,
// whose depth the type bounds.
type walker struct {
	seen     map[uintptr]reflect.Type // address -> type first counted there
	work     []job
	indirect map[reflect.Type]bool // memoised hasIndirect
}

// job is a heap object whose own size is counted and whose contents are
// still to walk: elements of a slice (elems), entries of a map, or a value.
type job struct {
	v     reflect.Value
	elems bool
}

func (w *walker) walk(v reflect.Value) int64 {
	n := w.reach(v)
	for len(w.work) > 0 {
		j := w.work[len(w.work)-1]
		w.work = w.work[:len(w.work)-1]
		switch {
		case j.elems:
			for i := range j.v.Len() {
				n += w.reach(j.v.Index(i))
			}
		case j.v.Kind() == reflect.Map:
			it := j.v.MapRange()
			for it.Next() {
				n += w.reach(it.Key()) + w.reach(it.Value())
			}
		default:
			n += w.reach(j.v)
		}
	}
	return n
}

// has is hasIndirect, memoised for the walk.
func (w *walker) has(t reflect.Type) bool {
	h, ok := w.indirect[t]
	if !ok {
		if w.indirect == nil {
			w.indirect = make(map[reflect.Type]bool)
		}
		h = hasIndirect(t)
		w.indirect[t] = h
	}
	return h
}

// first reports whether the object at addr of type t is to be counted:
// not when it was counted before. An address reached as two types (a
// struct and its first field) is counted as each; only the first type is
// remembered, which is enough for the common case.
func (w *walker) first(addr uintptr, t reflect.Type) bool {
	if seen, ok := w.seen[addr]; ok {
		return seen != t
	}
	if w.seen == nil {
		w.seen = make(map[uintptr]reflect.Type)
	}
	w.seen[addr] = t
	return true
}

// reach counts the heap objects v points to directly and queues their
// contents.
func (w *walker) reach(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.String:
		return int64(v.Len())
	case reflect.Pointer:
		if v.IsNil() || !w.first(v.Pointer(), v.Type()) {
			return 0
		}
		el := v.Elem()
		if w.has(el.Type()) {
			w.work = append(w.work, job{v: el})
		}
		return int64(el.Type().Size())
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		el := v.Elem()
		var n int64
		switch el.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		default:
			n = int64(el.Type().Size()) // the boxed copy
		}
		if w.has(el.Type()) {
			w.work = append(w.work, job{v: el})
		}
		return n
	case reflect.Slice:
		if v.Cap() == 0 || !w.first(v.Pointer(), v.Type()) {
			return 0
		}
		et := v.Type().Elem()
		if w.has(et) && v.Len() > 0 {
			w.work = append(w.work, job{v: v, elems: true})
		}
		return int64(v.Cap()) * int64(et.Size())
	case reflect.Array:
		var n int64
		if w.has(v.Type().Elem()) {
			for i := range v.Len() {
				n += w.reach(v.Index(i))
			}
		}
		return n
	case reflect.Struct:
		var n int64
		for i := range v.NumField() {
			if f := v.Field(i); w.has(f.Type()) {
				n += w.reach(f)
			}
		}
		return n
	case reflect.Map:
		if v.IsNil() || !w.first(v.Pointer(), v.Type()) {
			return 0
		}
		t := v.Type()
		if w.has(t.Key()) || w.has(t.Elem()) {
			w.work = append(w.work, job{v: v})
		}
		return mapHeader + mapSlots(v.Len())*(int64(t.Key().Size())+int64(t.Elem().Size())+1)
	case reflect.Chan:
		if v.IsNil() || !w.first(v.Pointer(), v.Type()) {
			return 0
		}
		return chanHeader + int64(v.Cap())*int64(v.Type().Elem().Size())
	}
	return 0 // numbers, bools, functions, unsafe pointers
}

// mapSlots is the slot count of a map of n entries: n at a 7/8 load
// factor, rounded up to a power of two, at least one group of 8.
func mapSlots(n int) int64 {
	if n == 0 {
		return 0
	}
	need := (int64(n)*8 + 6) / 7
	slots := int64(8)
	for slots < need {
		slots *= 2
	}
	return slots
}
