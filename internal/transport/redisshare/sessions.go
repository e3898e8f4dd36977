package redisshare

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	"github.com/rs/zerolog"
)

// redisSessions shares client sessions between replicas
// (docs/adr/0015-shared-client-sessions.md). Redis holds each session's
// durable state in a hash,
//
//	<prefix>cs:{<id>}        v, client, caps, tenant, principal, level, home, s:<uri>…,
//	                         gseq, gflushed, t:<replica>  (TTL = idle timeout)
//	<prefix>cs:{<id>}:g      the GET stream's event log, a Redis Stream
//	<prefix>cs:{<id>}:p<n>   a streamed POST response's event log, a Redis
//	                         Stream (TTL = idle timeout; postlog.go)
//	<prefix>cs:{<id>}:a:s<n> mailbox of server-to-client request s<n>: the
//	                         client's response once another replica took
//	                         it (TTL = idle timeout; answer.go)
//	<prefix>cs:{<id>}:end    tombstone of a DELETE (TTL = idle timeout)
//	<prefix>replica:<self>   liveness of a replica (TTL = 3 heartbeats), so
//	                         that another takes over as home of the
//	                         sessions of a dead one (log.go)
//	<prefix>{epoch}          written by the first replica to find none: its
//	                         absence means Redis lost its data
//	<prefix>{epoch}:new      set beside a new epoch for lossGrace: the
//	                         replicas holding copies are still writing
//	                         them back (docs/adr/0026-redis-data-loss.md)
//
// (the braces keep a session's keys in one Cluster slot, for the
// scripts), and every replica keeps a local copy of the session (a
// ClientSession shared through its redisCopy), built from the hash the
// first time a request names the id (materialised), so a request
// for a session this replica knows costs no Redis round trip. Changes —
// log level, subscriptions, home, end — are written through a script that
// also PUBLISHes them on <prefix>sessions (on a Redis Cluster, SPUBLISHes
// them on the session's own <prefix>cs:{<id>}:ch; shardbus.go); every
// replica holding a copy, the writer included, applies them in the
// channel's order, so concurrent writers converge on Redis's last write.
// The listen streams' events go on <prefix>listen:{l<n>}, a channel per
// hash of the tenant (listenbus.go).
//
// Connections, in-flight requests and server-to-client requests stay
// local: they belong to the replica holding the connection. Messages
// reach them through Redis: the GET stream's log (log.go), which the
// origin of a resource update writes for every subscriber
// (fanout.go), and client responses and cancellations forwarded to
// the replica whose handler waits or runs (answer.go). The log of a
// streamed POST response is mirrored into Redis by the replica running
// its handler, so that any replica resumes it (postlog.go).
type redisSessions struct {
	parent  context.Context
	rdb     redis.UniversalClient
	lua     *luaScripts
	prefix  string
	channel string
	idle    time.Duration
	limit   int
	// caps bound one principal's and one tenant's sessions across
	// replicas (principal.go).
	caps    capLimits
	logSize int
	timeout time.Duration
	now     func() time.Time
	log     zerolog.Logger
	tune    redisTuning
	// self names this replica in the home field and on the channel.
	self string

	mu      sync.RWMutex
	byID    map[string]*redisCopy
	loading map[string]*loadCall
	closed  bool
	// loads bounds the materialisations in progress (a slot each): past
	// it, a request for a session this replica does not know gets 503
	// with Retry-After rather than one more Redis round trip queued
	// behind the others (docs/adr/0023-get-needs-redis-position.md).
	loads chan struct{}

	// conn is Redis's health, shared with the process's other users of
	// Redis (docs/adr/0044-one-redis-foundation.md): while its breaker is
	// open Redis is skipped, so an unreachable Redis costs a request
	// nothing rather than a timeout each; one slow reply does not open
	// it. ownConn: the transport made it and closes it; unwatch removes
	// the outage hook.
	conn    *redisconn.Conn
	ownConn bool
	unwatch func()
	// resyncDue: Redis answers again after an outage; the sweeper
	// re-reads every local copy at once, since changes published
	// meanwhile were missed and Redis may have lost its data
	// (docs/adr/0026-redis-data-loss.md).
	resyncDue atomic.Bool
	// epoch is the value of <prefix>{epoch} this replica last saw; a
	// different one means Redis lost its data meanwhile. Read and written
	// by heartbeat only: in the constructor, then the sweeper's goroutine.
	epoch string

	kick       chan struct{} // capacity 1: run a sweep now
	retry      chan struct{} // capacity 1: run a sweep after a backoff (retrySoon)
	logq       chan logOp    // GET-stream log writes, in order (log.go)
	nextTok    atomic.Uint64
	logDropped atomic.Int64 // events dropped on a full queue this episode
	// Counters of Stats (fanout.go).
	updates, notified, dropped atomic.Int64
	// sweeps and beats count the sweeper's finished rounds and
	// heartbeats: what a test waits for instead of a sleep.
	sweeps, beats atomic.Int64

	bg     context.Context // background work's; cancelled by Close
	cancel context.CancelFunc
	stop   chan struct{}
	// drained is closed when the appender has returned, having written
	// what was queued (or given up on it); Close waits for it, within a
	// bound, before it cancels bg.
	drained chan struct{}
	wg      sync.WaitGroup
	psMu    sync.Mutex
	ps      *redis.PubSub
	// shard carries the changes on a Redis Cluster, a shard channel per
	// session (shardbus.go); nil elsewhere, where one channel does.
	shard *shardBus
	// listen carries the listen streams' events between replicas
	// (listenbus.go).
	listen *listenBus
}

