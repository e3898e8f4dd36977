package transport

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Replicator is a client session's link to the other replicas that serve
// the same session (DESIGN.md, Scale-out). The session core talks to it
// and nothing else about sharing: in memory there are no other replicas
// and every method does nothing (localReplica); a shared store gives each
// of its copies one of its own (ClientSession.Share).
//
// Every method is called without the session's lock held.
type Replicator interface {
	// Changed writes through a change the client made on this replica
	// (log level, a subscription): the change holds here already.
	Changed(c ClientChange)
	// IndexesLocally reports whether the session's subscriptions belong
	// in this process's subscription index; a shared session's are found
	// through an index every replica sees (SharedStore.Subscribers).
	IndexesLocally() bool
	// IsHome reports whether this replica tells the session of the
	// broadcasts every replica sees by itself (tools/list_changed).
	IsHome() bool
	// Broadcast logs on st, the session's GET stream, an event every
	// replica produces by itself, and reports whether this replica
	// believes it tells the session.
	Broadcast(st *Stream, data []byte) bool
	// AwaitAnswer opens (or re-reads) the place where a client's response
	// to server-to-client request id waits if it lands on another replica;
	// ForgetAnswer closes it. AnswerPoll is how often a waiting request
	// re-reads it: 0 means never.
	AwaitAnswer(id protocol.ID)
	ForgetAnswer(id protocol.ID)
	AnswerPoll() time.Duration
	// ForwardAnswer hands on a client's response that no request here
	// waits for; false when there is nowhere to hand it. An error means
	// it could not be handed on now: the client must send it again.
	ForwardAnswer(ctx context.Context, msg *protocol.Message, body []byte) (bool, error)
	// ForwardCancel hands on a cancellation of a request that does not
	// run here. An error as for ForwardAnswer.
	ForwardCancel(ctx context.Context, id protocol.ID) error
	// Mirror returns the log of st, the new stream of a POST response to
	// request id: where its events live so that the other replicas can
	// resume it. It is called before st is used.
	Mirror(st *Stream, id protocol.ID) EventLog
	// Resume returns the stream to serve a Last-Event-ID naming POST
	// stream name that this replica does not hold, or holds only as a
	// reader of another replica's log (have): nil, nil when there is none.
	Resume(ctx context.Context, name string, have *Stream) (*Stream, error)
	// OpenStandalone readies the GET stream st for a new connection on
	// this replica; resume is the seq of the client's Last-Event-ID on
	// it, -1 for a fresh GET. positioned is false when where the stream
	// stands is not known yet (the connection reads once it is): no
	// priming event then, whose id would be a guess. An error means it
	// cannot be served now (503).
	OpenStandalone(ctx context.Context, st *Stream, resume int64) (positioned bool, err error)
}

// localReplica is the Replicator of a session no other replica serves.
type localReplica struct{}

func (localReplica) Changed(ClientChange)                                         {}
func (localReplica) IndexesLocally() bool                                         { return true }
func (localReplica) IsHome() bool                                                 { return true }
func (localReplica) AwaitAnswer(protocol.ID)                                      {}
func (localReplica) ForgetAnswer(protocol.ID)                                     {}
func (localReplica) AnswerPoll() time.Duration                                    { return 0 }
func (localReplica) Mirror(*Stream, protocol.ID) EventLog                         { return localLog{} }
func (localReplica) OpenStandalone(context.Context, *Stream, int64) (bool, error) { return true, nil }

func (localReplica) Broadcast(st *Stream, data []byte) bool {
	st.append(data)
	return true
}

func (localReplica) ForwardAnswer(context.Context, *protocol.Message, []byte) (bool, error) {
	return false, nil
}

func (localReplica) ForwardCancel(context.Context, protocol.ID) error { return nil }

func (localReplica) Resume(_ context.Context, _ string, have *Stream) (*Stream, error) {
	return have, nil
}

// Fanout delivers resource updates to the client sessions subscribed to
// a resource, and counts what it did. In memory that is the transport's
// subscription index (localFanout); a shared store delivers to the
// sessions of every replica.
type Fanout interface {
	// ResourceUpdated sends notifications/resources/updated for uri to
	// tenant's sessions subscribed to it, and reports how many it told
	// (0 when it cannot know).
	ResourceUpdated(tenant, uri string) (int, error)
	// Subscribers returns the ids of tenant's sessions subscribed to uri.
	Subscribers(ctx context.Context, tenant, uri string) ([]string, error)
	// Stats counts what a shared store's log writer did.
	Stats() SharingStats
}

// localFanout is the Fanout of sessions no other replica serves.
type localFanout struct{ subs *subscriptions }

func (f localFanout) ResourceUpdated(tenant, uri string) (int, error) {
	var fr *frame // one for every subscriber (frame)
	var err error
	n := f.subs.each(tenant, uri, func(s *ClientSession) {
		if fr == nil && err == nil {
			var data []byte
			data, err = protocol.MarshalNotification(protocol.NotificationResourcesUpdated, protocol.ResourceUpdatedParams{URI: uri})
			fr = &frame{data: data}
		}
		if err == nil {
			s.standalone.appendFrame(fr)
		}
	})
	if err != nil {
		return 0, fmt.Errorf("encode resource update: %w", err)
	}
	return n, nil
}

func (f localFanout) Subscribers(_ context.Context, tenant, uri string) ([]string, error) {
	var ids []string
	f.subs.each(tenant, uri, func(s *ClientSession) { ids = append(ids, s.id) })
	return ids, nil
}

func (localFanout) Stats() SharingStats { return SharingStats{} }
