package redisshare

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// Server-to-client requests across replicas
// (docs/adr/0017-client-responses-across-replicas.md). A handler's
// request (sampling, elicitation, roots/list) waits in the pending map of
// the replica running the handler; the client's response POST may land on
// any replica. Ids of server-to-client requests start at a random base
// per replica and session copy (redisSessions.share), so exactly one
// replica can have a given id pending.
//
// Delivery must not depend on pub/sub alone, which keeps nothing: a
// response published while the waiting replica's subscription is
// reconnecting would be lost although the client was told 202, and the
// handler would wait until its timeout. (PUBLISH's receiver count cannot
// tell either: every replica subscribes to the channel, so the count says
// how many replicas listen, not whether the waiting one does, and in a
// Cluster it counts only the node's own subscribers.) So each request
// has a one-slot mailbox in Redis,
//
//	<prefix>cs:{<id>}:a:s<n>   "" while a handler waits for s<n>, then the
//	                           client's response (TTL = idle timeout)
//
// in the session's slot. The waiting replica writes it before the request
// can reach the client (AwaitAnswer), refreshes it every poll, reads it then
// (so a lost wake-up costs at most one poll) and deletes it when it stops
// waiting (forget). A replica that gets a response it has no request
// pending for stores it there, if the slot waits, and publishes it on the
// sessions channel in the same script, so the waiting replica normally
// delivers it at once, without a read. The client's POST gets 202 only
// once Redis took the response, 503 with Retry-After otherwise. A slot
// holds one response: a second one is dropped, as on one replica. A
// response for an id with no slot is neither stored nor published, nor
// even sent to Redis (an EXISTS asks first): no replica waits for it (the
// request ended, or never was), and publishing it would let any client
// make every replica receive megabytes it never asked for. The one such response that some replica does wait for is
// one whose slot that replica could not write while Redis was
// unreachable; its handler then waits until its timeout, as it would
// for a client that never answered.

// opAnswer carries a client's response to a server-to-client request.
const opAnswer = "answer"

// answerKey is the mailbox of server-to-client request id (of the form
// isOutgoingID accepts) of session sid.
func (m *redisSessions) answerKey(sid string, id protocol.ID) string {
	return m.hashKey(sid) + ":a:" + string(id[1:len(id)-1])
}

