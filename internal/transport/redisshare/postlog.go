package redisshare

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

// Streamed POST responses of shared client sessions
// (docs/adr/0018-streamed-responses-resume-anywhere.md): a GET with
// Last-Event-ID on any replica replays exactly the missed events of that
// stream, once each. A POST whose handler sends a message first answers
// with an SSE stream p<n>; the replica running the handler — its origin —
// keeps the stream's log in memory as for any session, and mirrors it
// into a Redis Stream
//
//	<prefix>cs:{<id>}:p<n>   1-0 {o, r}                 the stream exists
//	                         1-<seq> {o, r, d: message} an event
//	                         1-<seq> {o, r, d, f: 1}    the response, last
//	                         1-<seq> {o, r, f: 1}       the end without one
//
// (TTL = the idle timeout, refreshed by every append and, while the
// handler runs, by the sweeper; trimmed like the GET log to about
// EventLogSize entries). o names the origin and r is the request's
// JSON-RPC id (raw JSON), on every entry because trimming drops 1-0 from
// a long stream: a follower learns them from the entry it reads first,
// and needs them if the origin dies before the response (below). Only a stream that starts streaming gets one: a
// request answered with plain JSON never touches Redis.
//
// The origin's connection writes an event only once it is in Redis
// (write-ahead): the writer opens the Redis Stream before the priming
// event goes out, and the stream's next gives it only the events the
// appender confirmed. So every id a client holds names an event Redis
// has, the response reaches Redis before the origin counts the stream as
// delivered, and a resume on any replica, even after the origin died,
// misses nothing it was shown. While Redis is down the origin delivers
// from memory alone rather than stall the response; the appender catches
// the mirror up when Redis returns.
//
// Events are written by the shared appender (log.go), in the order
// the stream numbered them; each append PUBLISHes an "ev" change naming
// the stream, which wakes a connection another replica serves from it. A
// replica asked to resume a p<n> it does not hold reads the Redis Stream
// through a follower: a stream without a ring whose next reads Redis
// after its cursor and ends at the f entry. Names are unique across
// replicas (random base per session copy, redisSessions.share); the open
// refuses a name another replica's stream holds, and that stream then
// stays local, as a stream of an unshared session does: resumable only on
// the replica that holds it.
//
// An origin that dies mid-handler never writes the end: a follower would
// wait for it for ever, on keep-alives, its attached connection keeping
// the session alive. So a follower that has not seen the end checks the
// origin's liveness key (<prefix>replica:<o>, sessions.go) at most
// once per heartbeat, in the round trip of its read; once the key has
// expired and the log still has no end, it writes one itself — a -32603
// error response for the request, which the client may retry, or a bare f
// when the id is unknown — so that every resume, on any replica, ends
// there too. A live origin whose key expired (a partition longer than
// three heartbeats) loses its response to that error: its own appends are
// then refused as already written.
type postLog struct {
	m   *redisSessions
	st  *transport.Stream
	sid string // the client session's id
	key string
	// origin: this replica runs the handler and writes the mirror;
	// otherwise the stream is a follower reading it.
	origin bool

	// mu guards what follows. It is a leaf, taken under the stream's lock
	// (Limit, Pushed) as well as without it, and never held while the
	// stream's lock is taken.
	mu        sync.Mutex
	persisted uint64 // origin: the highest seq the appender confirmed in Redis
	ended     bool   // origin: the end (response or f marker) is in Redis
	// degraded (origin): the mirror missed a write (a full queue, a name
	// taken, the session gone from Redis), so it cannot be trusted to be
	// complete: the stream is delivered from memory alone, as without
	// Redis.
	degraded bool
	// reqID is the request's JSON-RPC id, raw JSON: set by the origin,
	// learnt from the log by a follower ("" when the log does not say).
	reqID string
	// ownerID (follower) is the origin's replica id, from the log; ""
	// when the log does not say, and then its liveness is not watched.
	ownerID string
	// checked (follower) is when the origin's liveness was last read.
	checked time.Time
}

func (m *redisSessions) postKey(id, stream string) string { return m.hashKey(id) + ":" + stream }

