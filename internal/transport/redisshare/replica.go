package redisshare

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

// redisCopy is this replica's copy of a shared client session, as the
// session's replicator: what the session core asks of sharing goes
// through it to the store, and it keeps what the store owes Redis for
// the copy.
//
// Lock order: wmu, then the store's mu, then hmu, then the session's
// lock (and its streams'), then smu. smu is a leaf: no other lock is
// taken while it is held.
type redisCopy struct {
	m  *redisSessions
	s  *transport.ClientSession
	id string // the session's
	// glog is the log of the session's GET stream.
	glog *redisLog

	// wmu orders this copy's writes to Redis: a write-through and the
	// replay of unsaved changes never cross, so that an older value never
	// lands after a newer one.
	wmu sync.Mutex

	// hmu orders the copy's changes of home: a claim's start and its
	// end, another replica's change applied, a re-read. A change found
	// stale, or not, is acted on (its stream closed) before a claim of
	// this copy can begin, which would make the finding wrong.
	hmu sync.Mutex

	smu sync.Mutex
	// homeID is the replica Redis names as home, as far as this copy
	// knows: the replica that tells the session of the broadcasts every
	// replica sees by itself (tools/list_changed), so that it is told
	// once, and that another replica takes over from when it dies
	// (log.go). Resource updates do not depend on it: their origin
	// writes them to every subscriber's log (fanout.go).
	homeID string
	// homeVer is the version (hash field hv) of the home this copy knows:
	// Redis raises it at every change of home, to at least its clock in
	// microseconds, so that it rises across a data loss too (update.lua).
	// A home change on the channel that is not newer is stale, published
	// before one this copy applied or made.
	homeVer uint64
	// claims counts this copy's home claims on their way to Redis, and
	// held keeps the newest home change another replica published
	// meanwhile: until the claim's version is known, there is no telling
	// whether it came before the claim (stale: the stream opened here is
	// the client's live one) or after (the client moved on).
	claims int
	held   *sessionChange
	// unsaved holds the changes the client made on this copy that Redis
	// has not taken (the write-through failed or was skipped), the last
	// one per hash field. The sweeper replays them as they are, as
	// idempotent HSET/HDEL, once Redis answers, so nothing acknowledged
	// is lost — never the copy's whole view, which would undo what other
	// replicas acknowledged meanwhile.
	unsaved map[string]sessionChange
	// lost: Redis has no hash for a session a client still uses here (it
	// lost its data, or the TTL ran out while this replica could not
	// refresh it): the sweeper writes the whole copy back, but only where
	// the hash is still missing.
	lost bool
	// refreshDue: a sweep could not extend the session's TTL (Redis
	// skipped or failing); the next sweep retries it. It is no reason to
	// write anything back.
	refreshDue bool
	// rereads counts the re-reads of the hash in flight; heard keeps the
	// client's changes the channel delivered since the first began, for
	// the re-read to apply again over a hash that may predate them.
	rereads int
	heard   []sessionChange
}

// Changed writes the client's change through to Redis.
func (c *redisCopy) Changed(ch transport.ClientChange) { _ = c.m.writeThrough(c, toWire(ch)) }

// toWire is the channel's form of a client's change.
func toWire(c transport.ClientChange) sessionChange {
	switch c.Kind {
	case transport.ChangeLevel:
		return sessionChange{Op: opLevel, Level: string(c.Level)}
	case transport.ChangeSubscribe:
		return sessionChange{Op: opSub, URI: c.URI}
	default:
		return sessionChange{Op: opUnsub, URI: c.URI}
	}
}

// fromWire is the client's change a channel message carries; false for
// any other (a home claim, an end).
func fromWire(ch sessionChange) (transport.ClientChange, bool) {
	switch ch.Op {
	case opLevel:
		return transport.ClientChange{Kind: transport.ChangeLevel, Level: protocol.LoggingLevel(ch.Level)}, true
	case opSub:
		return transport.ClientChange{Kind: transport.ChangeSubscribe, URI: ch.URI}, true
	case opUnsub:
		return transport.ClientChange{Kind: transport.ChangeUnsubscribe, URI: ch.URI}, true
	}
	return transport.ClientChange{}, false
}

