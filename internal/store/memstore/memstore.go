// Package memstore is the embedded store.Store: everything lives in
// process memory and is lost on restart. It is a second implementation
// of the contract, not a mock — it passes the same storetest suite as
// the PostgreSQL store — so `go run ./cmd/api` behaves like a real
// deployment, only without durability.
//
// One RWMutex guards all state. That serializes writers, which makes
// every version check-and-bump trivially atomic; it is the embedded
// development store, so simplicity beats write throughput.
package memstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// Store is the in-memory store.Store. The zero value is not usable; call
// New.
type Store struct {
	opts store.Options

	mu      sync.RWMutex
	tenants map[string]*tenantData
	// upstreams are deployment-wide, so outside tenants; upstreams.go
	// creates the map on first write.
	upstreams map[string]*store.UpstreamRecord
	// apiKeys are deployment-wide too, by id; apikeys.go.
	apiKeys map[string]*store.APIKeyRecord
	// traceRing bounds the traces of all tenants together; tracering.go.
	traceRing traceRing
	// tenantList numbers the tenants, for the trace records.
	tenantList []*tenantData
}

// tenantData is everything one tenant owns. Keeping a map per tenant
// makes scoping structural: a lookup cannot reach another tenant's rows.
type tenantData struct {
	memory   map[memKey]*entry
	sessions map[string]*store.Session
	agents   map[string]*store.Agent
	traces   traceIndex
	idx      uint32 // in Store.tenantList
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New(opts store.Options) *Store {
	return &Store{opts: opts, tenants: make(map[string]*tenantData)}
}

// Close releases nothing: the data is garbage once the Store is.
func (s *Store) Close() {}

// Ping always answers; there is no database to lose.
func (s *Store) Ping(ctx context.Context) error { return ctx.Err() }

// begin is what every method does first: give up if the caller already
// has, and validate the tenant.
func begin(ctx context.Context, tenant string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return store.CheckName("tenant", tenant, store.MaxIDLen)
}

// read returns tenant's data for reading, or nil if it has none. The
// caller holds s.mu.
func (s *Store) read(tenant string) *tenantData { return s.tenants[tenant] }

// write returns tenant's data, creating it. The caller holds s.mu for
// writing.
func (s *Store) write(tenant string) *tenantData {
	td := s.tenants[tenant]
	if td == nil {
		td = &tenantData{
			memory:   make(map[memKey]*entry),
			sessions: make(map[string]*store.Session),
			agents:   make(map[string]*store.Agent),
			idx:      uint32(len(s.tenantList)),
		}
		s.tenants[tenant] = td
		s.tenantList = append(s.tenantList, td)
	}
	return td
}

// checkOptionalName validates a filter that may be empty.
func checkOptionalName(field, s string, max int) error {
	if s == "" {
		return nil
	}
	return store.CheckName(field, s, max)
}

// paginate turns items, already sorted and past the cursor, into a page
// of at most limit items whose NextCursor is cursorOf the last one when
// more follow.
func paginate[T any](items []T, limit int, cursorOf func(T) string) store.Page[T] {
	if len(items) <= limit {
		return store.Page[T]{Items: nonNil(items)}
	}
	items = items[:limit]
	return store.Page[T]{Items: items, NextCursor: cursorOf(items[len(items)-1])}
}

// recent returns at most limit of items, most recently updated first,
// strictly after pos when pos is given. It keeps only the best limit
// items seen so far rather than sorting them all: a page is small and a
// tenant's items may be many.
func recent[T any](items []T, posOf func(T) store.Pos, after *store.Pos, limit int) []T {
	type keyed struct {
		pos  store.Pos
		item T
	}
	top := make([]keyed, 0, limit+1) // descending
	for _, it := range items {
		p := posOf(it)
		if after != nil && comparePos(p, *after) >= 0 {
			continue
		}
		if len(top) == limit && comparePos(p, top[len(top)-1].pos) <= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, p, func(k keyed, p store.Pos) int { return comparePos(p, k.pos) })
		top = slices.Insert(top, i, keyed{p, it})
		if len(top) > limit {
			top = top[:limit]
		}
	}
	out := make([]T, len(top))
	for i, k := range top {
		out[i] = k.item
	}
	return out
}

// comparePos orders positions by (UpdatedAt, ID) ascending.
func comparePos(a, b store.Pos) int {
	if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// byTimeDesc orders (time, id) pairs newest first, the order of session
// and trace listings.
func byTimeDesc(at, bt time.Time, aid, bid string) int {
	if c := bt.Compare(at); c != 0 {
		return c
	}
	return cmp.Compare(bid, aid)
}

// nonNil returns s, or an empty slice for nil, so that JSON shows [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
