package transport

import (
	"strconv"
	"strings"
	"sync"
)

// Event is one SSE event of a stream: a complete JSON-RPC message and its
// sequence number, which the event's id carries ("<stream>-<seq>").
type Event struct {
	Seq  uint64
	Data []byte
}

// Stream is a bounded log of events with at most one attached connection:
// the GET stream of a client session, or a streamed POST response. All
// fields are guarded by mu.
type Stream struct {
	id    string
	limit int // most events kept

	mu      sync.Mutex
	ring    []*frame // circular; grows on demand up to limit
	head    int      // index of the oldest event
	n       int      // events held, of seqs nextSeq-n to nextSeq-1
	nextSeq uint64   // seq of the next event; seqs start at 1
	// flushed is the highest seq a connection has written and flushed. It
	// is where a new connection that does not resume starts, and a POST
	// stream counts as delivered only once its last event is flushed.
	flushed uint64
	conn    *streamConn
	done    bool // a POST stream whose response is in the log
	// closeNext, when positive, closes the next attached connection right
	// after it starts, with this retry hint: a handler may ask to close
	// its stream before the response has begun streaming (SEP-1699).
	closeNext int

	// log keeps the events beside or instead of ring: localLog for a
	// session no other replica serves; for a shared one, the log its
	// Replicator gives it (ClientSession.Share, Replicator.Mirror,
	// ClientSession.RetainStream). Set before the stream is shared and
	// never changed; the connection is always local.
	log EventLog
}

// A frame is one event's data. A resource update fanned out to every
// subscriber is one frame that all their rings point to: a ring entry is
// one pointer (8 bytes) and the seq follows from its place, so 10,000
// subscribed streams with full logs of 1,024 events hold 80 MB of ring,
// not the 320 MB of a seq and a slice header each (BENCHMARKS.md, "10,000
// subscribers on one replica").
type frame struct{ data []byte }

// initialRing is the ring's first size: most POST streams carry a handful
// of events, so a session or a call does not pay for the full log bound.
const initialRing = 4

func newStream(id string, limit int) *Stream {
	return &Stream{id: id, limit: limit, nextSeq: 1, log: localLog{}}
}

// EventLog is where a stream's events live besides its ring, so that
// other replicas serve them. Methods said to run under the stream's lock
// are called with it held: they must not call the stream's methods.
type EventLog interface {
	// Take appends data to the log in place of the ring; false: the ring
	// takes it.
	Take(st *Stream, data []byte) bool
	// Pushed records that event seq entered the ring, final if it ends
	// the stream; data nil is the end without a response (a marker, not
	// an event). Under the stream's lock.
	Pushed(seq uint64, data []byte, final bool)
	// Read returns the events after cursor, appended to buf, whether the
	// stream is finished once they are written, and whether events after
	// the cursor were dropped, when the log rather than the ring is where
	// they are read (ok).
	Read(st *Stream, cursor uint64, buf []Event) (evs []Event, done, lost, ok bool)
	// Limit is the last seq a connection may write from the ring, and
	// whether it may write the end, given last, the last seq the stream
	// gave out. Under the stream's lock.
	Limit(last uint64) (uint64, bool)
	// MarkFlushed records that a connection wrote and flushed through
	// seq.
	MarkFlushed(seq uint64)
	// Follower reports whether the stream reads another replica's log,
	// which it may let go of as soon as no connection reads it.
	Follower() bool
	// Open readies the log before the first byte of a response stream.
	Open()
}

// localLog is the EventLog of a stream no other replica serves: the ring
// is the whole log.
type localLog struct{}

func (localLog) Take(*Stream, []byte) bool        { return false }
func (localLog) Pushed(uint64, []byte, bool)      {}
func (localLog) MarkFlushed(uint64)               {}
func (localLog) Follower() bool                   { return false }
func (localLog) Open()                            {}
func (localLog) Limit(last uint64) (uint64, bool) { return last, true }

func (localLog) Read(_ *Stream, _ uint64, buf []Event) ([]Event, bool, bool, bool) {
	return buf, false, false, false
}