// Open creates the Redis Stream before the first byte of the response,
// so that even the priming event names a stream every replica finds (a
// LongRunning tool may close its stream before sending anything, and the
// client resume elsewhere, SEP-1699). It never fails the response: if
// Redis cannot take it, the stream is delivered from memory alone. It
// does not depend on the client's connection: a client that left may
// resume elsewhere.
func (p *postLog) Open() {
	if p == nil || !p.origin {
		return
	}
	err := p.m.skipping()
	var n int
	if err == nil {
		ctx, cancel := context.WithTimeout(p.m.bg, p.m.timeout)
		n, err = p.m.lua.openPost(ctx, p.m.rdb, postOpenArgs{hash: p.m.hashKey(p.sid), log: p.key, ttlMs: p.m.ttlMs(), origin: p.m.self, reqID: p.reqID}).Int()
		cancel()
		if err != nil {
			p.m.failed(err)
		} else {
			p.m.ok()
		}
	}
	if err == nil && n == 1 {
		return
	}
	if err == nil && n == 0 {
		p.m.log.Warn().Str("stream", p.key).Msg("transport: POST stream name taken by another replica's stream; this one is resumable here only")
	}
	p.mu.Lock()
	p.degraded = true
	p.mu.Unlock()
}

// queue hands the event seq (data nil: the end without a response) to the
// appender; the stream's lock must be held, so that events are queued in
// the order they were numbered. A full queue leaves the mirror
// incomplete: the stream is then delivered from memory alone.
func (p *postLog) queue(seq uint64, data []byte, final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.degraded {
		return
	}
	select {
	case p.m.logq <- logOp{post: p, seq: seq, data: data, final: final}:
	default:
		p.degraded = true
		p.m.dropped.Add(1)
		if p.m.logDropped.Add(1) == 1 {
			p.m.log.Error().Str("stream", p.key).Msg("transport: shared-session log queue full; a POST stream is resumable on its own replica only")
		}
	}
}

// Limit is the last seq the origin's connection may write, and whether it
// may write the end; last is the last seq the stream gave out. Unmirrored,
// everything.
func (p *postLog) Limit(last uint64) (uint64, bool) {
	if p == nil || !p.origin {
		return last, true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.degraded || !p.m.conn.Available() {
		return last, true
	}
	return p.persisted, p.ended
}

// confirmed records the appender's result for op, and wakes the
// connection that waits for it.
func (p *postLog) confirmed(op logOp, res int64, err error) {
	defer p.st.Notify()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err != nil || res < 0:
		// Refused, or the session is gone from Redis (which the sweeper
		// puts back, docs/adr/0026-redis-data-loss.md): this mirror has a
		// hole.
		p.degraded = true
	default:
		p.persisted = max(p.persisted, op.seq)
		if op.final {
			p.ended = true
		}
	}
}

// evalPostAppend queues op's append on pipeline p.
func (m *redisSessions) evalPostAppend(ctx context.Context, p redis.Pipeliner, op logOp) *redis.Cmd {
	id := op.post.sid
	return m.lua.appendPost(ctx, p, postAppendArgs{
		hash: m.hashKey(id), log: op.post.key, ttlMs: m.ttlMs(), maxLen: m.logSize,
		seq: op.seq, data: op.data, final: op.final,
		channel: m.changeChannel(id), wake: m.postWake(id, op.post.st.Name()), origin: m.self, reqID: op.post.reqID,
	})
}

// postWake is the "ev" change that wakes a connection another replica
// serves from POST stream stream of session id.
func (m *redisSessions) postWake(id, stream string) string {
	return `{"o":"` + m.self + `","id":"` + id + `","op":"ev","s":"` + stream + `"}` // base64url and p<n>: no escaping needed
}

