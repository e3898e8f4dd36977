package redisshare

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

// shardBus carries the changes of client sessions on a Redis Cluster
// (docs/adr/0050-sharded-session-changes.md). Each session's changes go
// on a shard channel of its own, named after its hash and so in its slot,
// which the scripts SPUBLISH in the same step as the change (Redis 7
// sharded pub/sub): only the nodes of that slot's shard relay it, where
// PUBLISH would cross the whole cluster bus to every node. A replica
// subscribes to a session's channel while it holds a copy of the session,
// and to nothing else: every message it acts on is about a copy it holds.
//
// The subscriptions to one node share a link, one go-redis PubSub used
// one channel per command and never resubscribed: go-redis resubscribes
// all of a PubSub's shard channels in one SSUBSCRIBE after a reconnect,
// which Redis refuses for channels of different slots (CROSSSLOT). A link
// that fails is closed, and its channels are routed and subscribed again;
// each copy whose channel comes back is re-read, since what was published
// meanwhile is missed (pub/sub keeps nothing).
type shardBus struct {
	m   *redisSessions
	rdb *redis.ClusterClient

	mu    sync.Mutex
	subs  map[string]*shardSub  // wanted, by session id
	links map[string]*shardLink // by node address
	// todo: sessions whose channel is to be routed and subscribed, or,
	// no longer wanted, unsubscribed.
	todo map[string]struct{}
	// pending: subscriptions sent and not yet confirmed.
	pending map[string]struct{}
	// due: sessions whose channel came back after it was lost; their
	// copies are re-read.
	due  []string
	kick chan struct{} // capacity 1
	// rounds counts the finished rounds of reconcile: what a test waits
	// for instead of a sleep.
	rounds atomic.Int64
}

// shardSub is the subscription to one session's channel.
type shardSub struct {
	refs int
	// link is where the SSUBSCRIBE was sent (nil: not yet), at sent.
	link *shardLink
	sent time.Time
	// ready is closed once Redis confirmed the subscription.
	ready     chan struct{}
	confirmed bool
	// reread: when confirmed, re-read the copy (the channel was lost
	// after the copy was built, or the copy was built without it).
	reread bool
}

// shardLink is the pub/sub connection to one node.
type shardLink struct {
	addr  string
	ps    *redis.PubSub
	chans map[string]string // channel → session id, subscribed over it
	// ops are the SSUBSCRIBEs and SUNSUBSCRIBEs the link's sender is to
	// send, in order; under shardBus.mu. A node slow to take them (its
	// link dialling again while a lost master is replaced, a host gone)
	// holds up its own channels, never those of another node.
	ops  []linkOp
	wake chan struct{} // capacity 1: ops were queued
	// done is closed with the link; the sender then closes ps.
	done      chan struct{}
	closeOnce sync.Once
	// idleSince is when the link last carried no channel (zero while it
	// carries one); under shardBus.mu.
	idleSince time.Time
}

// linkOp is a subscription (sub) or unsubscription of one channel.
type linkOp struct {
	ch  string
	sub bool
}

// idleLinkLinger is how long a link to a node carries no channel before
// it is closed: requests naming sessions nobody created subscribe and
// unsubscribe at once, and must not dial a connection each.
const idleLinkLinger = time.Minute

// close ends the link; its sender closes the connection.
func (l *shardLink) close() { l.closeOnce.Do(func() { close(l.done) }) }

func newShardBus(m *redisSessions, rdb *redis.ClusterClient) *shardBus {
	return &shardBus{m: m, rdb: rdb, subs: map[string]*shardSub{}, links: map[string]*shardLink{},
		todo: map[string]struct{}{}, pending: map[string]struct{}{}, kick: make(chan struct{}, 1)}
}

// channel is session id's: a name in the slot of its hash.
func (b *shardBus) channel(id string) string { return b.m.hashKey(id) + ":ch" }

