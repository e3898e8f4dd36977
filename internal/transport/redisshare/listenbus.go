package redisshare

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

// The listen streams' events between replicas
// (docs/adr/0054-listen-across-replicas.md). A listen stream is not
// resumable and belongs to the connection that opened it, so its events
// need no log: the replica where a resource changed publishes the event,
// and each replica with a listener of that tenant delivers it to its own
// index (transport.ListenBus).
//
// Tenants hash onto listenShards channels,
//
//	<prefix>listen:{l<n>}
//
// each with a hash tag of its own, so that on a Redis Cluster the events
// travel by sharded pub/sub (SPUBLISH, SSUBSCRIBE), spread over the
// shards and relayed only within the shard of their channel, never over
// the whole cluster bus; on one node they are plain PUBLISH and
// SUBSCRIBE. A replica subscribes to a channel while it has a listener
// of a tenant hashing to it, one connection per channel (go-redis
// resubscribes a connection's channels in one command, which a cluster
// refuses for channels of different slots), so at most listenShards
// connections. A message names its origin, which ignores it.
//
// Nothing here waits on the path of a mutation: publishing is queued,
// and a full queue or a failed publish drops the event, counted and
// logged, never failing the change (INV-MCP-XC-002).
const listenShards = 16

// listenQueueSize bounds the events waiting to be published.
const listenQueueSize = 4096

// listenBatch is the most events one pipeline publishes.
const listenBatch = 256

type listenBus struct {
	m *redisSessions
	// cluster is the client of a Redis Cluster, whose channels are
	// sharded; nil on one node.
	cluster *redis.ClusterClient
	names   [listenShards]string // the channels, by shard
	deliver func(transport.ListenEvent)

	q chan transport.ListenEvent

	mu    sync.Mutex
	chans [listenShards]*listenChan

	published, dropped atomic.Int64
	// quiet: a drop or failure was logged in this episode; the next
	// success ends it.
	quiet atomic.Bool
}

// listenChan is this replica's subscription to one channel.
type listenChan struct {
	name   string
	refs   int
	ready  chan struct{} // closed after the first attempt to subscribe
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
}

func (c *listenChan) settle() { c.once.Do(func() { close(c.ready) }) }

func newListenBus(m *redisSessions, cluster *redis.ClusterClient, deliver func(transport.ListenEvent)) *listenBus {
	if deliver == nil {
		deliver = func(transport.ListenEvent) {}
	}
	b := &listenBus{m: m, cluster: cluster, deliver: deliver, q: make(chan transport.ListenEvent, listenQueueSize)}
	for n := range b.names {
		b.names[n] = m.prefix + "listen:{l" + strconv.Itoa(n) + "}"
	}
	return b
}

// listenShard is the channel index of tenant (FNV-1a).
func listenShard(tenant string) int {
	h := uint32(2166136261)
	for i := 0; i < len(tenant); i++ {
		h = (h ^ uint32(tenant[i])) * 16777619
	}
	return int(h % listenShards)
}

// PublishListen implements transport.ListenBus: ev is queued for the
// publisher, or dropped when the queue is full.
func (b *listenBus) PublishListen(ev transport.ListenEvent) {
	select {
	case b.q <- ev:
	default:
		b.drop(1, errors.New("publish queue full"))
	}
}

// WatchTenant implements transport.ListenBus.
func (b *listenBus) WatchTenant(tenant string) <-chan struct{} {
	n := listenShard(tenant)
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.chans[n]
	if c == nil && b.m.stopping() {
		// Closed: nothing more is started, and nothing will arrive.
		c = &listenChan{ready: make(chan struct{})}
		c.settle()
		return c.ready
	}
	if c == nil {
		c = &listenChan{name: b.names[n], ready: make(chan struct{})}
		c.ctx, c.cancel = context.WithCancel(b.m.bg)
		b.chans[n] = c
		b.m.wg.Add(1)
		go b.subscribe(c)
	}
	c.refs++
	return c.ready
}