// IndexesLocally: a shared session is found through Redis's index
// (fanout.go), which every replica sees.
func (c *redisCopy) IndexesLocally() bool { return false }

func (c *redisCopy) home() string {
	c.smu.Lock()
	defer c.smu.Unlock()
	return c.homeID
}

// IsHome reports whether Redis names this replica home, as far as this
// copy knows.
func (c *redisCopy) IsHome() bool { return c.home() == c.m.self }

func (c *redisCopy) homeVersion() uint64 {
	c.smu.Lock()
	defer c.smu.Unlock()
	return c.homeVer
}

// Broadcast queues the event on the GET stream's log: every copy of the
// session queues it, and Redis keeps one (log.go): the home's, or,
// when the home replica is dead, that of the first copy to take over as
// home.
func (c *redisCopy) Broadcast(st *transport.Stream, data []byte) bool {
	home := c.home()
	c.glog.broadcast(st, data, home)
	return home == c.m.self
}

// AwaitAnswer and ForgetAnswer write and delete the mailbox of a
// server-to-client request (answer.go).
func (c *redisCopy) AwaitAnswer(id protocol.ID)  { c.m.awaitAnswer(c, id) }
func (c *redisCopy) ForgetAnswer(id protocol.ID) { c.m.forgetAnswer(c, id) }

// AnswerPoll: a response that another replica took while this one's
// subscription was down waits in Redis (answer.go).
func (c *redisCopy) AnswerPoll() time.Duration { return c.m.tune.poll }

// ForwardAnswer hands the response on to the replica whose mailbox waits
// for it (answer.go).
func (c *redisCopy) ForwardAnswer(ctx context.Context, msg *protocol.Message, body []byte) (bool, error) {
	return true, c.m.forwardAnswer(ctx, c, msg, body)
}

// ForwardCancel publishes the cancellation for the replica running the
// request (answer.go).
func (c *redisCopy) ForwardCancel(ctx context.Context, id protocol.ID) error {
	return c.m.forwardCancel(ctx, c, id)
}

// Mirror makes st, the new stream of a POST response to request id on
// this replica, an origin mirrored in Redis (postlog.go). Nothing is
// written until the stream's writer opens it (postLog.Open) and its
// events are appended.
func (c *redisCopy) Mirror(st *transport.Stream, id protocol.ID) transport.EventLog {
	return &postLog{m: c.m, st: st, sid: c.id, key: c.m.postKey(c.id, st.Name()), origin: true, reqID: string(id)}
}

// Resume follows another replica's POST stream in Redis
// (postlog.go).
func (c *redisCopy) Resume(ctx context.Context, name string, have *transport.Stream) (*transport.Stream, error) {
	return c.m.follow(ctx, c, name, have)
}

// OpenStandalone starts a new connection where the last one, on any
// replica, stopped, and makes this replica the one that logs
// tools/list_changed for the session, since it holds the stream. Without
// the position the stream would start from this copy's, possibly far
// behind: the client would get again what it had.
//
// When Redis cannot give the position (an outage), the stream opens all
// the same, for a session this replica knows: a refused GET is one the
// client may never retry, and it would miss every notification after
// it. The connection reads nothing until Redis answers, then starts
// after the client's Last-Event-ID, or for a fresh GET where the last
// connection stopped (log.go, pending;
// docs/adr/0049-get-opens-through-an-outage.md).
func (c *redisCopy) OpenStandalone(ctx context.Context, st *transport.Stream, resume int64) (bool, error) {
	positioned := true
	if err := c.glog.sync(ctx, st); err != nil {
		c.glog.pend(resume)
		positioned = false
		c.m.log.Debug().Err(err).Str("session", store.ClientSessionHandle(c.s.ID())).Msg("transport: GET stream opened without its position; it reads once redis answers")
	}
	if !c.IsHome() {
		c.claimHome()
	}
	return positioned, nil
}