// streamConn is one HTTP response serving a stream.
type streamConn struct {
	closed  chan struct{} // closed when superseded or told to close
	retryMs int           // set before closed is closed
	// kick tells the connection's writer that the log grew or closed was
	// closed (drive.go); nil until the writer is ready, which then makes
	// a pass of its own. Set and read under the stream's lock.
	kick func()
}

// shut closes c: under the stream's lock, once.
func (c *streamConn) shut() {
	close(c.closed)
	if c.kick != nil {
		c.kick()
	}
}

// drive has kick tell c's writer of what it must write.
func (s *Stream) drive(c *streamConn, kick func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.kick = kick
}

// append adds data to the log, dropping the oldest event when full, and
// wakes the attached connection.
func (s *Stream) append(data []byte) {
	if s.log.Take(s, data) {
		return // a shared log's: the ring stays empty, no frame is made
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.push(&frame{data: data})
}

// appendFrame is append of a frame other streams may share.
func (s *Stream) appendFrame(f *frame) {
	if s.log.Take(s, f.data) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.push(f)
}

// appendOpen adds data unless the stream has ended (its response is in
// the log); it reports whether it did.
func (s *Stream) appendOpen(data []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return false
	}
	s.push(&frame{data: data})
	s.log.Pushed(s.nextSeq-1, data, false)
	return true
}

// appendFinal adds the response that ends a POST stream; nil ends it
// without one (a cancelled request).
func (s *Stream) appendFinal(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if data != nil {
		s.push(&frame{data: data}) // wakes the connection
		s.log.Pushed(s.nextSeq-1, data, true)
		return
	}
	s.log.Pushed(s.nextSeq, nil, true) // a marker, not an event
	s.wake()
}

func (s *Stream) push(f *frame) {
	if s.n == len(s.ring) && len(s.ring) < s.limit {
		s.grow()
	}
	i := (s.head + s.n) % len(s.ring)
	if s.n == len(s.ring) {
		s.head = (s.head + 1) % len(s.ring)
	} else {
		s.n++
	}
	s.ring[i] = f
	s.nextSeq++
	s.wake()
}

// grow doubles the ring (up to limit), keeping events in order.
func (s *Stream) grow() {
	size := min(max(2*len(s.ring), initialRing), s.limit)
	ring := make([]*frame, size)
	for i := 0; i < s.n; i++ {
		ring[i] = s.ring[(s.head+i)%len(s.ring)]
	}
	s.ring, s.head = ring, 0
}

// Notify wakes the attached connection: the log grew elsewhere.
func (s *Stream) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wake()
}

func (s *Stream) wake() {
	if s.conn != nil && s.conn.kick != nil {
		s.conn.kick()
	}
}

// attach makes a new connection the stream's writer, superseding any
// previous one (a client that reconnects is the live one; the old TCP
// connection may not have noticed it is dead yet), and returns the cursor
// it starts after. resume is the seq of the client's Last-Event-ID, or
// negative for a fresh connection, which starts after the last event some
// connection flushed. Both happen under one lock, so no event is written by
// the old connection after the new one chose its start.
func (s *Stream) attach(resume int64) (*streamConn, uint64) {
	c := &streamConn{closed: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.shut()
	}
	s.conn = c
	if s.closeNext > 0 {
		c.retryMs, s.closeNext = s.closeNext, 0
		close(c.closed)
		s.conn = nil
	}
	cursor := s.flushed
	if resume >= 0 {
		// An id from the future must not make the stream skip events that
		// have not been sent yet.
		cursor = min(uint64(resume), s.nextSeq-1)
	}
	return c, cursor
}

// detach removes c if it is still the attached connection.
func (s *Stream) detach(c *streamConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == c {
		s.conn = nil
	}
}

// closeConn ends the attached connection, asking the client to come back
// after retryMs (0: no hint).
func (s *Stream) closeConn(retryMs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.retryMs = retryMs
		s.conn.shut()
		s.conn = nil
	}
}

// closeSoon closes the attached connection now, or the next one to attach.
func (s *Stream) closeSoon(retryMs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		s.closeNext = max(retryMs, 1)
		return
	}
	s.conn.retryMs = retryMs
	s.conn.shut()
	s.conn = nil
}