// redisTuning holds the timings tests shorten.
type redisTuning struct {
	poll                   time.Duration // one wait for a pub/sub message
	minBackoff, maxBackoff time.Duration // between attempts while Redis is down
	// heartbeat: how often the replica's liveness key is refreshed; it
	// expires after livenessBeats of them without one.
	heartbeat time.Duration
	// sweep, when set, replaces the sweeper's period (a quarter of the
	// idle timeout), so that a test may sweep often under a long TTL.
	sweep time.Duration
}

// livenessBeats heartbeats missed make a replica dead to the others.
const livenessBeats = 3

// loadCall is a materialisation in progress. Changes published meanwhile
// are kept and applied, in order, on top of what HGETALL returned: every
// change is an assignment, so replaying ones the read already saw is
// harmless, and none published after the read is missed.
type loadCall struct {
	done    chan struct{}
	changes []sessionChange
	// reread: the session's channel was lost and came back while the
	// load was in flight, so what was published meanwhile is neither in
	// changes nor, if the hash was read before it, in the copy: the copy
	// is re-read once made (shardbus.go); under mu.
	reread bool
	sess   *transport.ClientSession
	err    error
}

// Operations on the channel.
const (
	opEnd   = "end"
	opLevel = "level"
	opSub   = "sub"
	opUnsub = "unsub"
	opHome  = "home"
	opSync  = "sync" // re-read the session: it was rewritten after an outage
	opEvent = "ev"   // the log of the GET stream, or of POST stream Stream, grew
)

// sessionChange is a message on the channel.
type sessionChange struct {
	Origin string `json:"o"`
	ID     string `json:"id"`
	Op     string `json:"op"`
	Level  string `json:"level,omitempty"`
	URI    string `json:"uri,omitempty"`
	Home   string `json:"home,omitempty"`
	// HV is the home version Redis gave a home change (opHome; the
	// scripts add it, luascripts.go).
	HV uint64 `json:"hv,omitempty"`
	// Base is the home version a home claim was made on, known to the
	// claiming copy alone: a claim replayed after an outage takes the
	// home only if nobody claimed it since (evalChange).
	Base uint64 `json:"-"`
	// Stream names the POST stream whose log grew (opEvent); empty for
	// the GET stream's.
	Stream string `json:"s,omitempty"`
	// Msg is a client's response to route (opAnswer, answer.go).
	Msg json.RawMessage `json:"m,omitempty"`
	// Req is the id of the client's request to cancel (opCancel,
	// answer.go): its raw JSON text, in a string so that it comes
	// back byte for byte (a RawMessage would be HTML-escaped).
	Req string `json:"r,omitempty"`
}

var (
	errRedisSkipped = errors.New("redis unavailable: not waited on until a probe finds it answering")
	errTooManyLoads = errors.New("too many client sessions being loaded from redis at once")
	// errRedisLost: Redis has no hash for the session, but it lost its
	// data a moment ago, so a replica holding a copy may be writing it
	// back: 503 with Retry-After, not a 404 that would make the client
	// drop a live session (docs/adr/0026-redis-data-loss.md).
	errRedisLost = fmt.Errorf("redis lost its data a moment ago: %w", transport.ErrSessionPending)
)

// maxConcurrentLoads bounds the client sessions one replica reads from
// Redis at once (redisSessions.loads).
const maxConcurrentLoads = 64

