package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// memoryCols are the columns scanMemory reads, in its order.
const memoryCols = `namespace, key, value, tags, version, created_at, updated_at, expires_at`

// live is the condition for an entry that has not expired at the time
// bound to the placeholder %s. An expired row is absent for every purpose
// until the purge removes it.
const live = `(expires_at IS NULL OR expires_at > %s)`

func scanMemory(row pgx.Row) (store.MemoryEntry, error) {
	var e store.MemoryEntry
	var value []byte
	err := row.Scan(&e.Namespace, &e.Key, &value, &e.Tags, &e.Version, &e.CreatedAt, &e.UpdatedAt, &e.ExpiresAt)
	if err != nil {
		return store.MemoryEntry{}, err
	}
	e.Value = compactJSON(value)
	if e.Tags == nil {
		e.Tags = []string{}
	}
	e.CreatedAt, e.UpdatedAt, e.ExpiresAt = utc(e.CreatedAt), utc(e.UpdatedAt), utcPtr(e.ExpiresAt)
	return e, nil
}

// upsertMemory writes an entry whether or not it exists. An expired row
// is replaced as if absent: version back to 1 and a new created_at. The
// row lock ON CONFLICT takes serialises concurrent writers of one key, so
// no increment is lost. Writers read the clock before they queue for that
// lock (and replicas' clocks differ), so updated_at only moves forward:
// a later version never looks older.
const upsertMemory = `
INSERT INTO memory_entries AS m (tenant, namespace, key, value, tags, version, created_at, updated_at, expires_at)
VALUES ($1, $2, $3, $4, $5, 1, $6, $6, $7)
ON CONFLICT (tenant, namespace, key) DO UPDATE SET
    value = excluded.value,
    tags = excluded.tags,
    version = CASE WHEN m.expires_at <= excluded.updated_at THEN 1 ELSE m.version + 1 END,
    created_at = CASE WHEN m.expires_at <= excluded.updated_at THEN excluded.created_at ELSE m.created_at END,
    updated_at = greatest(m.updated_at, excluded.updated_at),
    expires_at = excluded.expires_at`

// createMemory is upsertMemory for ifVersion 0: it overwrites an existing
// row only when that row has expired.
const createMemory = upsertMemory + `
WHERE m.expires_at <= excluded.updated_at`

// replaceMemory is the write for ifVersion n > 0: only a live row at
// version n is changed, and an absent one is never created.
const replaceMemory = `
UPDATE memory_entries SET value = $4, tags = $5, version = version + 1,
    updated_at = greatest(updated_at, $6), expires_at = $7
WHERE tenant = $1 AND namespace = $2 AND key = $3 AND version = $8
  AND (expires_at IS NULL OR expires_at > $6)
RETURNING ` + memoryCols