// claimHome makes this replica the session's home: the one that logs
// tools/list_changed, which every replica sees by itself, so that it is
// logged exactly once. The replica holding the GET stream claims it,
// since it is the one sure to be alive. (Resource updates do not depend
// on the home: their origin logs them; fanout.go.)
//
// A claim another replica published before this one can reach this copy
// after it (the channel is read while the claim is written): apply holds
// it until the claim's version is known, then drops it as stale.
func (c *redisCopy) claimHome() {
	c.hmu.Lock()
	c.smu.Lock()
	c.homeID = c.m.self
	c.claims++
	base := c.homeVer
	c.smu.Unlock()
	c.hmu.Unlock()
	hv := c.m.writeThrough(c, sessionChange{Op: opHome, Home: c.m.self, Base: base})
	c.hmu.Lock()
	c.smu.Lock()
	c.claims--
	if hv > c.homeVer {
		// The newest claim known: a reset that read the hash before it
		// landed does not undo it.
		c.homeID, c.homeVer = c.m.self, hv
	}
	var held *sessionChange
	if c.claims == 0 { // else the last claim in flight decides
		held, c.held = c.held, nil
	}
	c.smu.Unlock()
	c.hmu.Unlock()
	if held != nil {
		c.apply(*held) // newer than the claim, or dropped
	}
}

// apply takes a change another replica (or this one) made to the shared
// state, in the order Redis published it, without writing it back.
func (c *redisCopy) apply(ch sessionChange) {
	if ch.Op != opHome {
		if cc, ok := fromWire(ch); ok {
			c.s.ApplyChange(cc)
			c.smu.Lock()
			if c.rereads > 0 {
				c.heard = append(c.heard, ch)
			}
			c.smu.Unlock()
		}
		return
	}
	c.hmu.Lock()
	defer c.hmu.Unlock()
	ended := c.s.Ended() // smu is a leaf: the session's lock comes first
	c.smu.Lock()
	if ch.HV != 0 && ch.HV <= c.homeVer {
		c.smu.Unlock()
		return // stale: a newer home is known
	}
	if ch.Home != c.m.self && c.claims > 0 {
		if c.held == nil || ch.HV > c.held.HV {
			c.held = &ch
		}
		c.smu.Unlock()
		return
	}
	c.smu.Unlock()
	other := ch.Home != c.m.self
	if other {
		// Another replica claimed the session because it opened its GET
		// stream there (or took over from a dead home): the client
		// reconnected, and a message must not go out on two streams
		// (basic/transports). Close this replica's, as a new connection
		// supersedes the old in memory, with a retry hint in case it is
		// in fact the client's live one. Closed before the copy names
		// the new home, so that a copy naming another home has no
		// stream open, and again after: a GET opening here meanwhile
		// attached when this copy still named itself (its check after
		// attaching, in the transport, saw nothing to do).
		c.s.Supersede()
	}
	// Under hmu no claim or re-read came meanwhile: the change is still
	// the newest.
	c.smu.Lock()
	c.homeVer = max(c.homeVer, ch.HV)
	if !ended {
		c.homeID = ch.Home
	}
	again := other && c.homeID != c.m.self
	c.smu.Unlock()
	if again {
		c.s.Supersede()
	}
}

// reset replaces the client-changed state with the hash's; used when the
// copy is built and after this replica may have missed changes. The
// changes of this copy that Redis has not taken yet hold on top: they
// were acknowledged, and the sweeper writes them.
//
// A home that moved from this replica to another while the changes were
// missed is a claim this copy never applied: the GET stream it serves
// here is superseded, and closes as apply would have closed it, or the
// client would get every event on two streams. But a hash read before a
// home change this copy applied, or while its own claim is on its way,
// is stale about the home (its version, hv, tells): the change stands,
// and the stream the client just opened here stays.
func (c *redisCopy) reset(h map[string]string) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	hv, _ := strconv.ParseUint(h["hv"], 10, 64)
	superseded := false
	var subs []string
	for f, v := range h {
		if uri, ok := strings.CutPrefix(f, "s:"); ok && v != "" {
			subs = append(subs, uri)
		}
	}
	c.s.ResetState(protocol.LoggingLevel(h["level"]), subs, func() []transport.ClientChange {
		c.smu.Lock()
		defer c.smu.Unlock()
		// A claim of this copy's not yet written is replayed by the
		// sweeper, and takes the home if nobody claimed it since the
		// version it was made on (evalChange): until then it stands.
		claim, unsaved := c.unsaved[changeField(sessionChange{Op: opHome})]
		if hv >= c.homeVer && c.claims == 0 && !(unsaved && hv <= claim.Base) {
			home := h["home"]
			superseded = home != "" && home != c.m.self && c.homeID == c.m.self
			c.homeID, c.homeVer = home, hv
		}
		var pending []transport.ClientChange
		for _, ch := range c.unsaved {
			if cc, ok := fromWire(ch); ok {
				pending = append(pending, cc)
			}
		}
		return pending
	})
	if superseded {
		c.s.Supersede()
	}
}