// follow returns the stream to serve a resumption of s's POST stream
// name from Redis: have (a follower this replica made earlier), or a new
// follower. nil, nil when Redis has no such stream (delivered long ago,
// expired, or never ours); an error when Redis could not say.
func (m *redisSessions) follow(ctx context.Context, c *redisCopy, name string, have *transport.Stream) (*transport.Stream, error) {
	if err := m.skipping(); err != nil {
		return nil, err
	}
	key := m.postKey(c.id, name)
	ctx, cancel := context.WithTimeout(ctx, m.conn.Timeout(redisconn.Session))
	defer cancel()
	last, err := m.rdb.XRevRangeN(ctx, key, "+", "-", 1).Result()
	if err != nil {
		m.failed(err)
		return nil, fmt.Errorf("read POST stream %s of client session %s: %w", name, c.id, err)
	}
	m.ok()
	if len(last) == 0 {
		return nil, nil
	}
	st := have
	if st == nil {
		st = c.s.RetainStream(name, func(st *transport.Stream) transport.EventLog {
			return &postLog{m: m, st: st, sid: c.id, key: key}
		})
	}
	p := st.Log().(*postLog) // a follower: made here, or have
	// The last seq issued, so that a connection attaching clamps an id
	// from the future as in memory: the last event's, or the one before
	// an f marker.
	seq, _ := postSeq(last[0].ID)
	if _, ok := last[0].Values["d"]; !ok && seq > 0 {
		seq--
	}
	_, final := last[0].Values["f"]
	owner, _ := last[0].Values["o"].(string)
	reqID, _ := last[0].Values["r"].(string)
	st.CatchUp(seq, 0)
	// Every entry names the origin and the request (1-0 included), so
	// that the follower can watch the origin and end the log of one that
	// died (orphaned).
	p.mu.Lock()
	if p.ownerID == "" {
		p.ownerID, p.reqID = owner, reqID
	}
	p.mu.Unlock()
	if final {
		// The end is in the log: a resume from it has nothing more to
		// wait for (read).
		st.MarkFinished()
	}
	return st, nil
}

// readLog is a follower's next: the events after cursor in Redis, whether
// the stream has ended once they are written, and whether events after
// cursor were trimmed. A full page wakes the connection again for the
// rest; a Redis failure reads nothing, and the next wake-up or keep-alive
// reads again. At most once per heartbeat the same round trip reads the
// origin's liveness key, first, so that the read has all the origin wrote
// before its key expired: an origin found dead with no end in the log
// gets one (orphaned), or a follower would wait for it for ever.
func (p *postLog) readLog(st *transport.Stream, cursor uint64, buf []transport.Event) ([]transport.Event, bool, bool) {
	if p.m.skipping() != nil {
		return buf, false, false
	}
	ctx, cancel := context.WithTimeout(p.m.bg, p.m.timeout)
	defer cancel()
	page := int64(max(p.m.logSize, 16))
	owner := p.watch()
	var alive *redis.IntCmd
	var xr *redis.XMessageSliceCmd
	_, err := p.m.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		if owner != "" {
			alive = pl.Exists(ctx, p.m.replicaKey(owner))
		}
		xr = pl.XRangeN(ctx, p.key, "1-"+strconv.FormatUint(cursor+1, 10), "+", page)
		return nil
	})
	if err != nil {
		p.m.failed(err)
		return buf, false, false
	}
	p.m.ok()
	msgs := xr.Val()
	first, done := len(buf), false
	for _, x := range msgs {
		seq, ok := postSeq(x.ID)
		if !ok || seq <= cursor {
			continue
		}
		if data, ok := x.Values["d"].(string); ok {
			buf = append(buf, transport.Event{Seq: seq, Data: []byte(data)})
		}
		if _, ok := x.Values["f"]; ok {
			done = true
		}
	}
	lost := len(buf) > first && buf[first].Seq > cursor+1
	if len(buf) > first {
		st.CatchUp(buf[len(buf)-1].Seq, 0)
	}
	// The end seen before (by follow) and nothing after the cursor: the
	// client resumed from the end itself, and nothing more will come.
	ended := st.Finished()
	if done {
		st.MarkFinished()
	}
	if int64(len(msgs)) == page {
		st.Notify()
		return buf, done, lost
	}
	if !done && ended {
		done = true
	}
	if !done && alive != nil && alive.Val() == 0 {
		buf, done = p.orphaned(st, owner, buf)
	}
	return buf, done, lost
}

