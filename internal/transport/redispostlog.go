package transport

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
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
// Events are written by the shared appender (redislog.go), in the order
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
// origin's liveness key (<prefix>replica:<o>, redissessions.go) at most
// once per heartbeat, in the round trip of its read; once the key has
// expired and the log still has no end, it writes one itself — a -32603
// error response for the request, which the client may retry, or a bare f
// when the id is unknown — so that every resume, on any replica, ends
// there too. A live origin whose key expired (a partition longer than
// three heartbeats) loses its response to that error: its own appends are
// then refused as already written.
type postLog struct {
	m   *redisSessions
	st  *stream
	sid string // the client session's id
	key string
	// origin: this replica runs the handler and writes the mirror;
	// otherwise the stream is a follower reading it.
	origin bool

	// Guarded by st.mu.
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

// mirror makes st, the new stream of a POST response to request id on
// this replica, an origin mirrored in Redis. Nothing is written until the
// stream's writer opens it (open) and its events are appended.
func (m *redisSessions) mirror(s *ClientSession, st *stream, id protocol.ID) {
	st.log = &postLog{m: m, st: st, sid: s.id, key: m.postKey(s.id, st.id), origin: true, reqID: string(id)}
}

// open creates the Redis Stream before the first byte of the response,
// so that even the priming event names a stream every replica finds (a
// LongRunning tool may close its stream before sending anything, and the
// client resume elsewhere, SEP-1699). It never fails the response: if
// Redis cannot take it, the stream is delivered from memory alone. It
// does not depend on the client's connection: a client that left may
// resume elsewhere.
func (p *postLog) open() {
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
	p.st.mu.Lock()
	p.degraded = true
	p.st.mu.Unlock()
}

// queue hands the event seq (data nil: the end without a response) to the
// appender; st.mu must be held, so that events are queued in the order
// they were numbered. A full queue leaves the mirror incomplete: the
// stream is then delivered from memory alone.
func (p *postLog) queue(seq uint64, data []byte, final bool) {
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

// limit is the last seq the origin's connection may write, and whether it
// may write the end; st.mu must be held. Unmirrored, everything.
func (p *postLog) limit(st *stream) (uint64, bool) {
	if p == nil || !p.origin || p.degraded || !p.m.conn.Available() {
		return st.nextSeq - 1, true
	}
	return p.persisted, p.ended
}

// confirmed records the appender's result for op; st.mu must not be
// held.
func (p *postLog) confirmed(op logOp, res int64, err error) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
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
	p.st.wake()
}

// evalPostAppend queues op's append on pipeline p.
func (m *redisSessions) evalPostAppend(ctx context.Context, p redis.Pipeliner, op logOp) *redis.Cmd {
	id := op.post.sid
	return m.lua.appendPost(ctx, p, postAppendArgs{
		hash: m.hashKey(id), log: op.post.key, ttlMs: m.ttlMs(), maxLen: m.logSize,
		seq: op.seq, data: op.data, final: op.final,
		channel: m.channel, wake: m.postWake(id, op.post.st.id), origin: m.self, reqID: op.post.reqID,
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
func (m *redisSessions) follow(ctx context.Context, s *ClientSession, name string, have *stream) (*stream, error) {
	if err := m.skipping(); err != nil {
		return nil, err
	}
	key := m.postKey(s.id, name)
	ctx, cancel := context.WithTimeout(ctx, m.conn.Timeout(redisconn.Session))
	defer cancel()
	last, err := m.rdb.XRevRangeN(ctx, key, "+", "-", 1).Result()
	if err != nil {
		m.failed(err)
		return nil, fmt.Errorf("read POST stream %s of client session %s: %w", name, s.id, err)
	}
	m.ok()
	if len(last) == 0 {
		return nil, nil
	}
	st := have
	if st == nil {
		st = newStream(name, s.logLimit)
		st.log = &postLog{m: m, st: st, sid: s.id, key: key}
		st = s.retain(st)
	}
	p := st.log.(*postLog) // a follower: made here, or have
	// The last seq issued, so that attach clamps an id from the future as
	// in memory: the last event's, or the one before an f marker.
	seq, _ := postSeq(last[0].ID)
	if _, ok := last[0].Values["d"]; !ok && seq > 0 {
		seq--
	}
	_, final := last[0].Values["f"]
	owner, _ := last[0].Values["o"].(string)
	reqID, _ := last[0].Values["r"].(string)
	st.mu.Lock()
	st.nextSeq = max(st.nextSeq, seq+1)
	// Every entry names the origin and the request (1-0 included), so
	// that the follower can watch the origin and end the log of one that
	// died (orphaned).
	if p.ownerID == "" {
		p.ownerID, p.reqID = owner, reqID
	}
	// The end is in the log: a resume from it has nothing more to wait
	// for (read).
	st.done = st.done || final
	st.mu.Unlock()
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
func (p *postLog) readLog(st *stream, cursor uint64, buf []event) ([]event, bool, bool) {
	if p.m.skipping() != nil {
		return buf, false, false
	}
	ctx, cancel := context.WithTimeout(p.m.bg, p.m.timeout)
	defer cancel()
	page := int64(max(p.m.logSize, 16))
	owner := p.watch(st)
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
			buf = append(buf, event{seq: seq, data: []byte(data)})
		}
		if _, ok := x.Values["f"]; ok {
			done = true
		}
	}
	lost := len(buf) > first && buf[first].seq > cursor+1
	st.mu.Lock()
	if len(buf) > first {
		st.nextSeq = max(st.nextSeq, buf[len(buf)-1].seq+1)
	}
	// The end seen before (by follow) and nothing after the cursor: the
	// client resumed from the end itself, and nothing more will come.
	ended := st.done
	st.done = st.done || done
	st.mu.Unlock()
	if int64(len(msgs)) == page {
		st.notify()
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
func (p *postLog) watch(st *stream) string {
	st.mu.Lock()
	defer st.mu.Unlock()
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
func (p *postLog) orphaned(st *stream, owner string, buf []event) ([]event, bool) {
	st.mu.Lock()
	seq, reqID := st.nextSeq, p.reqID
	st.mu.Unlock()
	var data []byte
	if reqID != "" {
		data = protocol.AppendError(nil, protocol.ID(reqID), protocol.Errorf(protocol.CodeInternalError, orphanedMessage))
	}
	ctx, cancel := context.WithTimeout(p.m.bg, p.m.timeout)
	defer cancel()
	n, err := p.m.lua.orphanPost(ctx, p.m.rdb, postOrphanArgs{
		hash: p.m.hashKey(p.sid), log: p.key, ttlMs: p.m.ttlMs(), maxLen: p.m.logSize, seq: seq, data: data,
		channel: p.m.channel, wake: p.m.postWake(p.sid, st.id), origin: owner, reqID: reqID,
	}).Int()
	if err != nil {
		p.m.failed(err)
		return buf, false // the next check tries again
	}
	p.m.ok()
	switch n {
	case 0:
		// The log grew meanwhile: read it again; the origin may live.
		st.notify()
		return buf, false
	case 2:
		// The end is there already, after the cursor (the next read
		// gets it) or at it (the next read ends).
		st.mu.Lock()
		st.done = true
		st.mu.Unlock()
		st.notify()
		return buf, false
	}
	// Written, or the session or the log is gone and nothing will come:
	// the stream ends here, with the error if there is one.
	if data != nil {
		buf = append(buf, event{seq: seq, data: data})
	}
	st.mu.Lock()
	st.nextSeq = max(st.nextSeq, seq+1)
	st.done = true
	st.mu.Unlock()
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

// mirroredKeys returns the Redis keys of the POST streams whose handler
// runs here, for the sweeper to keep alive as long as the session: a
// handler may stay silent for longer than the idle timeout.
func (s *ClientSession) mirroredKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for _, st := range s.streams {
		if p, ok := st.log.(*postLog); ok && p.origin && !st.finished() {
			keys = append(keys, p.key)
		}
	}
	return keys
}

// The eventLog of a POST stream: the origin's ring mirrored into Redis,
// or a follower reading the mirror.

func (p *postLog) take(*stream, []byte) bool { return false }

func (p *postLog) pushed(seq uint64, data []byte, final bool) { p.queue(seq, data, final) }

func (p *postLog) read(st *stream, cursor uint64, buf []event) ([]event, bool, bool, bool) {
	if p.origin {
		return buf, false, false, false
	}
	evs, done, lost := p.readLog(st, cursor, buf)
	return evs, done, lost, true
}

func (p *postLog) markFlushed(uint64) {}

func (p *postLog) follower() bool { return !p.origin }