// PutMemory creates or replaces an entry.
func (s *Store) PutMemory(ctx context.Context, tenant string, in store.PutMemory) (store.MemoryEntry, error) {
	value, tags, err := s.checkPut(tenant, in)
	if err != nil {
		return store.MemoryEntry{}, err
	}
	now := s.opts.Now()
	var expires *time.Time
	if in.TTL > 0 {
		e := now.Add(in.TTL).Truncate(time.Microsecond)
		expires = &e
	}
	args := []any{tenant, in.Namespace, in.Key, []byte(value), tags, now, expires}
	var sql string
	switch {
	case in.IfVersion == nil:
		sql = upsertMemory + ` RETURNING ` + memoryCols
	case *in.IfVersion == 0:
		sql = createMemory + ` RETURNING ` + memoryCols
	default:
		sql = replaceMemory
		args = append(args, *in.IfVersion)
	}
	e, err := scanMemory(s.pool.QueryRow(ctx, sql, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.MemoryEntry{}, s.putConflict(ctx, tenant, in, now)
	}
	if err != nil {
		return store.MemoryEntry{}, fmt.Errorf("put memory entry: %w", classify(err))
	}
	return e, nil
}

// checkPut validates a write and returns its value in canonical form
// and its tags normalized.
func (s *Store) checkPut(tenant string, in store.PutMemory) (json.RawMessage, []string, error) {
	if err := checkTenant(tenant); err != nil {
		return nil, nil, err
	}
	if err := store.CheckName("namespace", in.Namespace, store.MaxNamespaceLen); err != nil {
		return nil, nil, err
	}
	if err := store.CheckName("key", in.Key, store.MaxKeyLen); err != nil {
		return nil, nil, err
	}
	value, err := store.CheckValue(in.Value, s.opts.JSONLimits())
	if err != nil {
		return nil, nil, err
	}
	tags, err := store.NormalizeTags("tags", in.Tags)
	if err != nil {
		return nil, nil, err
	}
	if in.TTL < 0 {
		return nil, nil, store.Invalid("ttl", "must not be negative")
	}
	if in.IfVersion != nil && *in.IfVersion < 0 {
		return nil, nil, store.Invalid("ifVersion", "must not be negative, got %d", *in.IfVersion)
	}
	return value, tags, nil
}

// putConflict explains why a conditional write changed nothing, naming
// the version the entry is at so the client can re-read and retry.
func (s *Store) putConflict(ctx context.Context, tenant string, in store.PutMemory, now time.Time) error {
	var current int64
	err := s.pool.QueryRow(ctx, `SELECT version FROM memory_entries
		WHERE tenant = $1 AND namespace = $2 AND key = $3 AND (expires_at IS NULL OR expires_at > $4)`,
		tenant, in.Namespace, in.Key, now).Scan(&current)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.Conflictf("memory entry %s/%s does not exist (ifVersion %d)", in.Namespace, in.Key, *in.IfVersion)
	case err != nil:
		return fmt.Errorf("put memory entry: %w", classify(err))
	case *in.IfVersion == 0:
		return store.Conflictf("memory entry %s/%s already exists at version %d", in.Namespace, in.Key, current)
	default:
		return store.Conflictf("memory entry %s/%s is at version %d, not %d", in.Namespace, in.Key, current, *in.IfVersion)
	}
}

func checkEntryName(tenant, namespace, key string) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	if err := store.CheckName("namespace", namespace, store.MaxNamespaceLen); err != nil {
		return err
	}
	return store.CheckName("key", key, store.MaxKeyLen)
}

// GetMemory returns a live entry.
func (s *Store) GetMemory(ctx context.Context, tenant, namespace, key string) (store.MemoryEntry, error) {
	if err := checkEntryName(tenant, namespace, key); err != nil {
		return store.MemoryEntry{}, err
	}
	e, err := scanMemory(s.pool.QueryRow(ctx, `SELECT `+memoryCols+` FROM memory_entries
		WHERE tenant = $1 AND namespace = $2 AND key = $3 AND (expires_at IS NULL OR expires_at > $4)`,
		tenant, namespace, key, s.opts.Now()))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.MemoryEntry{}, store.NotFoundf("memory entry %s/%s", namespace, key)
	}
	if err != nil {
		return store.MemoryEntry{}, fmt.Errorf("get memory entry: %w", classify(err))
	}
	return e, nil
}

// DeleteMemory removes one entry. An expired row is removed too but
// reported as not found, since it was already absent.
func (s *Store) DeleteMemory(ctx context.Context, tenant, namespace, key string) error {
	if err := checkEntryName(tenant, namespace, key); err != nil {
		return err
	}
	var wasLive bool
	err := s.pool.QueryRow(ctx, `DELETE FROM memory_entries
		WHERE tenant = $1 AND namespace = $2 AND key = $3
		RETURNING (expires_at IS NULL OR expires_at > $4)`,
		tenant, namespace, key, s.opts.Now()).Scan(&wasLive)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !wasLive) {
		return store.NotFoundf("memory entry %s/%s", namespace, key)
	}
	if err != nil {
		return fmt.Errorf("delete memory entry: %w", classify(err))
	}
	return nil
}

