// Package tiered is a store.Store decorator that puts a two-tier read
// cache in front of the durable store: tier 1 is the in-process
// runtime/cache, tier 2 is Redis (optional, shared by every replica), and
// behind both is the wrapped store (PostgreSQL or the in-memory one).
// Only point reads are cached — GetMemory, GetSession and GetAgent, and
// their Lookup twins, which also say whether a cache answered; every other
// method goes straight to the wrapped store. Not-found results are never
// cached: an absent entity always costs a store read.
//
// # Keys
//
// Every cache key carries the tenant. Tier-1 keys are a comparable struct
// (kind, tenant, namespace and key or id), so a lookup builds its key
// without allocating; tier-2 keys are KeyPrefix, the kind, then each part
// in unpadded base64url, ':'-separated, so no tenant, namespace or key can
// collide with another or spill into a neighbour's key space.
//
// # Tier 2: keeping stale values out of Redis
//
// A Redis value is "V<version>:<json>" or the tombstone "T". Three things
// write a key:
//
//   - a read miss populates it with SET NX, so it never overwrites;
//   - a write through this decorator (put, session change, register) runs
//     a Lua script that stores the new value only if the key is absent or
//     holds a lower version. If the key holds a tombstone or the same or a
//     higher version, or the new value would leave Redis sooner than a
//     tombstone would, the script writes a tombstone instead. The same
//     script publishes the invalidation, so the new state is in Redis
//     before any replica hears of it;
//   - a delete, or a write whose outcome is unknown (a timeout after the
//     statement was sent), writes a tombstone and publishes.
//
// A value whose tier-2 form is longer than RedisMaxValueBytes is never
// written: a write of one leaves a tombstone, a read of one does not
// populate, so Redis's memory per key stays bounded whatever the store
// keeps, and such values are served from tier 1 or the store.
//
// A tombstone lives the tombstone TTL (10 s, or RedisTTL if shorter) and
// reads as a miss that does not populate. The race it closes: reader R
// reads version n from the store, writer W commits n+1 and runs its
// script, then R's populate arrives. W's script ran after W's commit,
// which came after R's read began, and it left a key that lives at least
// the tombstone TTL, so R's SET NX fails — provided R populates within
// that time of starting its read. R checks this on its own monotonic
// clock and skips the populate if the read took longer than the populate
// guard (half the tombstone TTL). A writer that slow writes a tombstone
// rather than a value, for the same reason. Writes cannot race each other
// into a stale state either: an older version arriving after a newer one
// turns the key into a tombstone, and a value never replaces a tombstone,
// so a put and a delete racing from two replicas end as a miss, whatever
// order their scripts run in. TestStalePopulateRace and TestWriteOrdering
// show both.
//
// What this does not cover: Redis losing a tombstone inside that window —
// evicted under memory pressure, or a restart without persistence — can
// let a concurrent reader's stale populate in, to live until RedisTTL or
// the next write of the key.
//
// # Tier 1 and pub/sub
//
// A write invalidates its tier-1 key locally after the script, and every
// replica's subscriber goroutine invalidates the published key in its own
// tier 1 (the writer's too, which is harmless). The populate race exists
// in tier 1 as well, between a reader's lower-tier read and its Set; it is
// closed by striped invalidation counters: a reader notes its key's
// stripe counter before reading and removes what it stored if an
// invalidation bumped the counter meanwhile. A generation number, bumped
// whenever tier 1 can no longer be trusted, invalidates every entry at
// once: entries of an older generation read as misses and age out.
//
// With Redis configured, tier 1 is used only while the subscription is
// confirmed. Messages sent while the link is down are lost, so losing it
// flushes tier 1 and bypasses it until the next confirmation; a
// confirmation arriving while the link was believed up means go-redis
// reconnected underneath, and flushes too. A silent link (a half-open
// connection) is found by PINGing it after two quiet seconds. Without
// Redis there is one process, every write passes through it, and tier 1
// is always used.
//
// # Redis failures
//
// Redis down, erroring or slower than the connection's hot bound never
// fails a call: the wrapped store answers, the fallback is counted in
// Stats.RedisErrors. Every operation goes through the process's one
// connection to Redis (internal/redisconn), whose breaker every user of
// Redis shares: while it is open, calls skip Redis without waiting.
// A read or populate that fails costs that call alone. A write that fails
// may have left Redis holding what it replaced, so the tier turns
// degraded (logged once, and once when it recovers): calls skip Redis
// while the invalidations that could not reach it are replayed — at once
// while the breaker is closed, otherwise when the breaker's probe finds
// Redis back, and after a failed replay a backoff from 1 s to 10 s.
// Missed invalidations are remembered up to 10,000 keys (beyond that:
// "drop every key of ours"), and replayed — tombstone and publish per key,
// or SCAN and UNLINK of the whole prefix twice, a populate guard apart,
// each pass followed by a message that makes every replica drop its tier
// 1 — before the store uses Redis again. So nothing written during an
// outage is served stale from tier 2 afterwards.
//
// # Staleness bound
//
// A replica can serve the value a write replaced for as long as the
// invalidation takes to reach it:
//
//   - Redis healthy: the pub/sub delivery time, milliseconds;
//   - the writer cut off from Redis while readers are not: until the
//     writer's replay, that is the outage plus at most one backoff (10 s);
//     a Redis that keeps refusing writes (OOM under maxmemory-policy
//     noeviction) is such an outage for as long as it lasts;
//   - a reader's subscription silently dead: until PINGing finds out,
//     about four seconds.
//
// A writer's own replica reads its write at once.
//
// # Values are shared, read-only
//
// For speed, the Lookup methods return the cached struct by value without
// a deep copy: its slices (Value, Tags, Participants, Metadata,
// Capabilities) and pointers (ExpiresAt, EndedAt, Error) are shared with
// the cache and with every other caller that got the same entry, so their
// callers must treat them as read-only (the tool layer only serializes
// them). The Get methods of store.Store deep-copy, because the store
// contract lets callers modify what they get. The cache itself never
// modifies a value after storing it.
package tiered
