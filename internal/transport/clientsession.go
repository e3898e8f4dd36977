package transport

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// Limits on what one client session may hold, so a misbehaving client
// cannot grow the server without bound (docs/adr/0032-input-bounds.md).
const (
	maxSubscriptions     = 1024
	maxInflight          = 256
	maxRetainedStreams   = 32
	standaloneStreamName = "g"
	// supersededRetryMs is the retry hint on a GET stream closed because
	// the session's stream was opened on another replica.
	supersededRetryMs = 1000
)

var (
	errDuplicateID     = errors.New("a request with this id is already in flight on this client session")
	errTooManyInFlight = errors.New("too many requests in flight on this client session")
	errSessionEnded    = errors.New("client session ended")
	// errCancelledByClient is the cause of a handler context cancelled by
	// notifications/cancelled.
	errCancelledByClient = errors.New("request cancelled by the client")
)

// ClientSession is the state of one MCP client session (Mcp-Session-Id):
// negotiated version, client capabilities, log level, subscriptions,
// in-flight requests, server-to-client requests awaiting an answer, and the
// SSE streams with their logs. It is the one place that owns all of it, so
// ending a session frees everything at once.
type ClientSession struct {
	born time.Time // on the clock NewClientSession was given
	id   string
	// handle is what logs and spans name the session by
	// (store.ClientSessionHandle): the id is a credential.
	handle string
	tenant string
	// principal created the session; only it may use the session.
	principal string
	index     *subscriptions
	version   string
	client    protocol.Implementation
	caps      protocol.ClientCapabilities
	logLimit  int

	ctx    context.Context // cancelled when the session ends
	cancel context.CancelFunc

	lastSeen atomic.Int64 // unix nanoseconds of the last request

	// mu guards what follows. Lock order: a shared store's locks come
	// before it, but for the leaf lock its copy takes under it in
	// ResetState's pending; while mu is held the session may take its
	// streams' mu and the subscription index's mu, and none of those is
	// ever held when mu is taken.
	mu       sync.Mutex
	ended    bool
	logLevel protocol.LoggingLevel
	subs     map[string]struct{}
	// inflight is searched in order: a session has a few requests in
	// flight (at most maxInflight), and a map would keep a group of
	// slots after its last delete, which each of the 10,000 idle
	// sessions a replica holds would carry (BENCHMARKS.md, "10,000
	// subscribers on one replica"). pending is nil while empty, for the
	// same reason.
	inflight    []inflightRequest
	idSeed      maphash.Seed
	pending     map[string]chan *protocol.Message
	nextOutID   int64
	standalone  *Stream
	streams     map[string]*Stream // POST streams kept for resumption
	streamOrder []string
	nextStream  int

	// rep links the session to the other replicas serving it
	// (replica.go): localReplica in memory, another set by Share before
	// the session is used, and never changed.
	rep Replicator
}

// SessionInit is what initialize establishes for a new client session.
type SessionInit struct {
	Version      string
	Client       protocol.Implementation
	Capabilities protocol.ClientCapabilities
	// EventLogSize bounds each SSE stream's resumption log.
	EventLogSize int
	// Tenant scopes the session's subscriptions; "" is tenant.Default.
	Tenant string
	// Principal is the ID of the principal that created the session
	// (package auth); a request by any other principal gets 404
	// (docs/adr/0019-authentication-and-principals.md). "" when the
	// transport has no Authenticator.
	Principal string

	// index is the transport's subscription index the session registers
	// its subscriptions in.
	index *subscriptions
}

// NewClientSession returns a new client session, as a SessionStore
// creates one: it ends when parent does, and was last seen at now. A
// store that shares it with other replicas then calls Share.
func NewClientSession(parent context.Context, id string, in SessionInit, now time.Time) *ClientSession {
	ctx, cancel := context.WithCancel(parent)
	if in.Tenant == "" {
		in.Tenant = tenant.Default
	}
	if in.index == nil {
		in.index = newSubscriptions() // a store used without a transport
	}
	s := &ClientSession{
		born: now,
		id:   id, handle: store.ClientSessionHandle(id), tenant: in.Tenant, principal: in.Principal, index: in.index, version: in.Version, client: in.Client, caps: in.Capabilities, logLimit: in.EventLogSize,
		ctx: ctx, cancel: cancel,
		// Until the client calls logging/setLevel, send info and above.
		logLevel:   protocol.LevelInfo,
		subs:       map[string]struct{}{},
		idSeed:     maphash.MakeSeed(),
		standalone: newStream(standaloneStreamName, in.EventLogSize),
		streams:    map[string]*Stream{},
		rep:        localReplica{},
	}
	s.Touch(now)
	// The end of the session, however it comes (Terminate, or the
	// transport's context), cancels every handler running for it: their
	// contexts are the requests', which the session's does not reach.
	context.AfterFunc(ctx, s.cancelInflight)
	return s
}

