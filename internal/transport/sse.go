package transport

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
)

// startSSE writes the headers of an event stream and flushes them at
// once, so the client is not left waiting for the first event: its
// request completes only once the headers arrive, and a quiet stream may
// send no event for a long time.
func startSSE(w http.ResponseWriter) {
	h := w.Header()
	h["Content-Type"] = []string{"text/event-stream"}
	h["Cache-Control"] = []string{"no-cache, no-transform"}
	// nginx and similar proxies buffer responses unless told not to.
	h["X-Accel-Buffering"] = []string{"no"}
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
}

// serveStream writes st's events after cursor to s until the stream is
// finished, the connection is superseded or closed, or the client goes
// away. It sends a priming event first when prime is set (SEP-1699) and
// an SSE comment every keepAlive so idle proxies keep the connection.
// Every write has a deadline, so a client that stops reading cannot pin
// it.
func (t *Transport) serveStream(s sseSink, st *Stream, c *streamConn, cursor uint64, prime bool) {
	t.openStreams.Add(1)
	defer t.openStreams.Add(-1)
	w := &streamWriter{t: t, s: s, st: st, c: c, cursor: cursor, prime: prime}
	hook := func(kick func()) { st.drive(c, kick) }
	switch s := s.(type) {
	case *connSink:
		t.drive(s, w.pass, hook)
	case waitingSink:
		t.serveWaiting(s, w.pass, hook)
	}
}

// streamWriter writes a stream's events to one connection, a pass at a
// time, as its driver (drive.go) calls it.
type streamWriter struct {
	t      *Transport
	s      sseSink
	st     *Stream
	c      *streamConn
	cursor uint64 // the last event written
	prime  bool   // the priming event is still to be written
}

// pass writes the events after the cursor, and a keep-alive comment when
// ping is set; it reports whether the stream has ended: finished, its
// connection closed (superseded), or a write failed.
func (w *streamWriter) pass(ping bool) (ended bool) {
	// The connection closed (superseded) must not write what it reads:
	// the events go out on the connection that superseded it. It is
	// asked before a read and after one (a read from a shared log takes
	// a round trip, during which the close may come).
	if w.isClosed() {
		w.end()
		return true
	}
	// The buffers are the transport's, lent for one write: an idle
	// stream holds none (BENCHMARKS.md, "10,000 subscribers on one
	// replica").
	wb := w.t.writeBufs.get()
	defer w.t.writeBufs.put(wb)
	var done, lost bool
	wb.evs, done, lost = w.st.next(w.cursor, wb.evs)
	if w.isClosed() {
		w.end()
		return true
	}
	if lost {
		w.t.log.Warn().Str("stream", w.st.id).Uint64("cursor", w.cursor).Msg("sse: events after the client's position were dropped from the bounded log")
	}
	wb.b = w.appendPrime(wb.b)
	if ping {
		wb.b = append(wb.b, keepAliveComment...)
	}
	for _, ev := range wb.evs {
		wb.b = appendEvent(wb.b, w.st.id, ev)
		w.cursor = ev.Seq
	}
	if len(wb.b) > 0 {
		if w.s.write(wb.b) != nil {
			return true
		}
		if len(wb.evs) > 0 {
			// Only now: an event counts as sent once it left the
			// process, so a failed write leaves it for resumption.
			w.st.markFlushed(w.cursor)
		}
	}
	if done {
		w.s.finish()
		return true
	}
	return false
}

func (w *streamWriter) isClosed() bool {
	select {
	case <-w.c.closed:
		return true
	default:
		return false
	}
}

// end writes the priming event if it is still due (a client needs an id
// to resume from, SEP-1699) and the retry hint of a closed connection,
// if it has one, and ends the response.
func (w *streamWriter) end() {
	if w.prime || w.c.retryMs > 0 {
		wb := w.t.writeBufs.get()
		defer w.t.writeBufs.put(wb)
		wb.b = w.appendPrime(wb.b)
		if w.c.retryMs > 0 {
			wb.b = append(wb.b, "retry: "...)
			wb.b = strconv.AppendInt(wb.b, int64(w.c.retryMs), 10)
			wb.b = append(wb.b, "\n\n"...)
		}
		if w.s.write(wb.b) != nil {
			return
		}
	}
	w.s.finish()
}

// appendPrime appends the priming event if it is still due: an id with
// empty data, so that the client learns where to resume from before any
// real event arrives.
func (w *streamWriter) appendPrime(b []byte) []byte {
	if !w.prime {
		return b
	}
	w.prime = false
	b = append(b, "id: "...)
	b = eventID(b, w.st.id, w.cursor)
	return append(b, "\ndata: \n\n"...)
}

// appendEvent frames one message. JSON from encoding/json has no raw
// newlines, but a message is split over data lines if it ever does.
func appendEvent(dst []byte, stream string, ev Event) []byte {
	dst = append(dst, "id: "...)
	dst = eventID(dst, stream, ev.Seq)
	dst = append(dst, '\n')
	data := ev.Data
	for {
		i := bytes.IndexByte(data, '\n')
		dst = append(dst, "data: "...)
		if i < 0 {
			dst = append(dst, data...)
			break
		}
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		data = data[i+1:]
	}
	return append(dst, "\n\n"...)
}

// writeBufs lends streams the buffers of one write, so that the
// thousands of idle streams a replica holds keep none between writes
// (BENCHMARKS.md, "10,000 subscribers on one replica"). The zero value is
// ready.
type writeBufs struct{ pool sync.Pool }

// writeBuf is one write's scratch.
type writeBuf struct {
	b   []byte  // the bytes to send
	evs []Event // the events read from a stream's log
}

// maxPooledWrite and maxPooledEvents bound the buffers taken back: a
// burst's buffer is let go rather than kept for every later write.
const (
	maxPooledWrite  = 64 << 10
	maxPooledEvents = 64
)

func (p *writeBufs) get() *writeBuf {
	if wb, ok := p.pool.Get().(*writeBuf); ok {
		return wb
	}
	return &writeBuf{b: make([]byte, 0, 512)}
}

// put takes wb back, without its references to events' data, which must
// not outlive the write in the pool.
func (p *writeBufs) put(wb *writeBuf) {
	if cap(wb.b) > maxPooledWrite || cap(wb.evs) > maxPooledEvents {
		return
	}
	clear(wb.evs)
	wb.b, wb.evs = wb.b[:0], wb.evs[:0]
	p.pool.Put(wb)
}