// BulkDeleteMemory removes the listed keys or every key with prefix in
// one statement (so one transaction) and returns the live keys it
// removed, in byte order.
func (s *Store) BulkDeleteMemory(ctx context.Context, tenant, namespace string, keys []string, prefix string) ([]string, error) {
	if err := checkTenant(tenant); err != nil {
		return nil, err
	}
	if err := store.CheckName("namespace", namespace, store.MaxNamespaceLen); err != nil {
		return nil, err
	}
	if (len(keys) == 0) == (prefix == "") {
		return nil, store.Invalid("keys", "give either keys or prefix, not both or neither")
	}
	b := builder{}
	b.where("tenant = %s", tenant)
	b.where("namespace = %s", namespace)
	if prefix != "" {
		if err := checkPrefix(prefix); err != nil {
			return nil, err
		}
		wherePrefix(&b, prefix)
	} else {
		if len(keys) > store.MaxBulkKeys {
			return nil, store.Invalid("keys", "has %d entries; the limit is %d", len(keys), store.MaxBulkKeys)
		}
		for i, k := range keys {
			if err := store.CheckName(fmt.Sprintf("keys[%d]", i), k, store.MaxKeyLen); err != nil {
				return nil, err
			}
		}
		b.where("key = ANY(%s)", keys)
	}
	sql := `DELETE FROM memory_entries` + b.clause() +
		` RETURNING key, (expires_at IS NULL OR expires_at > ` + b.arg(s.opts.Now()) + `)`
	type removed struct {
		key  string
		live bool
	}
	rows, err := collect(ctx, s.pool, sql, b.args, func(r pgx.Row) (removed, error) {
		var x removed
		return x, r.Scan(&x.key, &x.live)
	})
	if err != nil {
		return nil, fmt.Errorf("bulk delete memory: %w", classify(err))
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		if r.live {
			out = append(out, r.key)
		}
	}
	slices.Sort(out)
	return out, nil
}

// checkPrefix validates a key prefix: free text like a key but possibly
// empty, and without control characters since no key has them.
func checkPrefix(prefix string) error {
	if err := store.CheckText("prefix", prefix, store.MaxKeyLen, false); err != nil {
		return err
	}
	for i, r := range prefix {
		if unicode.IsControl(r) {
			return store.Invalid("prefix", "contains a control character (U+%04X) at byte %d", r, i)
		}
	}
	return nil
}

// wherePrefix selects the keys starting with prefix. The condition is
// spelled twice: starts_with is exact, and the equivalent key range is
// what a prepared (generic) plan can use on the primary key; starts_with
// alone becomes a range only when the planner sees the prefix's value.
func wherePrefix(b *builder, prefix string) {
	b.where("starts_with(key, %s)", prefix)
	b.where("key >= %s", prefix)
	if upper, ok := prefixUpperBound(prefix); ok {
		b.where("key < %s", upper)
	}
}

// prefixUpperBound returns the smallest string greater than every string
// that starts with prefix, in byte order: prefix with its last code point
// incremented (UTF-8 preserves code-point order bytewise, and the result
// must stay valid UTF-8 to be a text parameter). ok is false when no such
// bound exists (the prefix is all U+10FFFF).
func prefixUpperBound(prefix string) (string, bool) {
	runes := []rune(prefix)
	for len(runes) > 0 {
		last := runes[len(runes)-1]
		if last < unicode.MaxRune {
			next := last + 1
			if next >= 0xD800 && next <= 0xDFFF { // surrogates are not valid UTF-8
				next = 0xE000
			}
			runes[len(runes)-1] = next
			return string(runes), true
		}
		runes = runes[:len(runes)-1]
	}
	return "", false
}