// Share makes s a copy of a session other replicas serve too: rep links
// it to them, and getLog keeps the events of its GET stream. The ids the
// session hands out (POST streams, server-to-client requests) start at a
// random base, so that those of two replicas never collide: a
// Last-Event-ID or a response meant for another replica's stream or
// request is then unknown here, never misdelivered. It is called once,
// before s is used.
func (s *ClientSession) Share(rep Replicator, getLog EventLog) {
	s.rep = rep
	s.nextOutID = mrand.Int64N(1<<40) << 16
	s.nextStream = int(mrand.Int64N(1<<40) << 16)
	s.standalone.log = getLog
}

// cancelInflight cancels the handlers of the session's requests in
// flight, with the cause the session's context ended with.
func (s *ClientSession) cancelInflight() {
	s.mu.Lock()
	cancels := make([]context.CancelCauseFunc, 0, len(s.inflight))
	for _, in := range s.inflight {
		cancels = append(cancels, in.cancel)
	}
	s.mu.Unlock()
	for _, cancel := range cancels {
		cancel(context.Cause(s.ctx))
	}
}

// ID implements handlers.Session.
func (s *ClientSession) ID() string { return s.id }

// Tenant is the tenant the session belongs to.
func (s *ClientSession) Tenant() string { return s.tenant }

// Principal is the ID of the principal that created the session; only it
// may use the session.
func (s *ClientSession) Principal() string { return s.principal }

// ProtocolVersion implements handlers.Session.
func (s *ClientSession) ProtocolVersion() string { return s.version }

// ClientInfo implements handlers.Session.
func (s *ClientSession) ClientInfo() protocol.Implementation { return s.client }

// ClientCapabilities implements handlers.Session.
func (s *ClientSession) ClientCapabilities() protocol.ClientCapabilities { return s.caps }

// LogLevel implements handlers.Session.
func (s *ClientSession) LogLevel() protocol.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logLevel
}

// SetLogLevel implements handlers.Session.
func (s *ClientSession) SetLogLevel(l protocol.LoggingLevel) {
	s.mu.Lock()
	s.logLevel = l
	s.mu.Unlock()
	s.rep.Changed(ClientChange{Kind: ChangeLevel, Level: l})
}

// Subscribe implements handlers.Session.
//
// The change always goes to the replicator, even when this copy already
// has it: a shared copy may lag the shared state (a change made on
// another replica that has not reached this one yet), and deciding on it
// would lose the client's change; the writes are idempotent. Only the
// subscription limit is checked locally.
func (s *ClientSession) Subscribe(uri string) error {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return errSessionEnded
	}
	if _, ok := s.subs[uri]; !ok {
		if len(s.subs) >= maxSubscriptions {
			s.mu.Unlock()
			return fmt.Errorf("a client session may hold at most %d subscriptions", maxSubscriptions)
		}
		s.addSub(uri)
	}
	s.mu.Unlock()
	s.rep.Changed(ClientChange{Kind: ChangeSubscribe, URI: uri})
	return nil
}

// Unsubscribe implements handlers.Session. As Subscribe, a shared
// session writes through whatever this copy holds: the subscription may
// have been made on another replica a moment ago (HDEL and SREM are
// idempotent).
func (s *ClientSession) Unsubscribe(uri string) {
	s.mu.Lock()
	s.removeSub(uri)
	s.mu.Unlock()
	s.rep.Changed(ClientChange{Kind: ChangeUnsubscribe, URI: uri})
}