// want takes a reference on the subscription to session id's channel,
// and returns what is closed once Redis confirmed it. A copy read from
// Redis after that misses no change; reread asks for the copy to be
// re-read when the subscription is confirmed (one built while Redis could
// not be reached). Every want is paired with one release.
func (b *shardBus) want(id string, reread bool) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.subs[id]
	if s == nil {
		s = &shardSub{ready: make(chan struct{})}
		b.subs[id] = s
		b.todo[id] = struct{}{}
		b.poke()
	}
	s.refs++
	s.reread = s.reread || reread
	return s.ready
}

// release gives back a reference want took; the channel is unsubscribed
// with the last.
func (b *shardBus) release(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.subs[id]
	if s == nil {
		return
	}
	if s.refs--; s.refs > 0 {
		return
	}
	delete(b.subs, id)
	delete(b.pending, id)
	if s.link != nil {
		b.todo[id] = struct{}{}
		b.poke()
	}
}

func (b *shardBus) poke() { signal(b.kick) }

// run subscribes and unsubscribes as the copies come and go, and retries
// what failed every tick, until the store stops.
func (b *shardBus) run() {
	defer b.m.wg.Done()
	t := time.NewTicker(b.m.tune.minBackoff)
	defer t.Stop()
	for {
		select {
		case <-b.m.stop:
			b.closeLinks()
			return
		case <-b.kick:
		case <-t.C:
			b.expirePending()
		}
		b.reconcile()
	}
}

// reconcile sends what todo asks for and re-reads the copies whose
// channel came back.
func (b *shardBus) reconcile() {
	b.mu.Lock()
	ids := slices.Collect(maps.Keys(b.todo))
	clear(b.todo)
	due := b.due
	b.due = nil
	b.mu.Unlock()
	for _, id := range ids {
		b.settle(id)
	}
	if len(due) > 0 {
		b.m.resync(b.m.rereadCopies(due))
	}
	b.closeIdleLinks()
	b.rounds.Add(1)
}