func newRedisSessions(parent context.Context, rdb redis.UniversalClient, o Options, cfg transport.SharingConfig) (*redisSessions, error) {
	cluster, sharded := rdb.(*redis.ClusterClient)
	lua, err := loadLuaScripts(sharded)
	if err != nil {
		return nil, err
	}
	var id [12]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	m := &redisSessions{
		parent: parent, rdb: rdb, prefix: o.KeyPrefix, channel: o.KeyPrefix + "sessions",
		idle: cfg.IdleTimeout, limit: cfg.MaxSessions, caps: capLimits{perPrincipal: cfg.MaxSessionsPerPrincipal, perTenant: cfg.MaxSessionsPerTenant},
		logSize: cfg.EventLogSize, timeout: o.Timeout, now: cfg.Now, log: cfg.Logger, tune: o.tune, self: hex.EncodeToString(id[:]),
		byID: map[string]*redisCopy{}, loading: map[string]*loadCall{}, loads: make(chan struct{}, maxConcurrentLoads),
		logq: make(chan logOp, 4096), kick: make(chan struct{}, 1), retry: make(chan struct{}, 1), stop: make(chan struct{}), drained: make(chan struct{}),
		lua: lua,
	}
	m.conn = o.Conn
	if m.conn == nil {
		m.conn = redisconn.New(rdb, redisconn.Options{KeyPrefix: o.KeyPrefix,
			Timeouts: redisconn.Timeouts{Hot: o.Timeout}, Log: cfg.Logger})
		m.ownConn = true
	}
	m.unwatch = m.conn.Watch(m.health)
	m.bg, m.cancel = context.WithCancel(context.WithoutCancel(parent))
	m.heartbeat(true) // alive before it is anyone's home
	m.listen = newListenBus(m, cluster, cfg.Listen)
	m.wg.Add(4)
	go m.listen.publisher()
	if sharded {
		m.shard = newShardBus(m, cluster)
		go m.shard.run()
	} else {
		go m.subscribe()
	}
	go m.sweep(cmp.Or(m.tune.sweep, min(max(m.idle/4, 10*time.Millisecond), time.Minute)))
	go m.appender()
	return m, nil
}

func (m *redisSessions) hashKey(id string) string { return m.prefix + "cs:{" + id + "}" }
func (m *redisSessions) logKey(id string) string  { return m.hashKey(id) + ":g" }
func (m *redisSessions) endKey(id string) string  { return m.hashKey(id) + ":end" }
func (m *redisSessions) ttlMs() int64             { return max(m.idle.Milliseconds(), 1) }

// replicaKey is replica's liveness key, which it refreshes every
// heartbeat while it runs: a replica whose key expired is dead, and
// another takes over as home of its sessions, so their broadcasts are
// still logged (log.go).
func (m *redisSessions) replicaKey(replica string) string { return m.prefix + "replica:" + replica }

// epochKey and freshKey tell a session Redis lost (a restart without
// persistence) from one that ended (docs/adr/0026-redis-data-loss.md):
// the epoch key has no TTL, so its absence means Redis lost its data, and
// the first replica to find it missing writes a new one, with freshKey
// beside it for lossGrace, while the replicas holding copies write them
// back. One slot (the braces), for scriptEpoch.
func (m *redisSessions) epochKey() string { return m.prefix + "{epoch}" }
func (m *redisSessions) freshKey() string { return m.epochKey() + ":new" }

// lossGrace is how long after Redis lost its data a session it lacks
// gets 503 rather than 404: every replica connected to Redis notices the
// new epoch at its next heartbeat and writes its copies back in the
// sweep that follows. A replica cut off for longer cannot: its sessions
// are 404 elsewhere after that, as they would be after its death.
func (m *redisSessions) lossGrace() time.Duration {
	return livenessBeats*m.tune.heartbeat + 2*m.timeout
}

// heartbeat refreshes this replica's liveness key (or, stopping, removes
// it, so that others take over at once) and checks the epoch: a new one
// means Redis lost its data, and every local copy is re-read at once, so
// that those Redis lacks are written back before lossGrace runs out
// (docs/adr/0026-redis-data-loss.md).
func (m *redisSessions) heartbeat(alive bool) {
	if m.skipping() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(m.bg), m.timeout)
	defer cancel()
	var err error
	var epoch *redis.Cmd
	if alive {
		// A replica starting with no epoch to compare (the first of a
		// deployment, or one that started while Redis was down) holds no
		// copy to write back: its new epoch is not fresh.
		fresh := m.epoch != ""
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		_, err = m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, m.replicaKey(m.self), "1", livenessBeats*m.tune.heartbeat)
			epoch = m.lua.readEpoch(ctx, p, m.epochKey(), m.freshKey(), hex.EncodeToString(b[:]), max(m.lossGrace().Milliseconds(), 1), fresh)
			return nil
		})
	} else {
		err = m.rdb.Del(ctx, m.replicaKey(m.self)).Err()
	}
	if err != nil {
		if alive {
			m.failed(fmt.Errorf("refresh replica liveness: %w", err))
		}
		return
	}
	m.ok()
	if !alive {
		return
	}
	e, _ := epoch.Text()
	switch {
	case e == "":
		return // a script refused: nothing learnt
	case m.epoch == "":
	case e != m.epoch:
		m.log.Warn().Str("channel", m.channel).
			Msg("transport: redis lost its data (new epoch); writing this replica's client sessions back")
		m.resyncAll()
	}
	m.epoch = e
}

// share turns a fresh local session into this store's copy of a shared
// one (ClientSession.Share), whose GET stream's log is in Redis.
func (m *redisSessions) share(s *transport.ClientSession, home bool) *redisCopy {
	c := &redisCopy{m: m, s: s, id: s.ID()}
	if home {
		// A new session's first home is version 1, written with it
		// (sessionFields); a copy read from Redis takes the hash's
		// (reset).
		c.homeID, c.homeVer = m.self, 1
	}
	c.glog = &redisLog{m: m, id: c.id}
	s.Share(c, c.glog)
	return c
}

