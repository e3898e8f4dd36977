// Package redisconn is the one way mcp-runtime reaches Redis: it builds
// the client for the deployment's mode (a single node, Sentinel or
// Cluster) from REDIS_URL, names keys so that every multi-key script keeps
// its keys in one cluster slot, bounds each operation by the time its kind
// can afford, and keeps one health model — a breaker — for every user of
// Redis in the process (session sharing, the cache tier, rate limits).
//
// Why one breaker: a replica whose users of Redis each decided on their
// own when Redis is down waited up to their timeout once per user per
// request while it hung, and refused clients for seconds after a single
// slow reply. The breaker opens on a failure rate over a window, not on one
// slow reply, lets nothing wait on Redis while it is open, and closes when
// a probe succeeds.
package redisconn