// addSub and removeSub change the subscription set; s.mu must be held.
// Only an unshared session is in the transport's index: a shared one is
// found through the shared store's, which every replica sees.
func (s *ClientSession) addSub(uri string) {
	s.subs[uri] = struct{}{}
	if s.rep.IndexesLocally() {
		s.index.add(s.tenant, uri, s)
	}
}

func (s *ClientSession) removeSub(uri string) {
	if _, ok := s.subs[uri]; ok {
		delete(s.subs, uri)
		if s.rep.IndexesLocally() {
			s.index.remove(s.tenant, uri, s)
		}
	}
}

// ApplyChange takes a change the client made on another replica (or
// this one), in the order the shared store saw it, without writing it
// back.
func (s *ClientSession) ApplyChange(c ClientChange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.applyClientChange(c)
	}
}

// ClientChange is a change the client made to the state its session
// shares with the other replicas: the log level, or a subscription.
type ClientChange struct {
	Kind  ChangeKind
	Level protocol.LoggingLevel // ChangeLevel
	URI   string                // ChangeSubscribe, ChangeUnsubscribe
}

// ChangeKind says what a ClientChange changes.
type ChangeKind uint8

// The kinds of ClientChange.
const (
	ChangeLevel ChangeKind = iota + 1
	ChangeSubscribe
	ChangeUnsubscribe
)

// applyClientChange takes a change the client made; s.mu must be held.
func (s *ClientSession) applyClientChange(c ClientChange) {
	switch c.Kind {
	case ChangeLevel:
		s.logLevel = c.Level
	case ChangeSubscribe:
		if len(s.subs) < maxSubscriptions {
			s.addSub(c.URI)
		}
	case ChangeUnsubscribe:
		s.removeSub(c.URI)
	}
}

// broadcast logs on the GET stream an event every replica produces by
// itself (tools/list_changed) and reports whether this replica believes
// it tells the session. In memory it is an append; a shared session's
// copies each offer it, and one of them logs it (Replicator.Broadcast).
func (s *ClientSession) broadcast(data []byte) bool {
	return s.rep.Broadcast(s.standalone, data)
}

// ClientState returns what the client changed in its session, read
// together: the log level and the URIs it is subscribed to.
func (s *ClientSession) ClientState() (protocol.LoggingLevel, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uris := make([]string, 0, len(s.subs))
	for uri := range s.subs {
		uris = append(uris, uri)
	}
	return s.logLevel, uris
}

// ResetState replaces what the client changed in its session with what a
// shared store holds, as one step: the log level (none: unchanged) and
// the subscriptions (past maxSubscriptions, the rest is dropped), then
// the changes pending returns on top, the client's changes the store has
// not taken yet. pending runs with the session's lock held: it may take
// only a leaf lock of its own, and must not call s.
func (s *ClientSession) ResetState(level protocol.LoggingLevel, subs []string, pending func() []ClientChange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if level != "" {
		s.logLevel = level
	}
	keep := make(map[string]bool, len(subs))
	for _, uri := range subs {
		keep[uri] = true
	}
	for uri := range s.subs {
		if !keep[uri] {
			s.removeSub(uri)
		}
	}
	for _, uri := range subs {
		if len(s.subs) < maxSubscriptions {
			s.addSub(uri)
		}
	}
	for _, c := range pending() {
		s.applyClientChange(c)
	}
}

// Supersede closes the GET stream's connection on this replica, with a
// retry hint in case it is in fact the client's live one: the client
// opened the session's stream on another replica, and a message must not
// go out on two streams (basic/transports).
func (s *ClientSession) Supersede() { s.standalone.closeConn(supersededRetryMs) }

func (s *ClientSession) subscribed(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.subs[uri]
	return ok
}

// Touch records that the client showed a sign of life at now.
func (s *ClientSession) Touch(now time.Time) { s.lastSeen.Store(now.UnixNano()) }

// IdleSince reports whether the client has shown no sign of life since
// t: no request, no connected stream, and no request in flight whose HTTP
// request is still open. A handler waiting on a client that went away
// (for a sampling answer, say) does not keep the session alive.
func (s *ClientSession) IdleSince(t time.Time) bool {
	if s.lastSeen.Load() >= t.UnixNano() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.standalone.Attached() {
		return false
	}
	for _, in := range s.inflight {
		if in.conn.Err() == nil {
			return false
		}
	}
	for _, st := range s.streams {
		if st.Attached() {
			return false
		}
	}
	return true
}

