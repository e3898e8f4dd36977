package transport

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Server-to-client requests across replicas (issue 7, point 4). A
// handler's request (sampling, elicitation, roots/list) waits in the
// pending map of the replica running the handler; the client's response
// POST may land on any replica. One that has no such request pending
// publishes the response on the sessions channel, and the replica whose
// copy of the session has it pending delivers it. Ids of server-to-client
// requests start at a random base per replica and session copy
// (redisSessions.share), so exactly one replica can have a given id
// pending. Nothing is stored: a response nobody waits for any more is
// dropped, as on one replica.

// opAnswer carries a client's response to a server-to-client request.
const opAnswer = "answer"

// isOutgoingID reports whether id has the form of the ids this server
// gives its server-to-client requests ("s<n>", see ClientSession.expect),
// so that only those are routed.
func isOutgoingID(id protocol.ID) bool {
	if len(id) < 4 || id[0] != '"' || id[1] != 's' || id[len(id)-1] != '"' {
		return false
	}
	for _, c := range id[2 : len(id)-1] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// forwardAnswer publishes a client's response that no request of this
// replica waits for, so that the replica whose handler waits gets it. An
// error means Redis did not take it: the client must send it again.
func (m *redisSessions) forwardAnswer(ctx context.Context, s *ClientSession, msg *protocol.Message, body []byte) error {
	if !isOutgoingID(msg.ID) {
		return nil // not one of ours: no replica waits for it
	}
	if err := m.skipping(); err != nil {
		return err
	}
	payload, err := json.Marshal(sessionChange{Origin: m.self, ID: s.id, Op: opAnswer, Msg: body})
	if err != nil {
		return fmt.Errorf("encode client response %s: %w", msg.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	if err := m.rdb.Publish(ctx, m.channel, payload).Err(); err != nil {
		m.failed(err)
		return fmt.Errorf("forward client response %s to the waiting replica: %w", msg.ID, err)
	}
	m.ok()
	return nil
}

// onAnswer delivers a response another replica forwarded, if a request
// of this replica waits for it.
func (m *redisSessions) onAnswer(c sessionChange) {
	if c.Origin == m.self {
		return // this replica found nothing waiting before forwarding it
	}
	m.mu.RLock()
	s := m.byID[c.ID]
	m.mu.RUnlock()
	if s == nil {
		return
	}
	msg, _, perr := protocol.Decode(c.Msg)
	if perr != nil || msg.Kind != protocol.KindResponse {
		m.log.Debug().Str("session", c.ID).Msg("transport: skipping a malformed forwarded client response")
		return
	}
	if s.deliver(msg) {
		m.log.Debug().Str("session", c.ID).Str("id", msg.ID.String()).Msg("transport: client response from another replica delivered")
	}
}

// opCancel carries a client's notifications/cancelled that no request of
// the replica it reached matched.
const opCancel = "cancel"

// forwardCancel publishes a cancellation for a request this replica does
// not run, so that the replica running it cancels it (issue 7, point 4):
// with no sticky sessions, a cancellation lands on another replica than
// its request most of the time, and would otherwise be accepted and
// ignored. It is fire-and-forget like any cancellation: one that arrives
// after the request ended, or while the running replica's subscription
// is down, changes nothing (basic/utilities/cancellation allows for
// that). An error means Redis did not take it: the client must send it
// again.
func (m *redisSessions) forwardCancel(ctx context.Context, s *ClientSession, id protocol.ID) error {
	if err := m.skipping(); err != nil {
		return err
	}
	payload, err := json.Marshal(sessionChange{Origin: m.self, ID: s.id, Op: opCancel, Req: id.String()})
	if err != nil {
		return fmt.Errorf("encode cancellation of %s: %w", id, err)
	}
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	if err := m.rdb.Publish(ctx, m.channel, payload).Err(); err != nil {
		m.failed(err)
		return fmt.Errorf("forward cancellation of %s to the replica running it: %w", id, err)
	}
	m.ok()
	return nil
}

// onCancel cancels the request another replica's client asked to cancel,
// if it runs here, as a local notifications/cancelled does: the handler's
// context ends with errCancelledByClient, so no response is sent where
// SSE allows it.
func (m *redisSessions) onCancel(c sessionChange) {
	if c.Origin == m.self || len(c.Req) == 0 {
		return // this replica found nothing to cancel before forwarding it
	}
	m.mu.RLock()
	s := m.byID[c.ID]
	m.mu.RUnlock()
	if s != nil && s.cancelRequest(protocol.ID(c.Req)) {
		m.log.Debug().Str("session", c.ID).Str("id", c.Req).Msg("transport: request cancelled from another replica")
	}
}