func (m *redisSessions) Create(ctx context.Context, in transport.SessionInit) (*transport.ClientSession, error) {
	if err := m.skipping(); err != nil {
		return m.createOffline(in, err)
	}
	id, err := transport.NewSessionID()
	if err != nil {
		return nil, err
	}
	m.mu.RLock()
	full, closed := len(m.byID) >= m.limit, m.closed
	m.mu.RUnlock()
	switch {
	case closed:
		return nil, transport.ErrClosed
	case full:
		return nil, transport.ErrTooManySessions
	}
	s := transport.NewClientSession(m.parent, id, in, m.now())
	c := m.share(s, true)
	fields, err := sessionFields(c)
	if err != nil {
		s.Terminate()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, m.conn.Timeout(redisconn.Session))
	defer cancel()
	// Subscribed before the session exists in Redis: no change of it is
	// published before this replica hears it.
	if err := m.watchChanges(ctx, id); err != nil {
		s.Terminate()
		m.failed(err)
		return m.createOffline(in, err)
	}
	kept := false
	defer func() {
		if !kept {
			m.unwatchChanges(id)
		}
	}()
	if err := m.reserve(ctx, s.Principal(), s.Tenant(), id); err != nil {
		s.Terminate()
		if errors.Is(err, transport.ErrPrincipalSessions) || errors.Is(err, transport.ErrTenantSessions) {
			return nil, err
		}
		m.failed(err)
		if redisconn.Unhealthy(err) {
			return m.createOffline(in, err)
		}
		return nil, fmt.Errorf("reserve a client session in redis: %w", err)
	}
	_, err = m.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, m.hashKey(id), fields...)
		p.PExpire(ctx, m.hashKey(id), m.idle)
		return nil
	})
	if err != nil {
		s.Terminate()
		m.failed(err)
		m.giveBack(m.capSets(s.Principal(), s.Tenant()), id)
		if redisconn.Unhealthy(err) {
			// A store that timed out may still have been applied: Redis
			// then keeps the hash of id, which no client knows, until
			// the idle timeout expires it.
			return m.createOffline(in, err)
		}
		return nil, fmt.Errorf("store client session in redis: %w", err)
	}
	m.ok()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		s.Terminate()
		return nil, transport.ErrClosed
	}
	m.byID[id] = c
	kept = true
	return s, nil
}

// createOffline creates a client session while Redis cannot be reached
// (why: cause), here alone, rather than refuse the client
// (docs/adr/0047-sessions-created-in-an-outage.md). Its id says so
// (newOfflineSessionID), and the copy counts as one whose hash Redis
// lost: the sweeper writes it back once Redis answers, as it does for a
// session Redis lost (docs/adr/0026-redis-data-loss.md). Meanwhile the
// other replicas answer it 503, never 404. The per-principal and
// per-tenant caps hold among this replica's sessions only, since the
// shared count is in Redis.
func (m *redisSessions) createOffline(in transport.SessionInit, cause error) (*transport.ClientSession, error) {
	id, err := newOfflineSessionID(m.now())
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closed:
		return nil, transport.ErrClosed
	case len(m.byID) >= m.limit:
		return nil, transport.ErrTooManySessions
	}
	var principal, tenant int
	for _, o := range m.byID {
		if o.s.Principal() == in.Principal && o.s.Tenant() == in.Tenant {
			principal++
		}
		if o.s.Tenant() == in.Tenant {
			tenant++
		}
	}
	switch {
	case m.caps.perPrincipal > 0 && principal >= m.caps.perPrincipal:
		return nil, transport.ErrPrincipalSessions
	case m.caps.perTenant > 0 && tenant >= m.caps.perTenant:
		return nil, transport.ErrTenantSessions
	}
	s := transport.NewClientSession(m.parent, id, in, m.now())
	c := m.share(s, true)
	c.setLost()
	m.byID[id] = c
	m.watchChangesLater(id)
	m.log.Debug().Err(cause).Msg("transport: client session created without redis; written back when it answers")
	if !errors.Is(cause, errRedisSkipped) {
		// One operation failed but Redis is not known to be down: try the
		// write-back now rather than at the sweeper's next round. (While
		// the breaker is open, its closing kicks the sweeper: health.)
		m.kickSweep()
	}
	return s, nil
}