// startReread: a re-read of the hash is about to be sent; the changes
// the channel delivers from now on are kept for it.
func (c *redisCopy) startReread() {
	c.smu.Lock()
	defer c.smu.Unlock()
	c.rereads++
}

// endReread ends a re-read and returns the changes heard since the
// first one in flight began, in the channel's order (all of them to the
// last to end, since another's hash may be as old).
func (c *redisCopy) endReread() []sessionChange {
	c.smu.Lock()
	defer c.smu.Unlock()
	c.rereads--
	heard := slices.Clone(c.heard)
	if c.rereads == 0 {
		c.heard = nil
	}
	return heard
}

// keepUnsaved records ch, which Redis has not taken, for the sweeper to
// replay; it replaces an older one of the same field.
func (c *redisCopy) keepUnsaved(ch sessionChange) {
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.unsaved == nil {
		c.unsaved = map[string]sessionChange{}
	}
	c.unsaved[changeField(ch)] = ch
}

// saved forgets the unsaved change of ch's field, which Redis just took
// a newer value of.
func (c *redisCopy) saved(ch sessionChange) {
	c.smu.Lock()
	defer c.smu.Unlock()
	delete(c.unsaved, changeField(ch))
}

// syncState reports what the sweeper owes Redis for this copy.
func (c *redisCopy) syncState() (lost, unsaved, refreshDue bool) {
	c.smu.Lock()
	defer c.smu.Unlock()
	return c.lost, len(c.unsaved) > 0, c.refreshDue
}

func (c *redisCopy) setRefreshDue(due bool) {
	c.smu.Lock()
	defer c.smu.Unlock()
	c.refreshDue = due
}

func (c *redisCopy) setLost() {
	c.smu.Lock()
	defer c.smu.Unlock()
	c.lost = true
}

// takeUnsaved returns the changes to replay, in field order, and
// forgets them; restoreUnsaved puts back those Redis did not take,
// unless a newer change of the field came meanwhile.
func (c *redisCopy) takeUnsaved() []sessionChange {
	c.smu.Lock()
	defer c.smu.Unlock()
	fields := slices.Sorted(maps.Keys(c.unsaved))
	ops := make([]sessionChange, 0, len(fields))
	for _, f := range fields {
		ops = append(ops, c.unsaved[f])
	}
	clear(c.unsaved)
	return ops
}

func (c *redisCopy) restoreUnsaved(ops ...sessionChange) {
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.unsaved == nil {
		c.unsaved = map[string]sessionChange{}
	}
	for _, ch := range ops {
		if _, newer := c.unsaved[changeField(ch)]; !newer {
			c.unsaved[changeField(ch)] = ch
		}
	}
}

// written: the whole copy, unsaved changes included, is in Redis again.
func (c *redisCopy) written() {
	c.smu.Lock()
	defer c.smu.Unlock()
	c.lost = false
	clear(c.unsaved)
}

// clearLost: Redis has the session again (another replica wrote it
// back); true if this copy still has changes to replay.
func (c *redisCopy) clearLost() bool {
	c.smu.Lock()
	defer c.smu.Unlock()
	lost := c.lost
	c.lost = false
	return lost && len(c.unsaved) > 0
}
