package redisshare

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

// redisLog is the GET stream's event log of a shared client session (MCP
// specification, basic/transports, "Resumability and Redelivery"): a
// Redis Stream trimmed to about EventLogSize entries (XADD MAXLEN ~),
// whose entry ids are 0-<seq>, so the SSE id g-<seq> names the same event
// on every replica and a GET with Last-Event-ID anywhere reads exactly
// the entries after it. The seq comes from the session hash's gseq,
// assigned in the same script as the XADD, so appends from several
// replicas are totally ordered.
//
// Appends never wait on Redis: they queue, in order, for the store's
// appender goroutine, which writes them in pipelined batches and, while
// Redis is down or briefly refuses writes (READONLY, LOADING...), keeps
// them and retries the batch. A retried append is not logged twice: each
// carries a token, increasing per replica, that the script records in the
// hash (t:<replica>) and refuses at or below. What holds through a Redis
// outage is therefore: no event is logged twice, and none queued is lost
// while the replica runs and the queue has room. Lost, and said so, are:
// what a full queue (4096 operations: an outage long enough to fill it,
// or a fan-out Redis cannot take as fast as mutations make it, which
// BENCHMARKS.md measures: 50 subscribers of a key written 500 times a
// second are kept up with, 100 are not) drops (SharingStats.Dropped,
// logged once per episode); what Redis has not
// taken when Close's drain bound runs out (logged); and events trimmed
// from a log longer than EventLogSize before a client read them (the
// client is told, as in memory).
//
// Every append PUBLISHes an "ev" change, so the replica holding the GET
// connection reads the log at once, wherever the event came from: this is
// how server-to-client messages on the GET stream reach another replica
// (docs/adr/0016-resource-updates-logged-by-origin.md). A held connection
// also rereads the log at every keep-alive, in case a wake-up was lost
// with the pub/sub link.
//
// tools/list_changed, which every replica sees by itself, is queued by
// every replica's copy of the session and logged once (a message is
// delivered once, whichever replica holds the stream): the script keeps
// the home replica's. A copy that names another home first reads that
// home's liveness key (<prefix>replica:<id>, refreshed every heartbeat by
// the sweeper, expiring after three); if it is alive the event is the
// home's to log and nothing is sent, and if it expired the append also
// takes over as home, atomically and only while Redis still names the
// dead one, so of the replicas that find it dead exactly one logs the
// event, and the next ones are logged by the new home. So a session whose
// home died is told at once, not when its GET lands elsewhere.
type redisLog struct {
	m  *redisSessions
	id string
	// flushed is the highest seq recorded as flushed, so that a
	// connection does not queue a write for every event it sends twice.
	flushed atomic.Uint64

	// A connection opened while Redis could not give the stream's
	// position (pend) reads nothing until it can; its reading then starts
	// after floor: the client's Last-Event-ID (resume), or for a fresh
	// GET (resume -1) the last seq a connection flushed on any replica.
	pmu     sync.Mutex
	pending atomic.Bool // written under pmu; read without it by awaitsPosition
	resume  int64
	floor   uint64
}

// logOp is one queued write: an event to append, or (data nil) the seq a
// connection flushed through.
type logOp struct {
	log     *redisLog
	st      *transport.Stream
	data    []byte
	flushed uint64
	tok     uint64 // assigned by the appender, in the queue's order
	// broadcast: an event every replica produces (tools/list_changed),
	// logged only if this replica is the session's home in Redis, which
	// so arbitrates a hand-over between replicas, or takes over from
	// home, the replica this copy believes is home, found dead, so that
	// its sessions' broadcasts are still logged.
	broadcast bool
	home      string
	// uri (log nil): a resource update of tenant's uri, for every shared
	// session subscribed to it (fanout.go).
	tenant, uri string
	// post (log nil): event seq of a streamed POST response, its last if
	// final; data nil for the end without a response (postlog.go).
	post  *postLog
	seq   uint64
	final bool
}

// append queues data for the log; a full queue (Redis down for long)
// drops it, logged once per outage.
func (l *redisLog) append(st *transport.Stream, data []byte) {
	l.queue(logOp{log: l, st: st, data: data})
}

// broadcast queues data, an event every replica produces, to be logged
// if this replica is the session's home, or home (the home as this copy
// knows it) is dead and this replica is the first to take over.
func (l *redisLog) broadcast(st *transport.Stream, data []byte, home string) {
	l.queue(logOp{log: l, st: st, data: data, broadcast: true, home: home})
}

