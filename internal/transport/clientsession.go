package transport

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// Limits on what one client session may hold, so a misbehaving client
// cannot grow the server without bound (pitfalls.md, sessions).
const (
	maxSubscriptions     = 1024
	maxInflight          = 256
	maxRetainedStreams   = 32
	standaloneStreamName = "g"
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
	id       string
	tenant   string
	index    *subscriptions
	version  string
	client   protocol.Implementation
	caps     protocol.ClientCapabilities
	logLimit int

	ctx    context.Context // cancelled when the session ends
	cancel context.CancelFunc

	lastSeen atomic.Int64 // unix nanoseconds of the last request

	mu          sync.Mutex
	ended       bool
	logLevel    protocol.LoggingLevel
	subs        map[string]struct{}
	inflight    map[string]inflightRequest
	pending     map[string]chan *protocol.Message
	nextOutID   int64
	standalone  *stream
	streams     map[string]*stream // POST streams kept for resumption
	streamOrder []string
	nextStream  int
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

	// index is the transport's subscription index the session registers
	// its subscriptions in.
	index *subscriptions
}

func newClientSession(parent context.Context, id string, in SessionInit, now time.Time) *ClientSession {
	ctx, cancel := context.WithCancel(parent)
	if in.Tenant == "" {
		in.Tenant = tenant.Default
	}
	if in.index == nil {
		in.index = newSubscriptions() // a store used without a transport
	}
	s := &ClientSession{
		id: id, tenant: in.Tenant, index: in.index, version: in.Version, client: in.Client, caps: in.Capabilities, logLimit: in.EventLogSize,
		ctx: ctx, cancel: cancel,
		// Until the client calls logging/setLevel, send info and above.
		logLevel:   protocol.LevelInfo,
		subs:       map[string]struct{}{},
		inflight:   map[string]inflightRequest{},
		pending:    map[string]chan *protocol.Message{},
		standalone: newStream(standaloneStreamName, in.EventLogSize),
		streams:    map[string]*stream{},
	}
	s.touch(now)
	return s
}

// ID implements handlers.Session.
func (s *ClientSession) ID() string { return s.id }

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
	defer s.mu.Unlock()
	s.logLevel = l
}

// Subscribe implements handlers.Session.
func (s *ClientSession) Subscribe(uri string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return errSessionEnded
	}
	if _, ok := s.subs[uri]; ok {
		return nil
	}
	if len(s.subs) >= maxSubscriptions {
		return fmt.Errorf("a client session may hold at most %d subscriptions", maxSubscriptions)
	}
	s.subs[uri] = struct{}{}
	s.index.add(s.tenant, uri, s)
	return nil
}

// Unsubscribe implements handlers.Session.
func (s *ClientSession) Unsubscribe(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subs[uri]; ok {
		delete(s.subs, uri)
		s.index.remove(s.tenant, uri, s)
	}
}

func (s *ClientSession) subscribed(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.subs[uri]
	return ok
}

func (s *ClientSession) touch(now time.Time) { s.lastSeen.Store(now.UnixNano()) }

// idleSince reports whether the client has shown no sign of life since
// t: no request, no connected stream, and no request in flight whose HTTP
// request is still open. A handler waiting on a client that went away
// (for a sampling answer, say) does not keep the session alive.
func (s *ClientSession) idleSince(t time.Time) bool {
	if s.lastSeen.Load() >= t.UnixNano() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.standalone.attached() {
		return false
	}
	for _, in := range s.inflight {
		if in.conn.Err() == nil {
			return false
		}
	}
	for _, st := range s.streams {
		if st.attached() {
			return false
		}
	}
	return true
}

// inflightRequest is a request whose handler runs.
type inflightRequest struct {
	cancel context.CancelCauseFunc
	conn   context.Context // the HTTP request's: done when the client left
}

// begin registers an in-flight request so notifications/cancelled can reach
// it; a second request with the same id while the first runs is refused.
func (s *ClientSession) begin(id protocol.ID, conn context.Context, cancel context.CancelCauseFunc) error {
	key := id.String()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ended:
		return errSessionEnded
	case s.inflight[key].cancel != nil:
		return errDuplicateID
	case len(s.inflight) >= maxInflight:
		return errTooManyInFlight
	}
	s.inflight[key] = inflightRequest{cancel: cancel, conn: conn}
	return nil
}

func (s *ClientSession) end(id protocol.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, id.String())
}

// cancelRequest handles notifications/cancelled.
func (s *ClientSession) cancelRequest(id protocol.ID) bool {
	s.mu.Lock()
	cancel := s.inflight[id.String()].cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel(errCancelledByClient)
	}
	return cancel != nil
}

// expect allocates the id of a server-to-client request and a channel for
// the client's answer.
func (s *ClientSession) expect() (protocol.ID, chan *protocol.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, nil, errSessionEnded
	}
	s.nextOutID++
	id := protocol.ID(strconv.AppendInt([]byte("\"s"), s.nextOutID, 10))
	id = append(id, '"')
	ch := make(chan *protocol.Message, 1)
	s.pending[string(id)] = ch
	return id, ch, nil
}

func (s *ClientSession) forget(id protocol.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, string(id))
}

// deliver hands a client's response to the server-to-client request waiting
// for it; false when nothing waits for that id.
func (s *ClientSession) deliver(m *protocol.Message) bool {
	s.mu.Lock()
	ch := s.pending[string(m.ID)]
	delete(s.pending, string(m.ID))
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- m
	return true
}

// newPostStream creates the stream of a POST response and keeps it for
// resumption. Past maxRetainedStreams the oldest finished, unattached
// stream is dropped; a stream still in use never is (their number is
// bounded by maxInflight).
func (s *ClientSession) newPostStream() *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextStream++
	st := newStream("p"+strconv.Itoa(s.nextStream), s.logLimit)
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

// stream finds a stream by name for resumption.
func (s *ClientSession) stream(name string) *stream {
	if name == standaloneStreamName {
		return s.standalone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[name]
}

// release drops a POST stream once its response has been written and
// flushed. One whose last write failed stays, so the client can resume it.
func (s *ClientSession) release(st *stream) {
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

// terminate ends the session: handlers are cancelled, waiting
// server-to-client requests fail, and every stream connection closes.
func (s *ClientSession) terminate() {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	streams := make([]*stream, 0, len(s.streams)+1)
	streams = append(streams, s.standalone)
	for _, st := range s.streams {
		streams = append(streams, st)
	}
	clear(s.streams)
	clear(s.pending)
	for uri := range s.subs {
		s.index.remove(s.tenant, uri, s)
	}
	clear(s.subs)
	s.streamOrder = nil
	s.mu.Unlock()
	s.cancel()
	for _, st := range streams {
		st.closeConn(0)
	}
}

// Ended reports whether the session has ended.
func (s *ClientSession) Ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}