// watch returns the replica whose liveness a follower's read should
// check now, or "": the origin, at most once per heartbeat (its key
// expires after three), never this replica, which is alive, and never
// when the log did not name it.
func (p *postLog) watch() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ownerID == "" || p.ownerID == p.m.self {
		return ""
	}
	now := time.Now()
	if now.Sub(p.checked) < p.m.tune.heartbeat {
		return ""
	}
	p.checked = now
	return p.ownerID
}

// orphanedMessage is the error a client gets, as the response, for a
// request whose handler's replica died before it answered.
const orphanedMessage = "the server handling this request stopped before it answered; the request may be retried"

// orphaned ends the log of a stream whose origin is dead and did not end
// it (docs/adr/0018-streamed-responses-resume-anywhere.md), so that no
// follower waits for it for ever: with a -32603 error response for the
// request, or a bare end when the log does not name the request. It
// returns buf with that response, and whether the stream has ended.
// Written to the log, the end is the same for every resume on any
// replica, and sent once; an origin that was in fact alive has its own
// appends refused from then on.
func (p *postLog) orphaned(st *transport.Stream, owner string, buf []transport.Event) ([]transport.Event, bool) {
	last, _ := st.Position()
	seq := last + 1
	p.mu.Lock()
	reqID := p.reqID
	p.mu.Unlock()
	var data []byte
	if reqID != "" {
		data = protocol.AppendError(nil, protocol.ID(reqID), protocol.Errorf(protocol.CodeInternalError, orphanedMessage))
	}
	ctx, cancel := context.WithTimeout(p.m.bg, p.m.timeout)
	defer cancel()
	n, err := p.m.lua.orphanPost(ctx, p.m.rdb, postOrphanArgs{
		hash: p.m.hashKey(p.sid), log: p.key, ttlMs: p.m.ttlMs(), maxLen: p.m.logSize, seq: seq, data: data,
		channel: p.m.changeChannel(p.sid), wake: p.m.postWake(p.sid, st.Name()), origin: owner, reqID: reqID,
	}).Int()
	if err != nil {
		p.m.failed(err)
		return buf, false // the next check tries again
	}
	p.m.ok()
	switch n {
	case 0:
		// The log grew meanwhile: read it again; the origin may live.
		st.Notify()
		return buf, false
	case 2:
		// The end is there already, after the cursor (the next read
		// gets it) or at it (the next read ends).
		st.MarkFinished()
		st.Notify()
		return buf, false
	}
	// Written, or the session or the log is gone and nothing will come:
	// the stream ends here, with the error if there is one.
	if data != nil {
		buf = append(buf, transport.Event{Seq: seq, Data: data})
	}
	st.CatchUp(seq, 0)
	st.MarkFinished()
	return buf, true
}

// postSeq parses the seq of a POST log entry id, 1-<seq>.
func postSeq(id string) (uint64, bool) {
	s, ok := strings.CutPrefix(id, "1-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// mirroredKeys returns the Redis keys of s's POST streams whose handler
// runs here, for the sweeper to keep alive as long as the session: a
// handler may stay silent for longer than the idle timeout.
func mirroredKeys(s *transport.ClientSession) []string {
	var keys []string
	for _, st := range s.Streams() {
		if p, ok := st.Log().(*postLog); ok && p.origin && !st.Finished() {
			keys = append(keys, p.key)
		}
	}
	return keys
}

// The EventLog of a POST stream: the origin's ring mirrored into Redis,
// or a follower reading the mirror.

// Take: the ring takes every event.
func (p *postLog) Take(*transport.Stream, []byte) bool { return false }

// Pushed queues the event for the mirror (the origin's).
func (p *postLog) Pushed(seq uint64, data []byte, final bool) { p.queue(seq, data, final) }

// Read reads a follower's events from Redis; the origin's are in its
// ring.
func (p *postLog) Read(st *transport.Stream, cursor uint64, buf []transport.Event) ([]transport.Event, bool, bool, bool) {
	if p.origin {
		return buf, false, false, false
	}
	evs, done, lost := p.readLog(st, cursor, buf)
	return evs, done, lost, true
}

// MarkFlushed: where a fresh connection starts matters for the GET
// stream only.
func (p *postLog) MarkFlushed(uint64) {}

// Follower reports whether the stream reads another replica's mirror.
func (p *postLog) Follower() bool { return !p.origin }