// sessionFields encodes what initialize established and what the client
// changed since, as HSET arguments, with home when this copy is the
// session's home: a rewrite after Redis lost the session must put it
// back, or no copy's tools/list_changed would be logged for it (only the
// home logs a broadcast; log.go), and a claim made while Redis was
// skipped is written this way. The rewrite script sets home only where
// Redis names none, so a home another replica claimed meanwhile stands.
func sessionFields(c *redisCopy) ([]any, error) {
	s := c.s
	client, err := json.Marshal(s.ClientInfo())
	if err != nil {
		return nil, fmt.Errorf("encode client info: %w", err)
	}
	caps, err := json.Marshal(s.ClientCapabilities())
	if err != nil {
		return nil, fmt.Errorf("encode client capabilities: %w", err)
	}
	level, subs := s.ClientState()
	f := []any{"v", s.ProtocolVersion(), "client", client, "caps", caps, "tenant", s.Tenant(), "principal", s.Principal(), "level", string(level)}
	if c.IsHome() {
		f = append(f, "home", c.m.self)
	}
	// The home version goes on from this copy's, so that a claim made
	// after the write-back is newer than every one copies have seen.
	if hv := c.homeVersion(); hv > 0 {
		f = append(f, "hv", strconv.FormatUint(hv, 10))
	}
	for _, uri := range subs {
		f = append(f, "s:"+uri, "1")
	}
	return f, nil
}

// Get returns this replica's copy, materialising it from Redis on first
// sight. An error other than ErrSessionNotFound means Redis could not
// say: the transport answers 503 with Retry-After, never a 404 that would
// make the client drop a live session (docs/adr/0026-redis-data-loss.md).
//
// The copy returned is touched under the store's lock, which evict takes
// to re-check idleness: the sweeper cannot let go of a copy a request has
// just been given, which would then answer 404 (errSessionEnded) for a
// session alive in Redis (docs/adr/0025-shared-copy-lifetime.md).
//
// A copy idle here for longer than the idle timeout (the home's, which
// the sweeper keeps) may have outlived the session: Redis expired it and
// the other replicas answer 404. It is confirmed in Redis, which extends
// the TTL, before it is served; served blindly, it would be touched, and
// the sweeper would then find the hash of a recently used copy missing
// and write it back: an idle expiry must end the session on every replica
// (docs/adr/0025-shared-copy-lifetime.md). Redis unable to say: 503.
func (m *redisSessions) Get(ctx context.Context, id string) (*transport.ClientSession, error) {
	if !possibleSessionID(id) {
		return nil, transport.ErrSessionNotFound // not one of ours: no key lookup for it
	}
	for {
		c, stale := m.local(id, false)
		if c == nil {
			break
		}
		if !stale {
			return c.s, nil
		}
		if err := m.confirm(ctx, c); err != nil {
			return nil, err
		}
		if c, _ := m.local(id, true); c != nil {
			return c.s, nil
		}
		// Let go of meanwhile: loaded again below.
	}
	m.mu.Lock()
	if c := m.byID[id]; c != nil {
		m.mu.Unlock()
		return m.Get(ctx, id) // materialised meanwhile
	}
	if m.closed {
		m.mu.Unlock()
		return nil, transport.ErrClosed
	}
	if c := m.loading[id]; c != nil {
		m.mu.Unlock()
		select {
		case <-c.done:
			return c.sess, c.err
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for client session %s: %w", id, ctx.Err())
		}
	}
	select {
	case m.loads <- struct{}{}:
	default:
		m.mu.Unlock()
		return nil, errTooManyLoads
	}
	defer func() { <-m.loads }()
	c := &loadCall{done: make(chan struct{})}
	m.loading[id] = c
	m.mu.Unlock()

	// Other requests for the id wait on this load: it must not end when
	// this request's client hangs up (load bounds it with the Redis
	// timeout).
	c.sess, c.err = m.materialise(context.WithoutCancel(ctx), id, c)
	close(c.done)
	return c.sess, c.err
}

// local returns this replica's copy of id, touched, unless it is stale
// (idle here for longer than the idle timeout) and not confirmed: then
// it is returned untouched, with stale true.
func (m *redisSessions) local(id string, confirmed bool) (c *redisCopy, stale bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c = m.byID[id]
	if c == nil {
		return nil, false
	}
	now := m.now()
	if !confirmed && c.s.IdleSince(now.Add(-m.idle)) {
		return c, true
	}
	c.s.Touch(now)
	return c, false
}

// confirm asks Redis whether the session of a stale copy still lives,
// extending its TTL if so; if it ended, the copy goes
// (docs/adr/0025-shared-copy-lifetime.md).
func (m *redisSessions) confirm(ctx context.Context, c *redisCopy) error {
	if err := m.skipping(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	var live *redis.Cmd
	var lc lossCheck
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		live = m.lua.refreshSession(ctx, p, m.hashKey(c.id), m.logKey(c.id), m.ttlMs())
		lc = m.queueLossCheck(ctx, p, c.id)
		return nil
	})
	if err != nil {
		m.failed(err)
		return fmt.Errorf("confirm client session in redis: %w", err)
	}
	m.ok()
	if n, _ := live.Int(); n == 1 {
		return nil
	}
	if err := m.verdict(lc, c.id); !errors.Is(err, transport.ErrSessionNotFound) {
		return err // Redis lost its data: the copy waits for the rewrite
	}
	m.evict(c, m.now().Add(-m.idle))
	return transport.ErrSessionNotFound
}