func (l *redisLog) queue(op logOp) {
	select {
	case l.m.logq <- op:
	default:
		l.m.dropped.Add(1)
		if l.m.logDropped.Add(1) == 1 {
			l.m.log.Error().Str("session", store.ClientSessionHandle(l.id)).Msg("transport: shared-session log queue full; dropping events")
		}
	}
}

// MarkFlushed queues the record that a connection flushed through seq.
func (l *redisLog) MarkFlushed(seq uint64) {
	for {
		old := l.flushed.Load()
		if seq <= old {
			return
		}
		if l.flushed.CompareAndSwap(old, seq) {
			break
		}
	}
	select {
	case l.m.logq <- logOp{log: l, flushed: seq}:
	default: // only the start of a fresh GET elsewhere is at stake
	}
}

// sync sets st's position (the last seq and the last flushed) from Redis
// before a connection attaches, so that a fresh GET starts where the last
// connection, on whichever replica, stopped, and a Last-Event-ID from the
// future is clamped as in memory. If Redis cannot say, it fails: this
// copy's own position may be far behind (another replica held the
// stream), and reading from it would replay events the client already
// has; the caller opens the stream pending instead (pend;
// docs/adr/0049-get-opens-through-an-outage.md).
func (l *redisLog) sync(ctx context.Context, st *transport.Stream) error {
	_, err := l.position(ctx, st, l.m.conn.Timeout(redisconn.Session))
	l.pmu.Lock()
	defer l.pmu.Unlock()
	if err == nil {
		l.pending.Store(false)
		l.floor = 0
	}
	return err
}

// position reads the stream's position from Redis within bound, raises
// st's to it and answers the last seq flushed.
func (l *redisLog) position(ctx context.Context, st *transport.Stream, bound time.Duration) (uint64, error) {
	if err := l.m.skipping(); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	v, err := l.m.rdb.HMGet(ctx, l.m.hashKey(l.id), "gseq", "gflushed").Result()
	if err != nil {
		l.m.failed(err)
		return 0, fmt.Errorf("read GET-stream position of client session %s: %w", l.id, err)
	}
	l.m.ok()
	flushed := hashUint(v[1])
	st.CatchUp(hashUint(v[0]), flushed)
	return flushed, nil
}

// pend marks the connection being opened as waiting for the stream's
// position; resume is the client's Last-Event-ID seq, -1 for none.
func (l *redisLog) pend(resume int64) {
	l.pmu.Lock()
	defer l.pmu.Unlock()
	l.pending.Store(true)
	l.resume, l.floor = resume, 0
}

// start is where a connection's reading begins, at the earliest after
// cursor; false while the position is pending and Redis cannot give it.
func (l *redisLog) start(st *transport.Stream, cursor uint64) (uint64, bool) {
	l.pmu.Lock()
	defer l.pmu.Unlock()
	if l.pending.Load() {
		flushed, err := l.position(l.m.bg, st, l.m.timeout)
		if err != nil {
			return 0, false
		}
		l.pending.Store(false)
		l.floor = flushed
		if l.resume >= 0 {
			l.floor = uint64(l.resume)
		}
	}
	return max(cursor, l.floor), true
}

// awaitsPosition reports whether a connection waits for the stream's
// position, which Redis answering again gives it. It takes no lock: start
// holds pmu across a Redis round trip, and the channel's reader asks.
func (l *redisLog) awaitsPosition() bool { return l.pending.Load() }

