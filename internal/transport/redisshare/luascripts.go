package redisshare

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts of shared client sessions. Each keeps a change and its
// announcement one atomic step, so the channel's order is the order the
// hash saw. They live in lua/ as files of their own, each starting with
// its KEYS and ARGV; the wrappers below are the only places that know
// those positions.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// luaScripts holds the scripts, loaded once per store.
type luaScripts struct {
	append, flushed                  *redis.Script
	postOpen, postAppend, postOrphan *redis.Script
	update, delete, refresh, rewrite *redis.Script
	epoch, await, forward, capAdd    *redis.Script
}

// loadLuaScripts loads the scripts; sharded, for a Redis Cluster, they
// publish with SPUBLISH on the session's own shard channel, which is in
// the slot of the keys they change (shardbus.go), rather than PUBLISH.
func loadLuaScripts(sharded bool) (*luaScripts, error) {
	var err error
	load := func(name string) *redis.Script {
		src, rerr := luaFiles.ReadFile("lua/" + name + ".lua")
		if rerr != nil && err == nil {
			err = fmt.Errorf("load lua script %s: %w", name, rerr)
		}
		text := string(src)
		if sharded {
			text = strings.ReplaceAll(text, publishCall, "redis.call('SPUBLISH',")
		}
		return redis.NewScript(text)
	}
	l := &luaScripts{
		append: load("append"), flushed: load("flushed"),
		postOpen: load("post_open"), postAppend: load("post_append"), postOrphan: load("post_orphan"),
		update: load("update"), delete: load("delete"), refresh: load("refresh"), rewrite: load("rewrite"),
		epoch: load("epoch"), await: load("await"), forward: load("forward"), capAdd: load("cap_add"),
	}
	return l, err
}

// bySHA runs script s as EVALSHA, the script named by its SHA1. The
// appender's pipelines (log.go) send these scripts thousands of times a
// second: as EVAL each carried the whole text, about 2 KB, which Redis
// read and hashed on every call, and one replica's appender could not
// keep up with the appends of 50 subscribers (BENCHMARKS.md,
// "Notifications dropped on one replica"). In a pipeline a script Redis
// does not hold (a restart, a failover) fails with NOSCRIPT, which the
// pipeline's owner answers by loading the scripts and running its batch
// again (writeBatch); a single call falls back to EVAL by itself.
func bySHA(ctx context.Context, c redis.Scripter, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	if _, piped := c.(redis.Pipeliner); piped {
		return s.EvalSha(ctx, c, keys, args...)
	}
	return s.Run(ctx, c, keys, args...)
}

// loadAppendScripts loads into Redis (every primary of a cluster) the
// scripts the appender runs by their SHA1.
func (l *luaScripts) loadAppendScripts(ctx context.Context, c redis.Scripter) error {
	for _, s := range []*redis.Script{l.append, l.flushed, l.postAppend} {
		if err := s.Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("load lua script: %w", err)
		}
	}
	return nil
}

// noScript reports whether a command of a pipeline failed because Redis
// did not hold its script.
func noScript(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")) {
			return true
		}
	}
	return false
}

// publishCall is how every script publishes: the text a sharded store
// replaces.
const publishCall = "redis.call('PUBLISH',"