// settle brings session id's subscription to what is wanted: routed and
// sent if wanted and not sent, ended on its link if not wanted. It queues
// the commands for the links' senders rather than send them itself: one
// node slow to take a connection would hold up every other node's
// subscriptions, and so every load and create of the replica.
func (b *shardBus) settle(id string) {
	ch := b.channel(id)
	b.mu.Lock()
	s := b.subs[id]
	for _, l := range b.links {
		// Subscribed to ch where it no longer should be.
		if _, on := l.chans[ch]; on && (s == nil || s.link != l) {
			delete(l.chans, ch)
			b.queue(l, linkOp{ch: ch})
		}
	}
	send := s != nil && s.link == nil
	b.mu.Unlock()
	if !send {
		return
	}
	ctx, cancel := context.WithTimeout(b.m.bg, b.m.conn.Timeout(redisconn.Session))
	defer cancel()
	node, err := b.rdb.MasterForKey(ctx, ch)
	if err != nil {
		b.retry(id, s, fmt.Errorf("route the channel of client session %s: %w", id, err))
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs[id] != s || s.link != nil {
		return // released, or sent, meanwhile
	}
	l := b.linkTo(node)
	// Recorded before it is sent: the confirmation may come first.
	s.link, s.sent = l, time.Now()
	l.chans[ch] = id
	l.idleSince = time.Time{}
	b.pending[id] = struct{}{}
	b.queue(l, linkOp{ch: ch, sub: true})
}

// queue asks l's sender to send op; under mu.
func (b *shardBus) queue(l *shardLink, op linkOp) {
	l.ops = append(l.ops, op)
	signal(l.wake)
}

// send sends link l's queued commands, in order, until the link is
// closed or a command fails it; then it closes the connection, which
// ends receive.
func (b *shardBus) send(l *shardLink) {
	defer b.m.wg.Done()
	defer func() { _ = l.ps.Close() }()
	for {
		select {
		case <-l.done:
			return
		case <-l.wake:
		}
		b.mu.Lock()
		ops := l.ops
		l.ops = nil
		b.mu.Unlock()
		for _, op := range ops {
			select {
			case <-l.done:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(b.m.bg, b.m.conn.Timeout(redisconn.Session))
			var err error
			if op.sub {
				err = l.ps.SSubscribe(ctx, op.ch)
			} else {
				err = l.ps.SUnsubscribe(ctx, op.ch)
			}
			cancel()
			if err != nil {
				b.fail(l, err)
				return
			}
		}
	}
}

// retry puts a subscription that could not be sent back in todo, for the
// next tick (not at once: Redis failed it).
func (b *shardBus) retry(id string, s *shardSub, err error) {
	b.m.failed(err)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs[id] == s {
		b.todo[id] = struct{}{}
	}
}

// linkTo returns the link to node, made if there is none; under mu.
func (b *shardBus) linkTo(node *redis.Client) *shardLink {
	addr := node.Options().Addr
	if l := b.links[addr]; l != nil {
		return l
	}
	l := &shardLink{addr: addr, ps: node.SSubscribe(b.m.bg), chans: map[string]string{},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.links[addr] = l
	b.m.wg.Add(2)
	go b.receive(l)
	go b.send(l)
	return l
}

// expirePending sends again, routed anew, the subscriptions no answer
// confirmed within the session bound: an SSUBSCRIBE a node refused
// (MOVED, after a slot moved) is answered with an error that names no
// channel.
func (b *shardBus) expirePending() {
	cutoff := time.Now().Add(-b.m.conn.Timeout(redisconn.Session))
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range b.pending {
		s := b.subs[id]
		if s == nil || s.confirmed {
			delete(b.pending, id)
			continue
		}
		if s.link != nil && s.sent.Before(cutoff) {
			delete(b.pending, id)
			s.link = nil
			b.todo[id] = struct{}{}
		}
	}
}

// receive reads link l until it fails or the store stops, applying every
// change and recording every confirmation.
func (b *shardBus) receive(l *shardLink) {
	defer b.m.wg.Done()
	for {
		msg, err := receiveLive(b.m.bg, l.ps, b.m.tune.poll, b.m.timeout, true)
		if b.m.stopping() {
			return
		}
		var rerr redis.Error
		if errors.As(err, &rerr) && !redisconn.Unhealthy(err) {
			// A node's answer to a command of ours (MOVED: the slot
			// moved), not a broken link: what waits on it is routed anew.
			b.misrouted(l)
			continue
		}
		if err != nil {
			b.fail(l, err)
			return
		}
		switch msg := msg.(type) {
		case *redis.Subscription:
			switch msg.Kind {
			case "ssubscribe":
				b.confirmed(l, msg.Channel)
			case "sunsubscribe":
				b.unsubscribed(l, msg.Channel)
			}
		case *redis.Message:
			b.m.onChange(msg.Payload)
		}
	}
}

// confirmed records Redis's confirmation of ch on l.
func (b *shardBus) confirmed(l *shardLink, ch string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := l.chans[ch]
	s := b.subs[id]
	if s == nil || s.link != l || s.confirmed {
		return
	}
	s.confirmed = true
	close(s.ready)
	delete(b.pending, id)
	if s.reread {
		s.reread = false
		b.due = append(b.due, id)
		b.poke()
	}
}

// unsubscribed handles a SUNSUBSCRIBE: ours, for a channel no longer
// wanted, or the node's, when the slot moved to another shard (a
// resharding, or a failover that made the node a replica); the channel is
// then routed anew and the copy re-read.
func (b *shardBus) unsubscribed(l *shardLink, ch string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, on := l.chans[ch]
	s := b.subs[id]
	if !on || s == nil || s.link != l || !s.confirmed {
		return
	}
	delete(l.chans, ch)
	b.lose(id, s)
	b.rdb.ReloadState(b.m.bg)
}

// misrouted routes anew every subscription l has not confirmed: one of
// them was refused, and the answer does not say which.
func (b *shardBus) misrouted(l *shardLink) {
	b.rdb.ReloadState(b.m.bg)
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch, id := range l.chans {
		if s := b.subs[id]; s != nil && s.link == l && !s.confirmed {
			delete(l.chans, ch)
			delete(b.pending, id)
			s.link = nil
			b.todo[id] = struct{}{}
		}
	}
}

// fail closes link l after err and routes its channels anew, at the next
// tick; their copies are re-read once they are back.
func (b *shardBus) fail(l *shardLink, err error) {
	l.close()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.links[l.addr] != l {
		return // failed already, or closed as idle
	}
	// The slot map may be what is wrong; a link closed as idle says
	// nothing of it.
	b.rdb.ReloadState(b.m.bg)
	delete(b.links, l.addr)
	live := 0
	for _, id := range l.chans {
		if s := b.subs[id]; s != nil && s.link == l {
			if s.confirmed {
				live++
			}
			b.lose(id, s)
		}
	}
	clear(l.chans)
	switch {
	case b.m.stopping():
	case live > 0:
		b.m.log.Warn().Err(err).Str("node", l.addr).Int("sessions", live).
			Msg("transport: client-session channels on a redis node lost; re-reading those sessions once they are back")
	default:
		// Another attempt at a node still down: said once, above.
		b.m.log.Debug().Err(err).Str("node", l.addr).Msg("transport: cannot subscribe to client-session channels on a redis node yet")
	}
}

// lose marks s, confirmed or not, as to be subscribed again, at the next
// tick; under mu.
func (b *shardBus) lose(id string, s *shardSub) {
	if s.confirmed {
		s.confirmed, s.reread = false, true
		s.ready = make(chan struct{})
	}
	s.link = nil
	delete(b.pending, id)
	b.todo[id] = struct{}{}
}

// closeIdleLinks closes the links no channel has used for
// idleLinkLinger. Their senders close the connections, not this
// goroutine: a link dialling again holds its connection's lock.
func (b *shardBus) closeIdleLinks() {
	now := b.m.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for addr, l := range b.links {
		switch {
		case len(l.chans) > 0:
			l.idleSince = time.Time{}
		case l.idleSince.IsZero():
			l.idleSince = now
		case now.Sub(l.idleSince) >= idleLinkLinger:
			delete(b.links, addr)
			l.close() // its receive sees ErrClosed and stops
		}
	}
}

func (b *shardBus) closeLinks() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.links {
		l.close()
	}
	clear(b.links)
}

// changeChannel is where the changes of session id are published: its
// own shard channel on a cluster, the store's one channel otherwise.
func (m *redisSessions) changeChannel(id string) string {
	if m.shard != nil {
		return m.shard.channel(id)
	}
	return m.channel
}

// watchChanges subscribes to session id's changes, on a cluster, and waits
// until Redis confirmed it, so that a read of the session after it misses
// none; every watchChanges that succeeds is paired with one unwatchChanges. Elsewhere
// the store's one subscription covers every session (sync.go).
func (m *redisSessions) watchChanges(ctx context.Context, id string) error {
	if m.shard == nil {
		return nil
	}
	select {
	case <-m.shard.want(id, false):
		return nil
	case <-m.stop:
		m.shard.release(id) // the bus has stopped: nothing will confirm it
		return transport.ErrClosed
	case <-ctx.Done():
		m.shard.release(id)
		return fmt.Errorf("subscribe to the changes of client session %s: %w", id, ctx.Err())
	}
}

// watchChangesLater subscribes to session id's changes without waiting, for a
// copy built while Redis could not be reached: it is re-read once the
// subscription holds.
func (m *redisSessions) watchChangesLater(id string) {
	if m.shard != nil {
		m.shard.want(id, true)
	}
}

// unwatchChanges gives back what watchChanges or watchChangesLater took.
func (m *redisSessions) unwatchChanges(id string) {
	if m.shard != nil {
		m.shard.release(id)
	}
}

// rereadCopies returns this replica's copies of ids, to be re-read after
// their channel came back; a load of one in flight, which may have read
// the hash before what the channel missed, re-reads the copy it makes
// (loadCall.reread, materialise).
func (m *redisSessions) rereadCopies(ids []string) []*redisCopy {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*redisCopy, 0, len(ids))
	for _, id := range ids {
		if c := m.byID[id]; c != nil {
			out = append(out, c)
		} else if lc := m.loading[id]; lc != nil {
			lc.reread = true
		}
	}
	return out
}