func hashUint(v any) uint64 {
	s, _ := v.(string)
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

// next reads the events after cursor; see EventLog.Read. A full page wakes
// the connection again for the rest.
func (l *redisLog) next(st *transport.Stream, cursor uint64, buf []transport.Event) ([]transport.Event, bool) {
	if l.m.skipping() != nil {
		return buf, false
	}
	ctx, cancel := context.WithTimeout(l.m.bg, l.m.timeout)
	defer cancel()
	page := int64(max(l.m.logSize, 16))
	msgs, err := l.m.rdb.XRangeN(ctx, l.m.logKey(l.id), "0-"+strconv.FormatUint(cursor+1, 10), "+", page).Result()
	if err != nil {
		l.m.failed(err) // read again at the next wake-up or keep-alive
		return buf, false
	}
	l.m.ok()
	first := len(buf)
	for _, x := range msgs {
		seq, err := strconv.ParseUint(strings.TrimPrefix(x.ID, "0-"), 10, 64)
		data, _ := x.Values["d"].(string)
		if err != nil || seq <= cursor {
			continue
		}
		buf = append(buf, transport.Event{Seq: seq, Data: []byte(data)})
	}
	lost := len(buf) > first && buf[first].Seq > cursor+1
	if len(buf) > first {
		st.CatchUp(buf[len(buf)-1].Seq, 0)
	}
	if int64(len(msgs)) == page {
		st.Notify()
	}
	return buf, lost
}

// appender writes the queued log operations in order, in batches; while
// Redis is down it retries the batch, so later operations wait behind it.
func (m *redisSessions) appender() {
	defer m.wg.Done()
	defer close(m.drained)
	batch := make([]logOp, 0, 128)
	backoff := m.tune.minBackoff
	for {
		select {
		case op := <-m.logq:
			batch = append(batch, op)
		case <-m.stop:
			m.flushOnStop(batch)
			return
		}
	fill:
		for len(batch) < cap(batch) {
			select {
			case op := <-m.logq:
				batch = append(batch, op)
			default:
				break fill
			}
		}
		for i := range batch {
			if batch[i].tok == 0 {
				batch[i].tok = m.nextTok.Add(1)
			}
		}
		for !m.writeLog(m.bg, batch) {
			// Redis is down: the origins of the batch's POST streams
			// deliver from memory meanwhile (postlog.go).
			for _, op := range batch {
				if op.post != nil {
					op.post.st.Notify()
				}
			}
			if !m.sleep(backoff) {
				m.flushOnStop(batch)
				return
			}
			backoff = min(2*backoff, m.tune.maxBackoff)
		}
		backoff = m.tune.minBackoff
		if m.logDropped.Swap(0) > 0 {
			m.log.Info().Msg("transport: shared-session log queue drains again")
		}
		clear(batch)
		batch = batch[:0]
	}
}

// flushOnStop makes one last attempt at what is queued when the store
// closes; what Redis does not take then is lost, and said so.
func (m *redisSessions) flushOnStop(batch []logOp) {
	for {
		select {
		case op := <-m.logq:
			batch = append(batch, op)
			continue
		default:
		}
		break
	}
	if len(batch) == 0 {
		return
	}
	for i := range batch {
		if batch[i].tok == 0 {
			batch[i].tok = m.nextTok.Add(1)
		}
	}
	// Not skipped for a recent failure: this is the last chance, and
	// writeBatch bounds it with the Redis timeout.
	if !m.writeBatch(context.WithoutCancel(m.bg), batch) {
		m.log.Warn().Int("operations", len(batch)).Msg("transport: GET-stream log writes lost at shutdown: redis unavailable")
	}
}

// writeLog runs a batch in one pipeline, after one more that reads the
// subscribers of the batch's resource updates and the liveness of the
// homes its broadcasts name, if it has any; false if Redis failed (the
// batch is then retried whole, which the tokens make safe).
func (m *redisSessions) writeLog(ctx context.Context, batch []logOp) bool {
	if m.skipping() != nil {
		return false
	}
	return m.writeBatch(ctx, batch)
}

// writeBatch is writeLog without the skip window.
func (m *redisSessions) writeBatch(ctx context.Context, batch []logOp) bool {
	return m.writeBatchOnce(ctx, batch, true)
}

// writeBatchOnce writes batch; reload allows one more try after loading
// the scripts when Redis did not hold them.
func (m *redisSessions) writeBatchOnce(ctx context.Context, batch []logOp, reload bool) bool {
	rctx, cancel := context.WithTimeout(ctx, m.timeout+time.Duration(len(batch))*time.Millisecond)
	members, alive, err := m.lookups(rctx, batch)
	cancel()
	if err != nil {
		m.failed(err)
		return false
	}
	n := len(batch) // commands in the pipeline, which the deadline grows with
	for _, op := range batch {
		if op.uri != "" {
			n += len(members[m.subsKey(op.tenant, op.uri)])
		}
	}
	ctx, cancel = context.WithTimeout(ctx, m.timeout+time.Duration(n)*time.Millisecond)
	defer cancel()
	// Each command's op in batch, and the session it writes to.
	type target struct {
		op int
		id string
	}
	cmds := make([]*redis.Cmd, 0, len(batch))
	targets := make([]target, 0, len(batch))
	add := func(c *redis.Cmd, op int, id string) {
		cmds = append(cmds, c)
		targets = append(targets, target{op, id})
	}
	all, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, op := range batch {
			switch {
			case op.post != nil:
				add(m.evalPostAppend(ctx, p, op), i, op.post.sid)
			case op.uri != "":
				for _, id := range members[m.subsKey(op.tenant, op.uri)] {
					add(m.evalAppend(ctx, p, id, op, "", ""), i, id)
				}
			case op.data == nil:
				add(m.lua.markFlushed(ctx, p, m.hashKey(op.log.id), op.flushed), i, op.log.id)
			case !op.broadcast:
				add(m.evalAppend(ctx, p, op.log.id, op, "", ""), i, op.log.id)
			case op.home == m.self:
				add(m.evalAppend(ctx, p, op.log.id, op, m.self, ""), i, op.log.id)
			case !alive[op.home]:
				// The home this copy knows is dead (its liveness key
				// expired): take over, unless another replica did first
				// or the home moved meanwhile, so the event is logged
				// once and not lost with the dead home.
				add(m.evalAppend(ctx, p, op.log.id, op, m.self, op.home), i, op.log.id)
			}
			// A broadcast whose home is alive is that home's to log.
		}
		return nil
	})
	if noScript(all) {
		// Redis does not hold the scripts (the first batch, a restart, a
		// failover): load them and run the batch again, which the tokens
		// make safe; the commands that ran did their work once.
		if lerr := m.lua.loadAppendScripts(ctx, m.rdb); lerr != nil || !reload {
			m.failed(cmp.Or(lerr, err))
			return false
		}
		return m.writeBatchOnce(ctx, batch, false)
	}
	if err := outage(err, all); err != nil {
		// Retried whole, the tokens (and the POST-stream script's seq
		// check) make sure nothing is logged twice.
		m.failed(err)
		return false
	}
	m.ok()
	var stale []staleMember
	for j, c := range cmds {
		op := batch[targets[j].op]
		if op.post != nil {
			res, err := c.Int64()
			if err != nil {
				m.log.Error().Err(err).Str("stream", op.post.key).Msg("transport: POST-stream log write refused by redis")
			}
			op.post.confirmed(op, res, err)
			continue
		}
		if err := c.Err(); err != nil {
			m.log.Error().Err(err).Str("session", store.ClientSessionHandle(targets[j].id)).Msg("transport: GET-stream log write refused by redis")
			continue
		}
		seq, _ := c.Int64()
		if op.uri != "" {
			switch {
			case seq > 0:
				m.notified.Add(1)
			case seq == -1 || seq == -4:
				stale = append(stale, staleMember{m.subsKey(op.tenant, op.uri), targets[j].id})
			}
		}
		if st := op.st; st != nil {
			st.CatchUp(uint64(max(seq, 0)), 0) // the floor of a rewrite (sync.go)
			st.Notify()
		}
	}
	if len(stale) > 0 {
		m.dropStale(ctx, stale)
	}
	return true
}