func flag(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// appendArgs append an event to a session's GET-stream log.
//
// The script answers the seq, -1 if the session is gone, -2 if this token
// was applied already, -3 if this replica is not the home a broadcast
// needs (nor takes over from the dead home still named), -4 if the
// session is not subscribed (any more) to the resource an update is
// about. A take-over makes home the home and publishes homeChange, in
// the same step as the append, so that of the replicas that find the
// home dead exactly one logs the event. A hash that names no home (Redis
// lost the session and a copy that was not home rewrote it) is taken
// over the same way, so that no session stays without one.
//
// A take-over broadcast can find this replica home already: a GET
// claimed the session here after the broadcast was queued. It is then
// logged only if that claim took the session from the dead home and no
// broadcast was logged since (hash fields hfrom, the home a claim
// replaced, and hbc, whether a broadcast was logged since the home last
// changed; update resets them): otherwise the survivor that took over
// first logged it already, and this would be its double.
//
// The seq is one past the larger of gseq and the log's last entry, and
// the XADD comes before any change to the hash: Lua does not roll back,
// so an XADD that fails must leave nothing behind, and a gseq that fell
// below the log's top (a hash written back from a copy whose position
// lagged) heals at the next append instead of making every append fail
// for good.
type appendArgs struct {
	hash, log     string
	ttlMs         int64
	maxLen        int
	data          []byte
	channel, wake string
	// tokenField and token make a retried append a no-op.
	tokenField string
	token      uint64
	// home, when set, must be the session's home, or become it in place
	// of deadHome; homeChange is then the change published.
	home, deadHome, homeChange string
	// subField, when set, must be in the hash (a resource update).
	subField string
}

func (l *luaScripts) appendEvent(ctx context.Context, c redis.Scripter, a appendArgs) *redis.Cmd {
	return bySHA(ctx, c, l.append, []string{a.hash, a.log}, a.ttlMs, a.maxLen, a.data, a.channel, a.wake,
		a.tokenField, a.token, a.home, a.subField, a.deadHome, a.homeChange)
}

// markFlushed raises the hash's gflushed to seq: where a fresh GET on any
// replica starts.
func (l *luaScripts) markFlushed(ctx context.Context, c redis.Scripter, hash string, seq uint64) *redis.Cmd {
	return bySHA(ctx, c, l.flushed, []string{hash}, seq)
}

// postOpenArgs open the Redis log of a POST stream. The script answers 1
// when the stream is this origin's (new, or events already written), 0
// when another replica's stream holds the name, -1 if the session is
// gone.
type postOpenArgs struct {
	hash, log     string
	ttlMs         int64
	origin, reqID string
}

func (l *luaScripts) openPost(ctx context.Context, c redis.Scripter, a postOpenArgs) *redis.Cmd {
	return l.postOpen.Run(ctx, c, []string{a.hash, a.log}, a.ttlMs, a.origin, a.reqID)
}

// postAppendArgs append event seq of a POST stream (data nil: the end
// without a response). The script answers 1 appended, 0 appended
// already (a retried batch) or the log has its end (which a follower may
// have written for an origin it took for dead: nothing goes after it),
// -1 the session is gone.
type postAppendArgs struct {
	hash, log     string
	ttlMs         int64
	maxLen        int
	seq           uint64
	data          []byte
	final         bool
	channel, wake string
	origin, reqID string
}

func (l *luaScripts) appendPost(ctx context.Context, c redis.Scripter, a postAppendArgs) *redis.Cmd {
	return bySHA(ctx, c, l.postAppend, []string{a.hash, a.log}, a.ttlMs, a.maxLen, a.seq, a.data,
		flag(a.final, "1", ""), a.channel, a.wake, a.origin, a.reqID)
}

// postOrphanArgs end the log of a POST stream whose origin died without
// ending it, with data as the response (nil: a bare end). The script
// answers 1 written; 0 the log grew meanwhile (read it again); 2 it has
// its end already; -1 the session or the log is gone.
type postOrphanArgs struct {
	hash, log     string
	ttlMs         int64
	maxLen        int
	seq           uint64
	data          []byte
	channel, wake string
	origin, reqID string
}

func (l *luaScripts) orphanPost(ctx context.Context, c redis.Scripter, a postOrphanArgs) *redis.Cmd {
	return l.postOrphan.Run(ctx, c, []string{a.hash, a.log}, a.ttlMs, a.maxLen, a.seq, string(a.data),
		a.channel, a.wake, a.origin, a.reqID)
}

// updateArgs change one field of a session's hash and publish msg. The
// script answers 1 when it changed the field, 0 when the session is gone:
// a change never recreates an ended session's hash; 2 when hsetv found
// the field set to another value under another home version than base:
// nothing changed, nothing is published (a replayed home claim, which a
// newer claim overrides).
//
// A change of home also raises the hash's home version (hv), which the
// published message carries and the script answers with: pub/sub can
// deliver a claim to a replica after that replica's own later claim, and
// the version is how the replica knows the first is stale (replica.go).
type updateArgs struct {
	hash, log string
	ttlMs     int64
	channel   string
	msg       []byte
	// kind is hset, hdel or hsetv.
	kind, field, value string
	// base is, for hsetv, the home version the change was made on.
	base uint64
}

func (l *luaScripts) updateField(ctx context.Context, c redis.Scripter, a updateArgs) *redis.Cmd {
	return l.update.Eval(ctx, c, []string{a.hash, a.log}, a.ttlMs, a.channel, a.msg, a.kind, a.field, a.value, a.base)
}

// updateResult reads the answer of updateField: the result and the home
// version.
func updateResult(c *redis.Cmd) (int64, uint64, error) {
	v, err := c.Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(v) != 2 || v[1] < 0 {
		return 0, 0, fmt.Errorf("update script answered %v, want [result, home version]", v)
	}
	return v[0], uint64(v[1]), nil
}

// deleteArgs end a session: its hash and log go, a tombstone stays for
// ttlMs, and msg is published. The script answers 1 if the hash existed.
type deleteArgs struct {
	hash, log, tombstone string
	ttlMs                int64
	channel              string
	msg                  []byte
}

func (l *luaScripts) deleteSession(ctx context.Context, c redis.Scripter, a deleteArgs) *redis.Cmd {
	return l.delete.Eval(ctx, c, []string{a.hash, a.log, a.tombstone}, a.ttlMs, a.channel, a.msg)
}

// refreshSession extends a session's hash and log by ttlMs; 0 when the
// session is gone.
func (l *luaScripts) refreshSession(ctx context.Context, c redis.Scripter, hash, log string, ttlMs int64) *redis.Cmd {
	return l.refresh.Eval(ctx, c, []string{hash, log}, ttlMs)
}

// rewriteArgs put back a session Redis lost. The whole copy (fields, as
// HSET field/value pairs) is written only where the hash is missing:
// over an existing hash it would delete what other replicas
// acknowledged. gseq and gflushed are floors, so event ids never go
// back. The script answers 0 if the session was deleted (the tombstone);
// 2 if the hash exists (another replica wrote it back first: only the
// floors are raised, and the caller re-reads it and replays its unsaved
// changes); 1 if written.
type rewriteArgs struct {
	hash, log, tombstone string
	ttlMs                int64
	channel              string
	msg                  []byte
	gseq, gflushed       uint64
	fields               []any
}

func (l *luaScripts) rewriteSession(ctx context.Context, c redis.Scripter, a rewriteArgs) *redis.Cmd {
	args := append([]any{a.ttlMs, a.channel, a.msg, a.gseq, a.gflushed}, a.fields...)
	return l.rewrite.Eval(ctx, c, []string{a.hash, a.log, a.tombstone}, args...)
}

// readEpoch returns the epoch, writing next where there is none (Redis
// lost its data, or nobody wrote one yet), and then, if setFresh, the
// fresh marker for freshMs.
func (l *luaScripts) readEpoch(ctx context.Context, c redis.Scripter, epochKey, freshKey, next string, freshMs int64, setFresh bool) *redis.Cmd {
	return l.epoch.Eval(ctx, c, []string{epochKey, freshKey}, next, freshMs, flag(setFresh, "1", "0"))
}

// awaitAnswer creates the mailbox of a server-to-client request if
// missing (written when the request is made, or again after Redis lost
// it), extends it, and returns what it holds: "" while nothing came.
func (l *luaScripts) awaitAnswer(ctx context.Context, c redis.Scripter, mailbox string, ttlMs int64) *redis.Cmd {
	return l.await.Run(ctx, c, []string{mailbox}, ttlMs)
}

// forwardArgs store a client's response in the mailbox that waits for it
// and publish head, response, tail on channel (so the response crosses to
// Redis once). The script answers 1 stored and published; 0 no mailbox,
// nothing done; 2 answered already, dropped.
type forwardArgs struct {
	mailbox        string
	ttlMs          int64
	channel        string
	head, response []byte
	tail           string
}

func (l *luaScripts) forwardAnswer(ctx context.Context, c redis.Scripter, a forwardArgs) *redis.Cmd {
	return l.forward.Run(ctx, c, []string{a.mailbox}, a.ttlMs, a.channel, a.head, a.response, a.tail)
}

// capAddArgs reserve a place for session id in a capped sorted set of
// session ids scored by expiry (a principal's or a tenant's sessions,
// across replicas). Members whose session would have expired by now are
// dropped first, so a session that idled out frees its place without
// anyone deleting it. The script answers 1 if reserved, 0 if the set is
// at its cap.
type capAddArgs struct {
	set   string
	nowMs int64
	limit int
	id    string
	ttlMs int64
}

func (l *luaScripts) reservePlace(ctx context.Context, c redis.Scripter, a capAddArgs) *redis.Cmd {
	return l.capAdd.Eval(ctx, c, []string{a.set}, a.nowMs, a.limit, a.id, a.ttlMs)
}