// next returns the events after cursor (appending to buf), whether the
// stream is finished once they are written, and whether events after the
// cursor were already dropped from the log.
func (s *Stream) next(cursor uint64, buf []Event) (evs []Event, done, lost bool) {
	if evs, done, lost, ok := s.log.Read(s, cursor, buf); ok {
		return evs, done, lost
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A mirrored stream's connection writes only what the shared log
	// has: the ring may run ahead of limit.
	limit, end := s.log.Limit(s.nextSeq - 1)
	if s.n > 0 {
		// The log holds consecutive seqs oldest..nextSeq-1, so the first
		// event after cursor is found by arithmetic, not by a scan of the
		// whole log: a woken connection costs O(new events), not
		// O(eventLogSize), under the lock appends wait on.
		oldest := s.nextSeq - uint64(s.n)
		lost = cursor+1 < oldest
		skip := 0
		if cursor >= oldest {
			skip = int(min(cursor-oldest+1, uint64(s.n)))
		}
		for i := skip; i < s.n; i++ {
			seq := oldest + uint64(i)
			if seq > limit {
				break
			}
			buf = append(buf, Event{Seq: seq, Data: s.ring[(s.head+i)%len(s.ring)].data})
		}
	}
	return buf, s.done && end, lost
}

// Position returns the last seq given out and the last flushed.
func (s *Stream) Position() (last, flushed uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextSeq - 1, s.flushed
}

// markFlushed records that a connection wrote and flushed through seq.
func (s *Stream) markFlushed(seq uint64) {
	s.mu.Lock()
	s.flushed = max(s.flushed, seq)
	s.mu.Unlock()
	s.log.MarkFlushed(seq)
}

// delivered reports whether a finished stream has flushed its last event.
func (s *Stream) delivered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, end := s.log.Limit(s.nextSeq - 1) // a mirrored stream's end is in the shared log first
	return s.done && end && s.flushed == s.nextSeq-1
}

// Finished reports whether a POST stream's response (or its end without
// one) is in the log.
func (s *Stream) Finished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// MarkFinished records that the stream's end is in its log: a follower of
// another replica's log learnt it there.
func (s *Stream) MarkFinished() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
}

// CatchUp raises the stream's position to what its log holds: last, the
// last seq given out, and flushed, the last a connection flushed, on
// whichever replica. Neither ever goes back.
func (s *Stream) CatchUp(last, flushed uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if last+1 > s.nextSeq && s.n > 0 {
		// The ring's seqs follow from nextSeq (frame): a ring that a jump
		// would renumber is let go. Only a follower's position jumps, and
		// a follower reads its log, not the ring.
		clear(s.ring)
		s.head, s.n = 0, 0
	}
	s.nextSeq = max(s.nextSeq, last+1)
	s.flushed = max(s.flushed, flushed)
}

// Name is the stream's name, the part of its events' ids before the seq:
// "g" for the GET stream, p<n> for a POST response.
func (s *Stream) Name() string { return s.id }

// Log is where the stream's events live besides its ring.
func (s *Stream) Log() EventLog { return s.log }

// live reports whether the stream may still get events or has a reader:
// such a stream must never be dropped from its session.
func (s *Stream) live() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log.Follower() {
		// A follower's log is elsewhere: it may go as soon as no
		// connection reads it, and be made again.
		return s.conn != nil
	}
	return !s.done || s.conn != nil
}

// follower reports whether the stream reads another replica's log.
func (s *Stream) follower() bool { return s.log.Follower() }

// Attached reports whether a connection on this replica serves the
// stream.
func (s *Stream) Attached() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

// eventID formats the SSE id of seq on stream.
func eventID(dst []byte, stream string, seq uint64) []byte {
	dst = append(dst, stream...)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, seq, 10)
}

// parseEventID splits a Last-Event-ID into stream and seq.
func parseEventID(id string) (stream string, seq uint64, ok bool) {
	i := strings.LastIndexByte(id, '-')
	if i <= 0 {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(id[i+1:], 10, 64)
	if err != nil || seq > 1<<62 {
		return "", 0, false
	}
	return id[:i], seq, true
}

// isPostStreamName reports whether name is one this server gives POST
// streams ("p" and a number).
func isPostStreamName(name string) bool {
	if len(name) < 2 || name[0] != 'p' {
		return false
	}
	_, err := strconv.ParseUint(name[1:], 10, 64)
	return err == nil
}