// lossCheck is what tells, beside a read of a session's hash, a session
// that ended from one Redis lost (docs/adr/0026-redis-data-loss.md).
type lossCheck struct{ ended, epoch, fresh *redis.IntCmd }

func (m *redisSessions) queueLossCheck(ctx context.Context, p redis.Pipeliner, id string) lossCheck {
	return lossCheck{p.Exists(ctx, m.endKey(id)), p.Exists(ctx, m.epochKey()), p.Exists(ctx, m.freshKey())}
}

// verdict on session id, whose hash Redis lacks: ended
// (ErrSessionNotFound) — DELETEd (the tombstone) or expired — unless a
// replica holding a copy may be about to write it back: Redis lost its
// data a moment ago (no epoch, or a fresh one), or the session was
// created while Redis could not be reached and is younger than the idle
// timeout (docs/adr/0047-sessions-created-in-an-outage.md). Then the
// client is told to retry (errRedisLost, 503), never to drop a live
// session.
// offlineClockSkew is how far ahead of this replica's clock another
// replica's may be when it dates an offline session id.
const offlineClockSkew = time.Minute

func (m *redisSessions) verdict(c lossCheck, id string) error {
	if c.ended.Val() != 0 {
		return transport.ErrSessionNotFound
	}
	if c.epoch.Val() == 0 || c.fresh.Val() == 1 {
		return errRedisLost
	}
	// An id dated later than a replica's clock can be off was made up:
	// without the bound a forged id would be answered 503 forever.
	if since, ok := offlineSince(id); ok {
		if age := m.now().Sub(since); age > -offlineClockSkew && age < m.idle {
			return errRedisLost
		}
	}
	return transport.ErrSessionNotFound
}

func (m *redisSessions) materialise(ctx context.Context, id string, lc *loadCall) (*transport.ClientSession, error) {
	c, watched, err := m.load(ctx, id)
	m.mu.Lock()
	delete(m.loading, id)
	if err == nil {
		switch {
		case m.closed:
			c.s.Terminate()
			err = transport.ErrClosed
		case len(m.byID) >= m.limit:
			c.s.Terminate()
			err = transport.ErrTooManySessions
		}
	}
	for _, ch := range lc.changes {
		if err != nil {
			break
		}
		if ch.Op == opEnd {
			c.s.Terminate()
			err = transport.ErrSessionNotFound
			break
		}
		c.apply(ch)
	}
	if err != nil {
		if watched {
			m.unwatchChanges(id)
		}
		m.mu.Unlock()
		return nil, err
	}
	m.byID[id] = c
	reread := lc.reread
	m.mu.Unlock()
	if reread {
		m.resync([]*redisCopy{c})
	}
	return c.s, nil
}

// load reads a session's hash and builds a local copy of it; watched:
// it subscribed to the session's changes (watchChanges), which the copy keeps,
// or materialise gives back if it is not kept.
func (m *redisSessions) load(ctx context.Context, id string) (c *redisCopy, watched bool, err error) {
	if err := m.skipping(); err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, m.conn.Timeout(redisconn.Session))
	defer cancel()
	// Subscribed before the read: a change published after it is heard
	// (loadCall), one before it is in what it reads.
	if err := m.watchChanges(ctx, id); err != nil {
		m.failed(err)
		return nil, false, err
	}
	var read *redis.MapStringStringCmd
	var lc lossCheck
	_, err = m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		read = p.HGetAll(ctx, m.hashKey(id))
		lc = m.queueLossCheck(ctx, p, id)
		return nil
	})
	if err != nil {
		m.failed(err)
		return nil, true, fmt.Errorf("load client session from redis: %w", err)
	}
	m.ok()
	h := read.Val()
	if h["v"] == "" {
		return nil, true, m.verdict(lc, id)
	}
	in := transport.SessionInit{Version: h["v"], Tenant: h["tenant"], Principal: h["principal"], EventLogSize: m.logSize}
	if err := json.Unmarshal([]byte(h["client"]), &in.Client); err != nil {
		return nil, true, fmt.Errorf("decode client session %s: client info: %w", id, err)
	}
	if err := json.Unmarshal([]byte(h["caps"]), &in.Capabilities); err != nil {
		return nil, true, fmt.Errorf("decode client session %s: capabilities: %w", id, err)
	}
	c = m.share(transport.NewClientSession(m.parent, id, in, m.now()), h["home"] == m.self)
	c.reset(h)
	return c, true, nil
}

