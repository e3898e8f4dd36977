// Package cache is the runtime's in-process cache: generic over key and
// value, bounded in bytes and entries, with per-entry TTL and priority. It
// implements docs/spec/optimization-prd.md, Feature 1, and enforces
// INV-MCP-CACHE-001..006; the store's two-tier cache builds on it as its
// first tier.
//
// # Structure
//
// One mutex guards a map from key to entry node. Each node is also linked
// into two intrusive structures, so that no operation scans the cache:
//
//   - a policy list for its priority tier (policy.go): one per tier (Low,
//     Normal, High), each ordered by the eviction policy. LRU and FIFO are
//     doubly-linked lists (LRU moves a node to the front on Get, FIFO does
//     not); LFU is the O(1) frequency-bucket structure. The next victim is
//     the victim of the lowest non-empty tier, so all Low entries go before
//     any Normal one and all Normal before any High;
//   - with a TTL, an expiry class (expiry.go): entries of equal TTL in
//     expiry order, and a heap of classes by first expiry, so the entry
//     that expires first is found in O(1).
//
// Get is O(1) for every policy. Set is O(1) plus O(1) per evicted entry,
// apart from an O(log d) heap step when the first entry of an expiry class
// changes (d: distinct TTLs in the cache, in practice one or two). Nothing
// sorts: the PRD's problem P5 was a sort of the whole cache per eviction.
//
// # Bounds and eviction
//
// The bounds are hard: CurrentSizeBytes <= MaxSizeBytes (INV-MCP-CACHE-001)
// and Len <= MaxEntries (INV-MCP-CACHE-002) hold after every operation,
// because Set makes room before it inserts. An insert that would take the
// cache past HighWaterMark × MaxSizeBytes evicts down to LowWaterMark ×
// MaxSizeBytes, so a full cache evicts in batches rather than on every
// Set. Expired entries go first, then live ones by tier and policy
// (INV-MCP-CACHE-004 for LRU). An entry larger than MaxSizeBytes is
// refused with ErrTooLarge and evicts nothing.
//
// # Expiry
//
// Get, Peek and Delete check the TTL of the entry they find, so an expired
// entry is never returned (INV-MCP-CACHE-003): expiry is exact whatever
// the cleanup interval. Every CleanupInterval a goroutine removes all
// expired entries and recomputes CurrentSizeBytes as the sum of the sizes
// of the entries left (INV-MCP-CACHE-006), and records LastCleanupAt.
// Close stops and waits for that goroutine (INV-MCP-XC-003). Time comes
// from an injectable clock (WithClock).
//
// # Sizes
//
// An entry's size is computed once, by Set, before the lock is taken: by
// WithSizer's function or by DefaultSizer, which charges a fixed per-entry
// overhead (node and map slot) plus what key and value reach: exact for
// strings, []byte, json.RawMessage and SizeReporters, a documented
// reflection estimate otherwise (EstimateSize). CurrentSizeBytes is the
// exact sum of the stored sizes, updated in the same critical section as
// the map.
//
// # Concurrency
//
// Every exported method takes the lock once and leaves the cache
// consistent before releasing it, so no partial state is visible
// (INV-MCP-CACHE-005); Stats is one snapshot. The OnEvict callback runs
// after the lock is released. The cache never fails a caller for its own
// sake: a miss is the worst it does, so a tool runs uncached when the
// cache cannot help (INV-MCP-XC-002).
package cache
