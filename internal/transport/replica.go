package transport

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// replicator is a client session's link to the other replicas that serve
// the same session (DESIGN.md, Scale-out). The session core talks to it
// and nothing else about sharing: in memory there are no other replicas
// and every method does nothing (localReplica); a shared store gives each
// of its copies one of its own.
//
// Every method is called without the session's mu held.
type replicator interface {
	// changed writes through a change the client made on this replica
	// (log level, a subscription): the change holds here already.
	changed(c clientChange)
	// indexesLocally reports whether the session's subscriptions belong
	// in this process's subscription index; a shared session's are found
	// through an index every replica sees.
	indexesLocally() bool
	// isHome reports whether this replica tells the session of the
	// broadcasts every replica sees by itself (tools/list_changed).
	isHome() bool
	// broadcast logs on st, the session's GET stream, an event every
	// replica produces by itself, and reports whether this replica
	// believes it tells the session.
	broadcast(st *stream, data []byte) bool
	// awaitAnswer opens (or re-reads) the place where a client's response
	// to server-to-client request id waits if it lands on another replica;
	// forgetAnswer closes it. answerPoll is how often a waiting request
	// re-reads it: 0 means never.
	awaitAnswer(id protocol.ID)
	forgetAnswer(id protocol.ID)
	answerPoll() time.Duration
	// forwardAnswer hands on a client's response that no request here
	// waits for; false when there is nowhere to hand it. An error means
	// it could not be handed on now: the client must send it again.
	forwardAnswer(ctx context.Context, msg *protocol.Message, body []byte) (bool, error)
	// forwardCancel hands on a cancellation of a request that does not
	// run here. An error as for forwardAnswer.
	forwardCancel(ctx context.Context, id protocol.ID) error
	// mirror makes st, the new stream of a POST response to request id,
	// resumable on the other replicas.
	mirror(st *stream, id protocol.ID)
	// resume returns the stream to serve a Last-Event-ID naming POST
	// stream name that this replica does not hold, or holds only as a
	// reader of another replica's log (have): nil, nil when there is none.
	resume(ctx context.Context, name string, have *stream) (*stream, error)
	// openStandalone readies the GET stream st for a new connection on
	// this replica; an error means it cannot be served now (503).
	openStandalone(ctx context.Context, st *stream) error
}

// localReplica is the replicator of a session no other replica serves.
type localReplica struct{}

func (localReplica) changed(clientChange)                          {}
func (localReplica) indexesLocally() bool                          { return true }
func (localReplica) isHome() bool                                  { return true }
func (localReplica) awaitAnswer(protocol.ID)                       {}
func (localReplica) forgetAnswer(protocol.ID)                      {}
func (localReplica) answerPoll() time.Duration                     { return 0 }
func (localReplica) mirror(*stream, protocol.ID)                   {}
func (localReplica) openStandalone(context.Context, *stream) error { return nil }

func (localReplica) broadcast(st *stream, data []byte) bool {
	st.append(data)
	return true
}

func (localReplica) forwardAnswer(context.Context, *protocol.Message, []byte) (bool, error) {
	return false, nil
}

func (localReplica) forwardCancel(context.Context, protocol.ID) error { return nil }

func (localReplica) resume(_ context.Context, _ string, have *stream) (*stream, error) {
	return have, nil
}

// fanout delivers resource updates to the client sessions subscribed to
// a resource, and counts what it did. In memory that is the transport's
// subscription index (localFanout); a shared store delivers to the
// sessions of every replica.
type fanout interface {
	// resourceUpdated sends notifications/resources/updated for uri to
	// tenant's sessions subscribed to it, and reports how many it told
	// (0 when it cannot know).
	resourceUpdated(tenant, uri string) (int, error)
	// subscribers returns the ids of tenant's sessions subscribed to uri.
	subscribers(ctx context.Context, tenant, uri string) ([]string, error)
	// stats counts what a shared store's log writer did.
	stats() RedisStats
}

// localFanout is the fanout of sessions no other replica serves.
type localFanout struct{ subs *subscriptions }

func (f localFanout) resourceUpdated(tenant, uri string) (int, error) {
	var data []byte
	var err error
	n := f.subs.each(tenant, uri, func(s *ClientSession) {
		if data == nil && err == nil {
			data, err = protocol.MarshalNotification(protocol.NotificationResourcesUpdated, protocol.ResourceUpdatedParams{URI: uri})
		}
		if err == nil {
			s.standalone.append(data)
		}
	})
	if err != nil {
		return 0, fmt.Errorf("encode resource update: %w", err)
	}
	return n, nil
}

func (f localFanout) subscribers(_ context.Context, tenant, uri string) ([]string, error) {
	var ids []string
	f.subs.each(tenant, uri, func(s *ClientSession) { ids = append(ids, s.id) })
	return ids, nil
}

func (localFanout) stats() RedisStats { return RedisStats{} }