// Delete ends the session everywhere, so it is 404 on every replica
// afterwards: the keys go, a tombstone stops a replica that was cut off
// from resurrecting it, and the end is published so every replica drops
// its copy.
func (m *redisSessions) Delete(ctx context.Context, id string) error {
	if err := m.skipping(); err != nil {
		return err
	}
	msg, _ := json.Marshal(sessionChange{Origin: m.self, ID: id, Op: opEnd}) // strings always encode
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	var cmd *redis.Cmd
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = m.lua.deleteSession(ctx, p, deleteArgs{hash: m.hashKey(id), log: m.logKey(id), tombstone: m.endKey(id), ttlMs: m.ttlMs(), channel: m.changeChannel(id), msg: msg})
		// The local copy, if any, knows the subscriptions; members it
		// misses are removed when an update finds the session gone.
		m.mu.RLock()
		c := m.byID[id]
		m.mu.RUnlock()
		if c != nil {
			_, subs := c.s.ClientState()
			m.indexSubs(ctx, p, id, c.s.Tenant(), subs, false)
			m.release(ctx, p, c)
		}
		return nil
	})
	var n int
	if err == nil {
		n, err = cmd.Int()
	}
	if err != nil {
		m.failed(err)
		return fmt.Errorf("end client session in redis: %w", err)
	}
	m.ok()
	local := m.drop(id)
	if n == 0 && !local {
		return transport.ErrSessionNotFound
	}
	return nil
}

// drop ends this replica's copy, if any, without touching Redis.
func (m *redisSessions) drop(id string) bool {
	m.mu.Lock()
	c := m.byID[id]
	delete(m.byID, id)
	m.mu.Unlock()
	if c != nil {
		m.unwatchChanges(id)
		c.s.Terminate()
	}
	return c != nil
}

// evict lets go of this replica's copy s (the session lives on in Redis)
// if it is still the copy and still idle since cutoff, checked under the
// lock Get touches under, so that a copy a request was just given stays.
// A busy copy never goes: terminating it would cancel a handler that the
// client, active on other replicas, still waits for
// (docs/adr/0025-shared-copy-lifetime.md); the sweeper keeps its keys
// alive instead.
func (m *redisSessions) evict(c *redisCopy, cutoff time.Time) {
	m.mu.Lock()
	if m.byID[c.id] != c || c.s.Busy() || !c.s.IdleSince(cutoff) {
		m.mu.Unlock()
		return
	}
	delete(m.byID, c.id)
	m.mu.Unlock()
	m.unwatchChanges(c.id)
	c.s.Terminate()
}

// copies returns this replica's copies, taken under mu and walked without
// it, so that the walk may call back into the store.
func (m *redisSessions) copies() []*redisCopy {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Collect(maps.Values(m.byID))
}

// Each and Len see this replica's copies only.
func (m *redisSessions) Each(fn func(*transport.ClientSession) bool) {
	for _, c := range m.copies() {
		if !fn(c.s) {
			return
		}
	}
}

func (m *redisSessions) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.byID)
}

// Close stops the background work and ends this replica's copies; the
// sessions themselves live on in Redis for the other replicas.
func (m *redisSessions) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	m.mu.Unlock()
	close(m.stop)
	m.psMu.Lock()
	if m.ps != nil {
		_ = m.ps.Close() // unblocks a Receive in progress
	}
	m.psMu.Unlock()
	// The appender first: cancelling bg under a pipeline in flight would
	// lose the batch and everything still queued, on every graceful
	// shutdown. It finishes its batch and flushes the queue; a Redis that
	// does not answer is cut off after a bound.
	drain := time.NewTimer(m.drainBound())
	select {
	case <-m.drained:
	case <-drain.C:
		m.log.Warn().Msg("transport: GET-stream log writes still pending at shutdown; abandoning them")
	}
	drain.Stop()
	m.cancel()
	m.wg.Wait()
	m.heartbeat(false) // after the last refresh: others take over at once
	m.unwatch()
	if m.ownConn {
		_ = m.conn.Close() // its probe; the client is the caller's
	}
	m.mu.Lock()
	all := m.byID
	m.byID = map[string]*redisCopy{}
	m.mu.Unlock()
	for _, c := range all {
		c.s.Terminate()
	}
}

// drainBound is how long Close waits for the appender: the batch in
// flight and the final flush, each given the Redis timeout plus the
// per-command allowance writeLog grants a full queue.
func (m *redisSessions) drainBound() time.Duration {
	return 2 * (m.timeout + time.Duration(cap(m.logq))*time.Millisecond)
}

// writeThrough stores a change the client made on this replica and
// publishes it. The change already holds here; if Redis fails, it is kept
// as unsaved and replayed, alone, when Redis answers
// (docs/adr/0024-replay-changes-after-outage.md). It answers the home
// version Redis gave a home claim it took, and 0 for anything else.
func (m *redisSessions) writeThrough(sc *redisCopy, c sessionChange) uint64 {
	c.Origin, c.ID = m.self, sc.id
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	if m.skipping() != nil {
		sc.keepUnsaved(c)
		return 0
	}
	ctx, cancel := context.WithTimeout(m.bg, m.timeout)
	defer cancel()
	var cmd *redis.Cmd
	// The reverse index changes in the same round trip
	// (docs/adr/0016-resource-updates-logged-by-origin.md;
	// fanout.go). Not in the script: its key is in another Cluster
	// slot.
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = m.evalChange(ctx, p, sc, c, false)
		return nil
	})
	var (
		n  int64
		hv uint64
	)
	if err == nil {
		n, hv, err = updateResult(cmd)
	}
	if err != nil {
		m.failed(err)
		sc.keepUnsaved(c)
		m.retrySoon()
		return 0
	}
	m.ok()
	if n == 0 {
		// Not applied: it goes with the rewrite, or is replayed if
		// another replica wrote the session back first.
		sc.keepUnsaved(c)
		m.missing(sc)
		return 0
	}
	sc.saved(c) // an older unsaved change of the field must not follow it
	return hv
}