// evalAppend queues the append of op's data to session id's log on p;
// home, when set, must be the session's home, or become it in place of
// deadHome.
func (m *redisSessions) evalAppend(ctx context.Context, p redis.Pipeliner, id string, op logOp, home, deadHome string) *redis.Cmd {
	sub, change := "", ""
	if op.uri != "" {
		sub = "s:" + op.uri
	}
	// Ids and replica names are base64url and hex: no escaping needed.
	wake := `{"o":"` + m.self + `","id":"` + id + `","op":"ev"}`
	if deadHome != "" {
		change = `{"o":"` + m.self + `","id":"` + id + `","op":"home","home":"` + m.self + `"}`
	}
	return m.lua.appendEvent(ctx, p, appendArgs{
		hash: m.hashKey(id), log: m.logKey(id), ttlMs: m.ttlMs(), maxLen: m.logSize, data: op.data,
		channel: m.changeChannel(id), wake: wake, tokenField: "t:" + m.self, token: op.tok,
		home: home, deadHome: deadHome, homeChange: change, subField: sub,
	})
}

// The EventLog of a shared session's GET stream: Redis holds the log,
// the ring stays empty.

// Take queues data for the log.
func (l *redisLog) Take(st *transport.Stream, data []byte) bool {
	l.append(st, data)
	return true
}

// Pushed is never called: the ring stays empty.
func (l *redisLog) Pushed(uint64, []byte, bool) {}

// Read reads the events after cursor from Redis.
func (l *redisLog) Read(st *transport.Stream, cursor uint64, buf []transport.Event) ([]transport.Event, bool, bool, bool) {
	from, ok := l.start(st, cursor)
	if !ok {
		return buf, false, false, true
	}
	evs, lost := l.next(st, from, buf)
	return evs, false, lost, true
}

// Limit: nothing in the ring is held back.
func (l *redisLog) Limit(last uint64) (uint64, bool) { return last, true }

// Follower: the log is the session's own.
func (l *redisLog) Follower() bool { return false }

// Open: the log exists with the session.
func (l *redisLog) Open() {}
