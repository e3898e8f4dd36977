package redisshare

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

// Resource updates of shared client sessions
// (docs/adr/0016-resource-updates-logged-by-origin.md). The replica where
// a mutation happened — the origin — writes its
// notifications/resources/updated into the GET-stream log of every shared
// session subscribed to the URI, whichever replica holds the session's
// stream and whether or not any does: the log is the message's mailbox,
// and the append's "ev" wake-up brings it to the connection, wherever it
// is. So a replica that dies costs its sessions nothing: what happens
// while their clients reconnect waits in the log (if no replica holds a
// stream, a message waits in the session's resumption log), and a GET
// with Last-Event-ID on any replica replays it once (MCP specification,
// basic/transports, "Resumability and Redelivery").
//
// The subscribers are found through a reverse index in Redis,
//
//	<prefix>subs:<len(tenant)>:<tenant>:<uri>   set of session ids
//
// changed with each resources/subscribe and unsubscribe in the same round
// trip as the session's hash, emptied of a deleted session's ids by the
// DELETE, and expiring like the sessions in it (every TTL refresh of a
// session refreshes its sets too). Members it keeps by mistake — a
// session that expired, or whose subscription went while Redis was away —
// cost one refused append: the append script checks the session's hash
// for the subscription, so nothing is logged for them, and the member is
// removed then.
//
// The mutation's path pays no Redis round trip: transport.Transport.ResourceUpdated
// queues (tenant, uri, notification) for the appender, which reads the
// set and appends to each member's log in the pipeline of its batch. The
// append's token (log.go) makes a retried batch log nothing twice.

// subsKey names the set of tenant's shared sessions subscribed to uri.
// The tenant's length keeps the two parts apart whatever they contain.
func (m *redisSessions) subsKey(tenant, uri string) string {
	return m.prefix + "subs:" + strconv.Itoa(len(tenant)) + ":" + tenant + ":" + uri
}

// indexSubs adds the session id to the sets of uris (refreshing their
// TTL), or removes it, as commands of pipeline p.
func (m *redisSessions) indexSubs(ctx context.Context, p redis.Pipeliner, id, tenant string, uris []string, add bool) {
	for _, uri := range uris {
		k := m.subsKey(tenant, uri)
		if !add {
			p.SRem(ctx, k, id)
			continue
		}
		p.SAdd(ctx, k, id)
		p.PExpire(ctx, k, m.idle)
	}
}

// touchSubs extends the sets of uris by the idle timeout: a set lives as
// long as the last session in it, since every refresh is now + idle.
func (m *redisSessions) touchSubs(ctx context.Context, p redis.Pipeliner, tenant string, uris []string) {
	for _, uri := range uris {
		p.PExpire(ctx, m.subsKey(tenant, uri), m.idle)
	}
}

// ResourceUpdated queues the notification of uri's update for every
// shared session of tenant subscribed to it, and reports 0: it returns at
// once, without a Redis round trip, so it cannot know the count;
// Stats counts the outcome. It never blocks: a full queue drops the
// update, counted (SharingStats.Dropped) and logged once per episode.
func (m *redisSessions) ResourceUpdated(tenant, uri string) (int, error) {
	data, err := protocol.MarshalNotification(protocol.NotificationResourcesUpdated, protocol.ResourceUpdatedParams{URI: uri})
	if err != nil {
		return 0, fmt.Errorf("encode resource update: %w", err)
	}
	select {
	case m.logq <- logOp{tenant: tenant, uri: uri, data: data}:
		m.updates.Add(1)
	default:
		m.dropped.Add(1)
		if m.logDropped.Add(1) == 1 {
			// Not the URI: it holds what a tool call named (a memory
			// key), which the log never carries.
			m.log.Error().Msg("transport: shared-session log queue full; dropping resource updates")
		}
	}
	return 0, nil
}

// Subscribers reads Redis's reverse index, which every replica writes, so
// a subscription made or dropped on another replica counts.
func (m *redisSessions) Subscribers(ctx context.Context, tenant, uri string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	ids, err := m.rdb.SMembers(ctx, m.subsKey(tenant, uri)).Result()
	if err != nil {
		return nil, fmt.Errorf("read the subscribers of a resource: %w", err)
	}
	return ids, nil
}

// lookups reads, in one pipeline, the reverse index of every resource
// update in batch, and whether the replicas its broadcasts name as home
// are alive (log.go). nil maps (and no round trip) when batch has
// neither.
func (m *redisSessions) lookups(ctx context.Context, batch []logOp) (members map[string][]string, alive map[string]bool, err error) {
	var sets map[string]*redis.StringSliceCmd
	var homes map[string]*redis.IntCmd
	for _, op := range batch {
		switch {
		case op.uri != "":
			if sets == nil {
				sets = map[string]*redis.StringSliceCmd{}
			}
			sets[m.subsKey(op.tenant, op.uri)] = nil
		case op.broadcast && op.home != m.self && op.home != "":
			if homes == nil {
				homes = map[string]*redis.IntCmd{}
			}
			homes[op.home] = nil
		}
	}
	if sets == nil && homes == nil {
		return nil, nil, nil
	}
	_, err = m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k := range sets {
			sets[k] = p.SMembers(ctx, k)
		}
		for h := range homes {
			homes[h] = p.Exists(ctx, m.replicaKey(h))
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read subscribers and home replicas: %w", err)
	}
	members = make(map[string][]string, len(sets))
	for k, c := range sets {
		members[k] = c.Val()
	}
	alive = make(map[string]bool, len(homes))
	for h, c := range homes {
		alive[h] = c.Val() == 1
	}
	return members, alive, nil
}

// staleMember is a reverse-index member an append found gone or no longer
// subscribed.
type staleMember struct{ key, id string }

// dropStale removes such members; best effort, since the next update
// that finds them tries again.
func (m *redisSessions) dropStale(ctx context.Context, stale []staleMember) {
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range stale {
			p.SRem(ctx, s.key, s.id)
		}
		return nil
	})
	if err != nil {
		m.log.Debug().Err(err).Int("members", len(stale)).Msg("transport: stale subscription-index members not removed; the next update retries")
	}
}

// Stats counts what the store's log appender did.
func (m *redisSessions) Stats() transport.SharingStats {
	return transport.SharingStats{Updates: m.updates.Load(), Notified: m.notified.Load(), Dropped: m.dropped.Load(),
		ListenPublished: m.listen.published.Load(), ListenDropped: m.listen.dropped.Load()}
}