// evalChange queues on p a change of s: scriptUpdate, and for a
// subscription the reverse index. A replayed home claim (replay) takes
// the home only if the hash names none or the home version is still the
// one the claim was made on: a replica that claimed it meanwhile holds
// the stream now, but one whose claim came before this one's (the
// client has left it) does not.
func (m *redisSessions) evalChange(ctx context.Context, p redis.Pipeliner, sc *redisCopy, c sessionChange, replay bool) *redis.Cmd {
	msg, _ := json.Marshal(c) // strings always encode
	kind, field, value := "hset", changeField(c), ""
	switch c.Op {
	case opLevel:
		value = c.Level
	case opSub:
		value = "1"
	case opUnsub:
		kind = "hdel"
	case opHome:
		value = c.Home
		if replay {
			kind = "hsetv"
		}
	}
	cmd := m.lua.updateField(ctx, p, updateArgs{hash: m.hashKey(sc.id), log: m.logKey(sc.id), ttlMs: m.ttlMs(), channel: m.changeChannel(sc.id), msg: msg, kind: kind, field: field, value: value, base: c.Base})
	if c.Op == opSub || c.Op == opUnsub {
		m.indexSubs(ctx, p, sc.id, sc.s.Tenant(), []string{c.URI}, c.Op == opSub)
	}
	return cmd
}

// changeField is the hash field a change sets or removes.
func changeField(c sessionChange) string {
	switch c.Op {
	case opLevel:
		return "level"
	case opSub, opUnsub:
		return "s:" + c.URI
	default:
		return c.Op // opHome: "home"
	}
}

// missing handles a local copy whose hash is gone. A DELETE leaves a
// tombstone, and a copy nobody used here for the idle timeout has
// outlived its session (the idle timeout ends it everywhere), unless work
// of it runs here (busy; docs/adr/0025-shared-copy-lifetime.md); anything
// else means Redis lost it (a restart without persistence, or its TTL ran
// out while this replica could not refresh it), and the copy is written
// back rather than ended, since a client still uses it
// (docs/adr/0026-redis-data-loss.md). The sweeper's rewrite checks the
// tombstone and drops the copy if there is one (DELETE ends a session
// everywhere).
func (m *redisSessions) missing(c *redisCopy) {
	if cutoff := m.now().Add(-m.idle); c.s.IdleSince(cutoff) && !c.s.Busy() {
		m.evict(c, cutoff)
		return
	}
	c.setLost()
	m.kickSweep()
}

// retrySoon asks for a sweep after a backoff: a write Redis failed while
// its breaker stays closed (a cluster node lost until its replica takes
// over, a burst of errors too short to open it) is replayed within
// seconds, not at the next round, which a long idle timeout puts up to a
// minute away. A write skipped while the breaker is open waits for its
// closing, which kicks the sweeper (health).
func (m *redisSessions) retrySoon() { signal(m.retry) }

func (m *redisSessions) kickSweep() { signal(m.kick) }

// signal wakes the goroutine waiting on ch, a channel of capacity 1,
// without blocking: a wake-up already pending covers this one.
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// skipping returns errRedisSkipped while the breaker is open: nothing
// waits on a Redis known to be down.
func (m *redisSessions) skipping() error {
	if !m.conn.Available() {
		return errRedisSkipped
	}
	return nil
}

// failed counts a Redis failure towards its health; a caller that hung
// up, or Close cancelling the store's own work, says nothing about
// Redis, and an error that is Redis's answer (a script's) is no failure.
func (m *redisSessions) failed(err error) { m.conn.Observe(err) }

// ok counts a success.
func (m *redisSessions) ok() { m.conn.Observe(nil) }

// health is told when the breaker opens and closes: the outage is logged
// once each way, and when it ends every copy is re-read, not only those
// with unsaved changes: Redis may have lost its data, and another replica
// then answers 503 for them until they are written back
// (docs/adr/0026-redis-data-loss.md).
func (m *redisSessions) health(available bool) {
	if !available {
		m.log.Warn().Str("channel", m.channel).
			Msg("transport: redis unavailable; known client sessions keep working, unknown ones get 503 until it answers")
		return
	}
	m.log.Info().Str("channel", m.channel).Msg("transport: redis answers again; client sessions are shared again")
	m.resyncDue.Store(true)
	m.kickSweep()
}