// isOutgoingID reports whether id has the form of the ids the transport
// gives its server-to-client requests ("s<n>", n an int64), so that only
// those are routed.
func isOutgoingID(id protocol.ID) bool {
	const maxDigits = 19 // math.MaxInt64
	if len(id) < 4 || len(id) > 3+maxDigits || id[0] != '"' || id[1] != 's' || id[len(id)-1] != '"' {
		return false
	}
	for _, c := range id[2 : len(id)-1] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// forwardAnswer hands on a client's response that no request of this
// replica waits for, so that the replica whose handler waits gets it:
// stored in the request's mailbox and published, if the mailbox waits;
// otherwise nothing is done. An error means Redis could not say: the
// client must send it again.
func (m *redisSessions) forwardAnswer(ctx context.Context, c *redisCopy, msg *protocol.Message, body []byte) error {
	if !isOutgoingID(msg.ID) {
		return nil // not one of ours: no replica waits for it
	}
	if err := m.skipping(); err != nil {
		return err
	}
	// The wake message is sessionChange with Msg, the response, last:
	// its JSON up to that member is the head, "}" the tail.
	head, err := json.Marshal(sessionChange{Origin: m.self, ID: c.id, Op: opAnswer})
	if err != nil {
		return fmt.Errorf("encode client response %s: %w", msg.ID, err)
	}
	head = append(head[:len(head)-1], `,"m":`...)
	key := m.answerKey(c.id, msg.ID)
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	// First ask whether a mailbox waits, so that a response nothing
	// waits for never crosses to Redis: only its id does. A mailbox that
	// goes between the two calls is the script's to notice.
	n, err := m.rdb.Exists(ctx, key).Result()
	if err == nil && n == 1 {
		n, err = m.lua.forwardAnswer(ctx, m.rdb, forwardArgs{mailbox: key, ttlMs: m.ttlMs(), channel: m.changeChannel(c.id), head: head, response: body, tail: "}"}).Int64()
	}
	if err != nil {
		m.failed(err)
		return fmt.Errorf("forward client response %s to the waiting replica: %w", msg.ID, err)
	}
	m.ok()
	if n != 1 {
		m.log.Debug().Str("session", store.ClientSessionHandle(c.id)).Str("id", msg.ID.String()).Int64("outcome", n).Msg("transport: client response no replica waits for; dropped")
	}
	return nil
}

// awaitAnswer writes, or refreshes, the mailbox of server-to-client
// request id, and delivers the response it holds, if any. The session
// calls it (Replicator.AwaitAnswer) before the request is sent, so that a
// response landing on another replica finds the slot; the waiting
// handler calls it every poll. A
// failure is only recorded: the next poll writes the slot again, and
// meanwhile a response still reaches this replica directly, or through
// the channel.
func (m *redisSessions) awaitAnswer(c *redisCopy, id protocol.ID) {
	if m.skipping() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(m.bg, m.timeout)
	defer cancel()
	v, err := m.lua.awaitAnswer(ctx, m.rdb, m.answerKey(c.id, id), m.ttlMs()).Text()
	if err != nil {
		m.failed(err)
		return
	}
	m.ok()
	if v == "" {
		return
	}
	msg, _, perr := protocol.Decode([]byte(v))
	if perr != nil || msg.Kind != protocol.KindResponse || string(msg.ID) != string(id) {
		m.log.Debug().Str("session", store.ClientSessionHandle(c.id)).Msg("transport: skipping a malformed stored client response")
		return
	}
	if c.s.Deliver(msg) {
		m.log.Debug().Str("session", store.ClientSessionHandle(c.id)).Str("id", msg.ID.String()).Msg("transport: client response from another replica read from redis")
	}
}

// forgetAnswer deletes the mailbox of a request no handler waits for any
// more; one left behind (Redis unreachable, the replica gone) expires.
func (m *redisSessions) forgetAnswer(c *redisCopy, id protocol.ID) {
	if m.skipping() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(m.bg, m.timeout)
	defer cancel()
	if err := m.rdb.Del(ctx, m.answerKey(c.id, id)).Err(); err != nil {
		m.failed(err)
		return
	}
	m.ok()
}

// onAnswer delivers a response another replica forwarded, if a request
// of this replica waits for it.
func (m *redisSessions) onAnswer(c sessionChange) {
	if c.Origin == m.self {
		return // this replica found nothing waiting before forwarding it
	}
	m.mu.RLock()
	sc := m.byID[c.ID]
	m.mu.RUnlock()
	if sc == nil {
		return
	}
	msg, _, perr := protocol.Decode(c.Msg)
	if perr != nil || msg.Kind != protocol.KindResponse {
		m.log.Debug().Str("session", store.ClientSessionHandle(c.ID)).Msg("transport: skipping a malformed forwarded client response")
		return
	}
	if sc.s.Deliver(msg) {
		m.log.Debug().Str("session", store.ClientSessionHandle(c.ID)).Str("id", msg.ID.String()).Msg("transport: client response from another replica delivered")
	}
}

// opCancel carries a client's notifications/cancelled that no request of
// the replica it reached matched.
const opCancel = "cancel"

// forwardCancel publishes a cancellation for a request this replica does
// not run, so that the replica running it cancels it
// (docs/adr/0017-client-responses-across-replicas.md): with no sticky
// sessions, a cancellation lands on another replica than its request most
// of the time, and would otherwise be accepted and ignored. It is
// fire-and-forget like any cancellation: one that arrives after the
// request ended, or while the running replica's subscription is down,
// changes nothing (basic/utilities/cancellation allows for that). An
// error means Redis did not take it: the client must send it again.
func (m *redisSessions) forwardCancel(ctx context.Context, c *redisCopy, id protocol.ID) error {
	if err := m.skipping(); err != nil {
		return err
	}
	payload, err := json.Marshal(sessionChange{Origin: m.self, ID: c.id, Op: opCancel, Req: id.String()})
	if err != nil {
		return fmt.Errorf("encode cancellation: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	if m.shard != nil {
		err = m.rdb.SPublish(ctx, m.changeChannel(c.id), payload).Err()
	} else {
		err = m.rdb.Publish(ctx, m.channel, payload).Err()
	}
	if err != nil {
		m.failed(err)
		return fmt.Errorf("forward a cancellation to the replica running its request: %w", err)
	}
	m.ok()
	return nil
}

// onCancel cancels the request another replica's client asked to cancel,
// if it runs here, as a local notifications/cancelled does: the handler's
// context ends as the client asked, so no response is sent where
// SSE allows it.
func (m *redisSessions) onCancel(c sessionChange) {
	if c.Origin == m.self || len(c.Req) == 0 {
		return // this replica found nothing to cancel before forwarding it
	}
	m.mu.RLock()
	sc := m.byID[c.ID]
	m.mu.RUnlock()
	if sc != nil && sc.s.CancelRequest(protocol.ID(c.Req)) {
		m.log.Debug().Str("session", store.ClientSessionHandle(c.ID)).Str("id", logging.Field(c.Req)).Msg("transport: request cancelled from another replica")
	}
}