// ListMemory lists live entries in (namespace, key) byte order.
func (s *Store) ListMemory(ctx context.Context, tenant string, q store.ListMemory) (store.Page[store.MemoryEntry], error) {
	var page store.Page[store.MemoryEntry]
	if err := checkTenant(tenant); err != nil {
		return page, err
	}
	if q.Namespace != "" {
		if err := store.CheckName("namespace", q.Namespace, store.MaxNamespaceLen); err != nil {
			return page, err
		}
	}
	if err := checkPrefix(q.Prefix); err != nil {
		return page, err
	}
	tags, err := store.NormalizeTags("tags", q.Tags)
	if err != nil {
		return page, err
	}
	limit, err := store.CheckLimit(q.Limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return page, err
	}
	b := builder{}
	b.where("tenant = %s", tenant)
	b.where(live, s.opts.Now())
	if q.Namespace != "" {
		b.where("namespace = %s", q.Namespace)
	}
	if q.Prefix != "" {
		wherePrefix(&b, q.Prefix)
	}
	if len(tags) > 0 {
		b.where("tags @> %s", tags)
	}
	if q.Cursor != "" {
		_, ns, key, err := store.DecodeCursor("memory", q.Cursor)
		if err != nil {
			return page, err
		}
		b.where(`(namespace, key) > (%s, %s)`, ns, key)
	}
	sql := `SELECT ` + memoryCols + ` FROM memory_entries` + b.clause() +
		` ORDER BY namespace COLLATE "C", key COLLATE "C" LIMIT ` + b.arg(limit+1)
	items, err := collect(ctx, s.pool, sql, b.args, scanMemory)
	if err != nil {
		return page, fmt.Errorf("list memory: %w", classify(err))
	}
	if len(items) > limit {
		items = items[:limit]
		last := items[limit-1]
		page.NextCursor = store.EncodeCursor("memory", time.Time{}, last.Namespace, last.Key)
	}
	page.Items = items
	return page, nil
}

// RecentMemory lists live entries most recently updated first; ties go
// to the larger MemoryID, which for names without control characters is
// (namespace, key) descending.
func (s *Store) RecentMemory(ctx context.Context, tenant string, after *store.Pos, limit int) ([]store.MemoryEntry, error) {
	if err := checkTenant(tenant); err != nil {
		return nil, err
	}
	limit, err := store.CheckLimit(limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return nil, err
	}
	b := builder{}
	b.where("tenant = %s", tenant)
	b.where(live, s.opts.Now())
	if after != nil {
		ns, key := store.SplitMemoryID(after.ID)
		b.where(`(updated_at, namespace, key) < (%s, %s, %s)`, after.UpdatedAt, ns, key)
	}
	sql := `SELECT ` + memoryCols + ` FROM memory_entries` + b.clause() +
		` ORDER BY updated_at DESC, namespace COLLATE "C" DESC, key COLLATE "C" DESC LIMIT ` + b.arg(limit)
	items, err := collect(ctx, s.pool, sql, b.args, scanMemory)
	if err != nil {
		return nil, fmt.Errorf("recent memory: %w", classify(err))
	}
	return items, nil
}

// purgeBatch bounds how many rows one purge statement deletes, so a large
// backlog neither holds locks on it all at once nor runs into the
// statement timeout.
const purgeBatch = 10000

// PurgeExpiredMemory deletes expired entries of every tenant.
func (s *Store) PurgeExpiredMemory(ctx context.Context) (int64, error) {
	// The outer expires_at test is re-checked on a row a concurrent write
	// has just renewed, so a renewed entry is not deleted.
	n, err := s.purge(ctx, `DELETE FROM memory_entries WHERE expires_at <= $1
		AND (tenant, namespace, key) IN (
			SELECT tenant, namespace, key FROM memory_entries WHERE expires_at <= $1 LIMIT $2)`,
		s.opts.Now())
	if err != nil {
		return n, fmt.Errorf("purge expired memory: %w", err)
	}
	return n, nil
}

// purge runs a batched DELETE (parameters: the cut-off, the batch size)
// until a batch comes back short, and returns the total deleted.
func (s *Store) purge(ctx context.Context, sql string, cutoff time.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, sql, cutoff, purgeBatch)
		if err != nil {
			return total, classify(err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < purgeBatch {
			return total, nil
		}
	}
}

// jsonValue is the parameter form of a JSON document for a jsonb column;
// nil becomes NULL.
func jsonValue(v json.RawMessage) any {
	if v == nil {
		return nil
	}
	return []byte(v)
}
