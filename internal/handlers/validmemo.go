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
// schema and forgetting a schema when its tool is replaced or removed;
// when it holds validMemoEntries texts it starts over, so arguments that
// change on every call cost an insert, or nothing when another call holds
// the memo.
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
// buffer that is reused. A call that finds the memo busy does not wait
// for it: remembering is worth less than a wait on every call whose
// arguments are new (writes with fresh keys).
func (m *validMemo) add(s *argSchema, args []byte) {
	if m == nil || len(args) > validMemoArgBytes || !m.mu.TryLock() {
		return
	}
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

// keepOnly forgets the texts of every schema live does not hold: a tool
// replaced or removed gets a new schema, or none, and the memo must not
// keep the old one's compilation alive (an upstream's tools are compiled
// again on every sync of its list).
func (m *validMemo) keepOnly(live map[*argSchema]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for s, texts := range m.seen {
		if !live[s] {
			m.count -= len(texts)
			delete(m.seen, s)
		}
	}
}

// len is the number of texts held.
func (m *validMemo) len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.count
}