// Busy reports whether work of the session runs on this replica: a
// request in flight, whether or not its HTTP connection is still open (a
// detached long-running tool, a handler waiting on sampling or
// elicitation), or a server-to-client request awaiting its answer. For a
// shared session IdleSince is not enough to let such a copy go: the
// client may be busy on other replicas, which never touch this copy, or
// be about to answer or resume there, so evicting it would cancel a
// handler of a session that is alive.
func (s *ClientSession) Busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight) > 0 || len(s.pending) > 0
}

// inflightRequest is a request whose handler runs.
type inflightRequest struct {
	// hash is id's under the session's idSeed, compared first: the
	// client chooses ids as long as its body, and a search must not
	// compare 256 of them in full.
	hash   uint64
	id     string // the request's id, as JSON
	cancel context.CancelCauseFunc
	conn   context.Context // the HTTP request's: done when the client left
}

// keptInflight is the most room for requests in flight an idle session
// keeps: a burst's is let go.
const keptInflight = 4

// inflightIndex is the place of request id in s.inflight, or -1, and
// id's hash. Under mu.
func (s *ClientSession) inflightIndex(id protocol.ID) (int, uint64) {
	h := maphash.Bytes(s.idSeed, id)
	for i, in := range s.inflight {
		if in.hash == h && in.id == string(id) {
			return i, h
		}
	}
	return -1, h
}

// begin registers an in-flight request so notifications/cancelled can reach
// it; a second request with the same id while the first runs is refused.
func (s *ClientSession) begin(id protocol.ID, conn context.Context, cancel context.CancelCauseFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, h := s.inflightIndex(id)
	switch {
	case s.ended, s.ctx.Err() != nil:
		// Past the end, cancelInflight has run or runs without it.
		return errSessionEnded
	case i >= 0:
		return errDuplicateID
	case len(s.inflight) >= maxInflight:
		return errTooManyInFlight
	}
	s.inflight = append(s.inflight, inflightRequest{hash: h, id: string(id), cancel: cancel, conn: conn})
	return nil
}

func (s *ClientSession) end(id protocol.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, _ := s.inflightIndex(id); i >= 0 {
		last := len(s.inflight) - 1
		s.inflight[i] = s.inflight[last]
		s.inflight[last] = inflightRequest{}
		s.inflight = s.inflight[:last]
	}
	if len(s.inflight) == 0 && cap(s.inflight) > keptInflight {
		s.inflight = nil
	}
}

// CancelRequest cancels the handler of request id, as
// notifications/cancelled asks (its context ends with
// errCancelledByClient), and reports whether one ran here.
func (s *ClientSession) CancelRequest(id protocol.ID) bool {
	var cancel context.CancelCauseFunc
	s.mu.Lock()
	if i, _ := s.inflightIndex(id); i >= 0 {
		cancel = s.inflight[i].cancel
	}
	s.mu.Unlock()
	if cancel != nil {
		cancel(errCancelledByClient)
	}
	return cancel != nil
}

// expect allocates the id of a server-to-client request and a channel for
// the client's answer. The replicator opens the request's mailbox before
// it is sent, so that a response landing on another replica is kept for
// this one.
func (s *ClientSession) expect() (protocol.ID, chan *protocol.Message, error) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return nil, nil, errSessionEnded
	}
	s.nextOutID++
	id := protocol.ID(strconv.AppendInt([]byte("\"s"), s.nextOutID, 10))
	id = append(id, '"')
	ch := make(chan *protocol.Message, 1)
	if s.pending == nil {
		s.pending = map[string]chan *protocol.Message{}
	}
	s.pending[string(id)] = ch
	s.mu.Unlock()
	s.rep.AwaitAnswer(id)
	return id, ch, nil
}

func (s *ClientSession) forget(id protocol.ID) {
	s.mu.Lock()
	s.dropPending(id)
	s.mu.Unlock()
	s.rep.ForgetAnswer(id)
}

// dropPending forgets the server-to-client request id; under mu.
func (s *ClientSession) dropPending(id protocol.ID) {
	delete(s.pending, string(id))
	if len(s.pending) == 0 {
		s.pending = nil
	}
}