// UnwatchTenant implements transport.ListenBus: the channel's
// subscription ends with the last listener hashing to it.
func (b *listenBus) UnwatchTenant(tenant string) {
	n := listenShard(tenant)
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.chans[n]
	if c == nil || c.refs == 0 {
		return
	}
	if c.refs--; c.refs <= 0 {
		c.cancel()
		b.chans[n] = nil
	}
}

// subscribe keeps c subscribed until its context ends, subscribing again
// after a backoff when the link fails. Events published while it is down
// are lost: listen has no redelivery, and the cache hints bound what a
// client misses.
func (b *listenBus) subscribe(c *listenChan) {
	defer b.m.wg.Done()
	defer c.settle()
	backoff := b.m.tune.minBackoff
	for c.ctx.Err() == nil {
		err := b.link(c)
		if c.ctx.Err() != nil {
			return
		}
		if !errors.Is(err, errChannelDropped) {
			// A slot that moved is no failure of Redis's: the breaker
			// does not hear of it.
			b.m.failed(err)
		}
		if b.cluster != nil {
			// A failed link may be to a master that was replaced: the
			// next one is routed by a fresh slot map.
			b.cluster.ReloadState(c.ctx)
		}
		b.m.log.Debug().Err(err).Str("channel", c.name).Msg("transport: listen channel lost; subscribing again")
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, b.m.tune.maxBackoff)
	}
}

// link subscribes c once and delivers its messages until the link fails
// (its error) or c ends (nil).
func (b *listenBus) link(c *listenChan) error {
	var ps *redis.PubSub
	if b.cluster != nil {
		ps = b.cluster.SSubscribe(c.ctx, c.name)
	} else {
		ps = b.m.rdb.Subscribe(c.ctx, c.name)
	}
	defer func() { _ = ps.Close() }()
	ctx, cancel := context.WithTimeout(c.ctx, b.m.conn.Timeout(redisconn.Session))
	_, err := ps.Receive(ctx) // the confirmation
	cancel()
	c.settle()
	if err != nil {
		return err
	}
	for {
		msg, err := receiveLive(c.ctx, ps, b.m.tune.poll, b.m.conn.Timeout(redisconn.Hot), true)
		if c.ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *redis.Message:
			if ev, from, ok := decodeListenEvent(m.Payload); ok && from != b.m.self {
				b.deliver(ev)
			}
		case *redis.Subscription:
			if m.Kind == "sunsubscribe" || m.Kind == "unsubscribe" {
				// Redis dropped the channel itself: its slot moved to
				// another master (a manual failover, a resharding), and
				// the node that told us stays up. The link answers
				// PINGs still, so only this says it hears nothing more.
				return errChannelDropped
			}
		}
	}
}

// errChannelDropped: Redis unsubscribed a listen channel of its own
// accord.
var errChannelDropped = errors.New("redis dropped the listen channel (its slot moved)")

// publisher sends the queued events, a pipeline per batch, until the
// store stops.
func (b *listenBus) publisher() {
	defer b.m.wg.Done()
	batch := make([]transport.ListenEvent, 0, listenBatch)
	for {
		select {
		case <-b.m.stop:
			return
		case ev := <-b.q:
			batch = append(batch[:0], ev)
		}
	more:
		for len(batch) < listenBatch {
			select {
			case ev := <-b.q:
				batch = append(batch, ev)
			default:
				break more
			}
		}
		b.publish(batch)
	}
}

// publish sends batch in one pipeline.
func (b *listenBus) publish(batch []transport.ListenEvent) {
	if err := b.m.skipping(); err != nil {
		b.drop(len(batch), err)
		return
	}
	ctx, cancel := context.WithTimeout(b.m.bg, b.m.timeout)
	defer cancel()
	_, err := b.m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, ev := range batch {
			ch, msg := b.names[listenShard(ev.Tenant)], encodeListenEvent(b.m.self, ev)
			if b.cluster != nil {
				p.SPublish(ctx, ch, msg)
			} else {
				p.Publish(ctx, ch, msg)
			}
		}
		return nil
	})
	if err != nil {
		b.m.failed(err)
		b.drop(len(batch), err)
		return
	}
	b.m.ok()
	b.published.Add(int64(len(batch)))
	b.quiet.Store(false)
}

