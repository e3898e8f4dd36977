package handlers

import "sync"

// Bounds of validMemo: at most validMemoEntries argument texts of at most
// validMemoArgBytes each, about 400 KiB with the maps' own overhead,
// however many tools the registry holds (a gateway can hold thousands).
const (
	validMemoEntries  = 1024
	validMemoArgBytes = 256
)

// validMemo remembers argument texts that passed their tool's
// inputSchema, so that a tool called again with the same arguments (an
// agent reading the same entry again, the cached read of
// docs/adr/0056-cheap-by-default.md) is not validated again. Validation is
// a pure function of the compiled schema and the argument bytes, and it
// was the largest single cost of such a call after the network. Only
// successes are kept: a call that fails validation is validated every
// time, for its message. One memo serves the whole registry, keyed by
// schema; when it holds validMemoEntries texts it starts over, so
// arguments that change on every call cost an insert and nothing more,
// and the schemas of tools since replaced are let go.
type validMemo struct {
	mu    sync.RWMutex
	seen  map[*argSchema]map[string]struct{}
	count int
}

// has reports whether args passed s before.
func (m *validMemo) has(s *argSchema, args []byte) bool {
	if m == nil || len(args) > validMemoArgBytes {
		return false
	}
	m.mu.RLock()
	_, ok := m.seen[s][string(args)] // no copy of args for a lookup
	m.mu.RUnlock()
	return ok
}

// add records that args passed s. It copies args, which alias a request
// buffer that is reused.
func (m *validMemo) add(s *argSchema, args []byte) {
	if m == nil || len(args) > validMemoArgBytes {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.count >= validMemoEntries || m.seen == nil {
		m.seen, m.count = make(map[*argSchema]map[string]struct{}), 0
	}
	texts := m.seen[s]
	if texts == nil {
		texts = make(map[string]struct{})
		m.seen[s] = texts
	}
	if _, dup := texts[string(args)]; !dup {
		texts[string(args)] = struct{}{}
		m.count++
	}
}

// len is the number of texts held.
func (m *validMemo) len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.count
}
