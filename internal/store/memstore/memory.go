package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// memKey identifies an entry within a tenant.
type memKey struct{ namespace, key string }

// entry is a stored memory entry and its search text, tokenized once at
// write time.
type entry struct {
	store.MemoryEntry
	fields [][]string // see searchFields
}

// live reports whether e has not expired at now.
func (e *entry) live(now time.Time) bool {
	return e.ExpiresAt == nil || now.Before(*e.ExpiresAt)
}

// copyOut returns a copy of e that shares nothing with the store.
func (e *entry) copyOut() store.MemoryEntry {
	out := e.MemoryEntry
	out.Value = slices.Clone(e.Value)
	out.Tags = slices.Clone(e.Tags)
	if e.ExpiresAt != nil {
		t := *e.ExpiresAt
		out.ExpiresAt = &t
	}
	return out
}

// checkEntryName validates a namespace and key.
func checkEntryName(namespace, key string) error {
	if err := store.CheckName("namespace", namespace, store.MaxNamespaceLen); err != nil {
		return err
	}
	return store.CheckName("key", key, store.MaxKeyLen)
}

// PutMemory writes an entry, conditionally when in.IfVersion is set.
func (s *Store) PutMemory(ctx context.Context, tenant string, in store.PutMemory) (store.MemoryEntry, error) {
	if err := begin(ctx, tenant); err != nil {
		return store.MemoryEntry{}, err
	}
	if err := checkEntryName(in.Namespace, in.Key); err != nil {
		return store.MemoryEntry{}, err
	}
	value, err := store.CheckValue(in.Value, s.opts.JSONLimits())
	if err != nil {
		return store.MemoryEntry{}, err
	}
	tags, err := store.NormalizeTags("tags", in.Tags)
	if err != nil {
		return store.MemoryEntry{}, err
	}
	if in.TTL < 0 {
		return store.MemoryEntry{}, store.Invalid("ttl", "must not be negative")
	}
	if in.IfVersion != nil && *in.IfVersion < 0 {
		return store.MemoryEntry{}, store.Invalid("ifVersion", "must not be negative")
	}
	fields, err := searchFields(in.Key, value, tags)
	if err != nil {
		return store.MemoryEntry{}, fmt.Errorf("tokenize a memory value: %w", err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	// The clock is read under the lock so that a later version never has
	// an earlier updatedAt.
	now := s.opts.Now()
	td := s.write(tenant)
	k := memKey{in.Namespace, in.Key}
	cur := td.memory[k]
	if cur != nil && !cur.live(now) {
		cur = nil // absent for every purpose; the write below replaces it
	}
	if in.IfVersion != nil {
		switch want := *in.IfVersion; {
		case cur == nil && want != 0:
			return store.MemoryEntry{}, store.Conflictf("memory %q/%q does not exist, expected version %d", in.Namespace, in.Key, want)
		case cur != nil && cur.Version != want:
			return store.MemoryEntry{}, store.Conflictf("memory %q/%q is at version %d, expected %d", in.Namespace, in.Key, cur.Version, want)
		}
	}
	e := &entry{
		MemoryEntry: store.MemoryEntry{
			Namespace: in.Namespace, Key: in.Key, Value: value, Tags: tags,
			Version: 1, CreatedAt: now, UpdatedAt: now,
		},
		fields: fields,
	}
	if cur != nil {
		e.Version = cur.Version + 1
		e.CreatedAt = cur.CreatedAt
	}
	if in.TTL > 0 {
		exp := now.Add(in.TTL).Truncate(time.Microsecond)
		e.ExpiresAt = &exp
	}
	td.memory[k] = e
	return e.copyOut(), nil
}

// GetMemory returns a live entry.
func (s *Store) GetMemory(ctx context.Context, tenant, namespace, key string) (store.MemoryEntry, error) {
	if err := begin(ctx, tenant); err != nil {
		return store.MemoryEntry{}, err
	}
	if err := checkEntryName(namespace, key); err != nil {
		return store.MemoryEntry{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if td := s.read(tenant); td != nil {
		if e := td.memory[memKey{namespace, key}]; e != nil && e.live(s.opts.Now()) {
			return e.copyOut(), nil
		}
	}
	return store.MemoryEntry{}, store.NotFoundf("memory %q/%q", namespace, key)
}

// liveEntries returns tenant's live entries that pass keep, unordered.
// The caller holds s.mu.
func (s *Store) liveEntries(tenant string, keep func(*entry) bool) []*entry {
	td := s.read(tenant)
	if td == nil {
		return nil
	}
	now := s.opts.Now()
	var out []*entry
	for _, e := range td.memory {
		if e.live(now) && keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// hasTags reports whether every one of want (sorted) is in have (sorted).
func hasTags(have, want []string) bool {
	for _, t := range want {
		if _, ok := slices.BinarySearch(have, t); !ok {
			return false
		}
	}
	return true
}

// checkPrefix validates a key prefix, which may be empty.
func checkPrefix(prefix string) error {
	return checkOptionalName("prefix", prefix, store.MaxKeyLen)
}

// ListMemory lists live entries in (namespace, key) byte order.
func (s *Store) ListMemory(ctx context.Context, tenant string, q store.ListMemory) (store.Page[store.MemoryEntry], error) {
	var none store.Page[store.MemoryEntry]
	if err := begin(ctx, tenant); err != nil {
		return none, err
	}
	if err := checkOptionalName("namespace", q.Namespace, store.MaxNamespaceLen); err != nil {
		return none, err
	}
	if err := checkPrefix(q.Prefix); err != nil {
		return none, err
	}
	tags, err := store.NormalizeTags("tags", q.Tags)
	if err != nil {
		return none, err
	}
	limit, err := store.CheckLimit(q.Limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return none, err
	}
	var after *memKey
	if q.Cursor != "" {
		_, ns, key, err := store.DecodeCursor("memory", q.Cursor)
		if err != nil {
			return none, err
		}
		after = &memKey{ns, key}
	}

	s.mu.RLock()
	defer s.mu.RUnlock()
	entries := s.liveEntries(tenant, func(e *entry) bool {
		return (q.Namespace == "" || e.Namespace == q.Namespace) &&
			strings.HasPrefix(e.Key, q.Prefix) &&
			hasTags(e.Tags, tags) &&
			(after == nil || compareKeys(memKey{e.Namespace, e.Key}, *after) > 0)
	})
	slices.SortFunc(entries, func(a, b *entry) int {
		return compareKeys(memKey{a.Namespace, a.Key}, memKey{b.Namespace, b.Key})
	})
	if len(entries) > limit+1 {
		entries = entries[:limit+1]
	}
	out := make([]store.MemoryEntry, len(entries))
	for i, e := range entries {
		out[i] = e.copyOut()
	}
	return paginate(out, limit, func(e store.MemoryEntry) string {
		return store.EncodeCursor("memory", time.Time{}, e.Namespace, e.Key)
	}), nil
}

// compareKeys orders keys by namespace, then key, bytewise.
func compareKeys(a, b memKey) int {
	if c := strings.Compare(a.namespace, b.namespace); c != 0 {
		return c
	}
	return strings.Compare(a.key, b.key)
}

// DeleteMemory removes one live entry.
func (s *Store) DeleteMemory(ctx context.Context, tenant, namespace, key string) error {
	if err := begin(ctx, tenant); err != nil {
		return err
	}
	if err := checkEntryName(namespace, key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	td := s.read(tenant)
	if td == nil {
		return store.NotFoundf("memory %q/%q", namespace, key)
	}
	k := memKey{namespace, key}
	if e := td.memory[k]; e == nil || !e.live(s.opts.Now()) {
		return store.NotFoundf("memory %q/%q", namespace, key)
	}
	delete(td.memory, k)
	return nil
}

// BulkDeleteMemory removes the listed keys, or every key with prefix,
// and returns the live ones it removed, in key order.
func (s *Store) BulkDeleteMemory(ctx context.Context, tenant, namespace string, keys []string, prefix string) ([]string, error) {
	if err := begin(ctx, tenant); err != nil {
		return nil, err
	}
	if err := store.CheckName("namespace", namespace, store.MaxNamespaceLen); err != nil {
		return nil, err
	}
	switch {
	case len(keys) > 0 && prefix != "":
		return nil, store.Invalid("keys", "give keys or prefix, not both")
	case len(keys) == 0 && prefix == "":
		return nil, store.Invalid("keys", "give keys or prefix")
	case len(keys) > store.MaxBulkKeys:
		return nil, store.Invalid("keys", "has %d entries; the limit is %d", len(keys), store.MaxBulkKeys)
	}
	for i, k := range keys {
		if err := store.CheckName(fmt.Sprintf("keys[%d]", i), k, store.MaxKeyLen); err != nil {
			return nil, err
		}
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	removed := []string{}
	td := s.read(tenant)
	if td == nil {
		return removed, nil
	}
	now := s.opts.Now()
	// Expired entries stay for PurgeExpiredMemory to count.
	remove := func(k memKey) {
		if e := td.memory[k]; e != nil && e.live(now) {
			delete(td.memory, k)
			removed = append(removed, k.key)
		}
	}
	if prefix == "" {
		for _, key := range keys {
			remove(memKey{namespace, key})
		}
	} else {
		for k := range td.memory {
			if k.namespace == namespace && strings.HasPrefix(k.key, prefix) {
				remove(k)
			}
		}
	}
	slices.Sort(removed)
	return removed, nil
}

// RecentMemory lists live entries most recently updated first.
func (s *Store) RecentMemory(ctx context.Context, tenant string, after *store.Pos, limit int) ([]store.MemoryEntry, error) {
	if err := begin(ctx, tenant); err != nil {
		return nil, err
	}
	limit, err := store.CheckLimit(limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	entries := recent(s.liveEntries(tenant, func(*entry) bool { return true }), func(e *entry) store.Pos {
		return store.Pos{UpdatedAt: e.UpdatedAt, ID: store.MemoryID(e.Namespace, e.Key)}
	}, after, limit)
	out := make([]store.MemoryEntry, len(entries))
	for i, e := range entries {
		out[i] = e.copyOut()
	}
	return out, nil
}

// PurgeExpiredMemory deletes the expired entries of every tenant.
func (s *Store) PurgeExpiredMemory(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	var n int64
	for _, td := range s.tenants {
		for k, e := range td.memory {
			if !e.live(now) {
				delete(td.memory, k)
				n++
			}
		}
	}
	return n, nil
}