// drop counts n events lost and logs the first loss of an episode.
func (b *listenBus) drop(n int, err error) {
	b.dropped.Add(int64(n))
	if b.quiet.CompareAndSwap(false, true) {
		b.m.log.Warn().Err(err).Int("events", n).
			Msg("transport: listen events not published to other replicas; their listeners miss them (the cache hints bound for how long)")
	}
}

// encodeListenEvent is origin, the method's letter, the tenant's length
// and the tenant, then the URI: no separator a tenant or a URI could hold
// is needed.
func encodeListenEvent(origin string, ev transport.ListenEvent) string {
	kind := "l"
	if ev.Method == protocol.NotificationResourcesUpdated {
		kind = "u"
	}
	var sb strings.Builder
	sb.Grow(len(origin) + len(ev.Tenant) + len(ev.URI) + 8 + 56)
	sb.WriteString(origin)
	if ev.Cause.IsValid() {
		// The span the receivers' deliveries link to, as a W3C
		// traceparent after the origin: a replica of the previous
		// version reads origin and traceparent as one origin that is not
		// its own, and delivers the event as before.
		sb.WriteByte('/')
		sb.WriteString(traceparent(ev.Cause))
	}
	sb.WriteByte(' ')
	sb.WriteString(kind)
	sb.WriteString(strconv.Itoa(len(ev.Tenant)))
	sb.WriteByte(':')
	sb.WriteString(ev.Tenant)
	sb.WriteString(ev.URI)
	return sb.String()
}

// decodeListenEvent reads what encodeListenEvent wrote; ok is false for
// anything else.
func decodeListenEvent(s string) (ev transport.ListenEvent, origin string, ok bool) {
	origin, rest, found := strings.Cut(s, " ")
	if !found || rest == "" {
		return ev, "", false
	}
	if o, tp, traced := strings.Cut(origin, "/"); traced {
		// Only what traceparent writes: anything else is no replica's
		// message, and reading it as one would not write it back.
		if ev.Cause = parseTraceparent(tp); !ev.Cause.IsValid() || traceparent(ev.Cause) != tp {
			return ev, "", false
		}
		origin = o
	}
	switch rest[0] {
	case 'u':
		ev.Method = protocol.NotificationResourcesUpdated
	case 'l':
		ev.Method = protocol.NotificationResourcesListChange
	default:
		return ev, "", false
	}
	n, rest, found := strings.Cut(rest[1:], ":")
	size, err := strconv.Atoi(n)
	if !found || err != nil || size <= 0 || size > len(rest) || strconv.Itoa(size) != n {
		return ev, "", false
	}
	ev.Tenant, ev.URI = rest[:size], rest[size:]
	if (ev.Method == protocol.NotificationResourcesUpdated) != (ev.URI != "") {
		return ev, "", false
	}
	return ev, origin, true
}

// PublishListen, WatchTenant and UnwatchTenant make the store a
// transport.ListenBus.
func (m *redisSessions) PublishListen(ev transport.ListenEvent) { m.listen.PublishListen(ev) }

func (m *redisSessions) WatchTenant(tenant string) <-chan struct{} {
	return m.listen.WatchTenant(tenant)
}

func (m *redisSessions) UnwatchTenant(tenant string) { m.listen.UnwatchTenant(tenant) }

// traceparent is sc as W3C Trace Context's traceparent header writes it.
func traceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// parseTraceparent reads what traceparent wrote; the zero SpanContext for
// anything else.
func parseTraceparent(s string) trace.SpanContext {
	c := propagation.MapCarrier{"traceparent": s}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), c))
}