// Deliver hands a client's response to the server-to-client request
// waiting for it; false when nothing waits for that id.
func (s *ClientSession) Deliver(m *protocol.Message) bool {
	s.mu.Lock()
	ch := s.pending[string(m.ID)]
	s.dropPending(m.ID)
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- m
	return true
}

// newPostStream creates the stream of a POST response to request id and
// keeps it for resumption; the replicator mirrors a shared session's, so
// that any replica resumes it, naming the request, so that another
// replica can answer it with an error if this one dies first. Only a
// response that streams gets here: one answered with JSON is not
// mirrored.
func (s *ClientSession) newPostStream(id protocol.ID) *Stream {
	s.mu.Lock()
	s.nextStream++
	st := newStream("p"+strconv.Itoa(s.nextStream), s.logLimit)
	s.mu.Unlock()
	st.log = s.rep.Mirror(st, id)
	return s.retain(st)
}

// RetainStream returns the session's stream name, made with the log
// getLog gives it when the session holds none, and kept for resumption: a
// shared store resumes here a stream another replica serves.
func (s *ClientSession) RetainStream(name string, getLog func(*Stream) EventLog) *Stream {
	st := newStream(name, s.logLimit)
	st.log = getLog(st)
	return s.retain(st)
}

// retain keeps st for resumption and returns it, or the stream of that
// name the session holds already. Past maxRetainedStreams the oldest
// finished, unattached stream is dropped; a stream still in use never is
// (their number is bounded by maxInflight).
func (s *ClientSession) retain(st *Stream) *Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if have := s.streams[st.id]; have != nil {
		return have
	}
	if len(s.streamOrder) >= maxRetainedStreams {
		for i, name := range s.streamOrder {
			if old := s.streams[name]; old == nil || !old.live() {
				s.streamOrder = append(s.streamOrder[:i], s.streamOrder[i+1:]...)
				delete(s.streams, name)
				break
			}
		}
	}
	s.streams[st.id] = st
	s.streamOrder = append(s.streamOrder, st.id)
	return st
}

// openStreams counts the session's streams with a connection attached on
// this replica: its GET streams and its POST responses being streamed.
func (s *ClientSession) openStreams() int {
	s.mu.Lock()
	all := make([]*Stream, 0, len(s.streams)+1)
	all = append(all, s.standalone)
	for _, st := range s.streams {
		all = append(all, st)
	}
	s.mu.Unlock()
	n := 0
	for _, st := range all {
		if st.Attached() {
			n++
		}
	}
	return n
}

// Standalone is the session's GET stream.
func (s *ClientSession) Standalone() *Stream { return s.standalone }

// Streams returns the POST streams the session keeps for resumption.
func (s *ClientSession) Streams() []*Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.streams))
}

// Stream finds a stream by name for resumption.
func (s *ClientSession) Stream(name string) *Stream {
	if name == standaloneStreamName {
		return s.standalone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[name]
}

// release drops a POST stream once its response has been written and
// flushed. One whose last write failed stays, so the client can resume it.
func (s *ClientSession) release(st *Stream) {
	if st == s.standalone || !st.delivered() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.streams, st.id)
	for i, name := range s.streamOrder {
		if name == st.id {
			s.streamOrder = append(s.streamOrder[:i], s.streamOrder[i+1:]...)
			break
		}
	}
}

// Lived is how long the session has lived at now, on the clock it was
// created with.
func (s *ClientSession) Lived(now time.Time) time.Duration { return now.Sub(s.born) }

// Terminate ends the session: handlers are cancelled, waiting
// server-to-client requests fail, and every stream connection closes.
func (s *ClientSession) Terminate() {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	streams := make([]*Stream, 0, len(s.streams)+1)
	streams = append(streams, s.standalone)
	for _, st := range s.streams {
		streams = append(streams, st)
	}
	clear(s.streams)
	clear(s.pending)
	for uri := range s.subs {
		s.removeSub(uri)
	}
	s.streamOrder = nil
	s.mu.Unlock()
	// Connections first, then the handlers' context: a handler that
	// returns as soon as it is cancelled must not get its answer onto a
	// stream that is still attached (a response for a request the ending
	// session cancelled would reach the client after the end).
	for _, st := range streams {
		st.closeConn(0)
	}
	s.cancel()
}

// Ended reports whether the session has ended.
func (s *ClientSession) Ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}
