package transport

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Streamed POST responses of shared client sessions (issue 7, point 3:
// "GET with Last-Event-ID on any replica replays exactly the missed
// events of that stream, once each"). A POST whose handler sends a
// message first answers with an SSE stream p<n>; the replica running the
// handler — its origin — keeps the stream's log in memory as for any
// session, and mirrors it into a Redis Stream
//
//	<prefix>cs:{<id>}:p<n>   1-0 {o: origin}            the stream exists
//	                         1-<seq> {d: message}       an event
//	                         1-<seq> {d: message, f: 1} the response, last
//	                         1-<seq> {f: 1}             the end without one
//
// (TTL = the idle timeout, refreshed by every append and, while the
// handler runs, by the sweeper; trimmed like the GET log to about
// EventLogSize entries). Only a stream that starts streaming gets one: a
// request answered with plain JSON never touches Redis.
//
// The origin's connection writes an event only once it is in Redis
// (write-ahead): the writer opens the Redis Stream before the priming
// event goes out, and the stream's next gives it only the events the
// appender confirmed. So every id a client holds names an event Redis
// has, the response reaches Redis before the origin counts the stream as
// delivered, and a resume on any replica, even after the origin died,
// misses nothing it was shown. While Redis is down (point 6) the origin
// delivers from memory alone rather than stall the response; the
// appender catches the mirror up when Redis returns.
//
// Events are written by the shared appender (redislog.go), in the order
// the stream numbered them; each append PUBLISHes an "ev" change naming
// the stream, which wakes a connection another replica serves from it. A
// replica asked to resume a p<n> it does not hold reads the Redis Stream
// through a follower: a stream without a ring whose next reads Redis
// after its cursor and ends at the f entry. Names are unique across
// replicas (random base per session copy, redisSessions.share); the open
// refuses a name another replica's stream holds, and that stream then
// stays local, as before issue 7.
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
}

var (
	// scriptPostOpen: KEYS hash, post log; ARGV ttl, origin. 1 when the
	// stream is this origin's (new, or events already written), 0 when
	// another replica's stream holds the name, -1 if the session is gone.
	scriptPostOpen = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local first = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)
if #first == 0 then
  redis.call('XADD', KEYS[2], '1-0', 'o', ARGV[2])
elseif first[1][2][1] ~= 'o' or first[1][2][2] ~= ARGV[2] then
  return 0
end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1`)
	// scriptPostAppend: KEYS hash, post log; ARGV ttl, maxlen, seq, data
	// ('' for the end without a response), final ('1' or ''), channel,
	// wake message, origin. 1 appended, 0 appended already (a retried
	// batch), -1 the session is gone.
	scriptPostAppend = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local seq = tonumber(ARGV[3])
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last > 0 and tonumber(string.sub(last[1][1], 3)) >= seq then return 0 end
if #last == 0 then redis.call('XADD', KEYS[2], '1-0', 'o', ARGV[8]) end
local f = {}
if ARGV[4] ~= '' then f[#f + 1] = 'd'; f[#f + 1] = ARGV[4] end
if ARGV[5] == '1' then f[#f + 1] = 'f'; f[#f + 1] = '1' end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '1-' .. ARGV[3], unpack(f))
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[6], ARGV[7])
return 1`)
)

func (m *redisSessions) postKey(id, stream string) string { return m.hashKey(id) + ":" + stream }

// mirror makes st, the new stream of a POST response on this replica, an
// origin mirrored in Redis. Nothing is written until the stream's writer
// opens it (open) and its events are appended.
func (m *redisSessions) mirror(s *ClientSession, st *stream) {
	st.post = &postLog{m: m, st: st, sid: s.id, key: m.postKey(s.id, st.id), origin: true}
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
		n, err = scriptPostOpen.Run(ctx, p.m.rdb, []string{p.m.hashKey(p.sid), p.key}, p.m.ttlMs(), p.m.self).Int()
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
	if p == nil || !p.origin || p.degraded || p.m.down.Load() {
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
		// puts back, issue 7 point 6): this mirror has a hole.
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
	id, stream := op.post.sid, op.post.st.id
	wake := `{"o":"` + m.self + `","id":"` + id + `","op":"ev","s":"` + stream + `"}` // base64url and p<n>: no escaping needed
	final := ""
	if op.final {
		final = "1"
	}
	return scriptPostAppend.Eval(ctx, p, []string{m.hashKey(id), op.post.key},
		m.ttlMs(), m.logSize, op.seq, op.data, final, m.channel, wake, m.self)
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
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
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
		st.post = &postLog{m: m, st: st, sid: s.id, key: key}
		st = s.retain(st)
	}
	// The last seq issued, so that attach clamps an id from the future as
	// in memory: the last event's, or the one before an f marker.
	seq, _ := postSeq(last[0].ID)
	if _, ok := last[0].Values["d"]; !ok && seq > 0 {
		seq--
	}
	st.mu.Lock()
	st.nextSeq = max(st.nextSeq, seq+1)
	st.mu.Unlock()
	return st, nil
}

// read is a follower's next: the events after cursor in Redis, whether
// the stream's end is among them, and whether events after cursor were
// trimmed. A full page wakes the connection again for the rest; a Redis
// failure reads nothing, and the next wake-up or keep-alive reads again.
func (p *postLog) read(st *stream, cursor uint64, buf []event) ([]event, bool, bool) {
	if p.m.skipping() != nil {
		return buf, false, false
	}
	ctx, cancel := context.WithTimeout(p.m.bg, p.m.timeout)
	defer cancel()
	page := int64(max(p.m.logSize, 16))
	msgs, err := p.m.rdb.XRangeN(ctx, p.key, "1-"+strconv.FormatUint(cursor+1, 10), "+", page).Result()
	if err != nil {
		p.m.failed(err)
		return buf, false, false
	}
	p.m.ok()
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
	st.done = st.done || done
	st.mu.Unlock()
	if int64(len(msgs)) == page {
		st.notify()
	}
	return buf, done, lost
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
		if p := st.post; p != nil && p.origin && !st.finished() {
			keys = append(keys, p.key)
		}
	}
	return keys
}
