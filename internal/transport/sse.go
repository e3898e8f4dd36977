package transport

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
	"time"
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
	keepAlive := time.NewTicker(t.opts.KeepAliveInterval)
	defer keepAlive.Stop()
	// ended writes the retry hint of a closed connection, if it has one,
	// and ends the response.
	ended := func() {
		if c.retryMs > 0 {
			hint := strconv.AppendInt([]byte("retry: "), int64(c.retryMs), 10)
			if s.write(append(hint, "\n\n"...)) != nil {
				return
			}
		}
		s.finish()
	}
	// isClosed: a connection closed (superseded) must not write what it
	// reads: the events go out on the connection that superseded it. It
	// is asked before a read (select picks at random between a wake-up
	// and the close when both are ready) and after one (a read from a
	// shared log takes a round trip, during which the close may come).
	isClosed := func() bool {
		select {
		case <-c.closed:
			return true
		default:
			return false
		}
	}
	ping := false // a keep-alive comment is due
	for {
		if isClosed() {
			ended()
			return
		}
		// The buffers are the transport's, lent for one write: an idle
		// stream holds none (BENCHMARKS.md, "10,000 subscribers on one
		// replica").
		wb := t.writeBufs.get()
		var done, lost bool
		wb.evs, done, lost = st.next(cursor, wb.evs)
		if isClosed() {
			t.writeBufs.put(wb)
			ended()
			return
		}
		if lost {
			t.log.Warn().Str("stream", st.id).Uint64("cursor", cursor).Msg("sse: events after the client's position were dropped from the bounded log")
		}
		if prime {
			// An id with empty data: the client learns where to resume
			// from before any real event arrives.
			wb.b = append(wb.b, "id: "...)
			wb.b = eventID(wb.b, st.id, cursor)
			wb.b = append(wb.b, "\ndata: \n\n"...)
			prime = false
		}
		if ping {
			wb.b = append(wb.b, keepAliveComment...)
			ping = false
		}
		for _, ev := range wb.evs {
			wb.b = appendEvent(wb.b, st.id, ev)
			cursor = ev.Seq
		}
		if len(wb.b) > 0 {
			if s.write(wb.b) != nil {
				t.writeBufs.put(wb)
				return
			}
			if len(wb.evs) > 0 {
				// Only now: an event counts as sent once it left the
				// process, so a failed write leaves it for resumption.
				st.markFlushed(cursor)
			}
		}
		t.writeBufs.put(wb)
		if done {
			s.finish()
			return
		}
		select {
		case <-c.wake:
		case <-c.closed:
			ended()
			return
		case <-keepAlive.C:
			ping = true
		case <-s.gone():
			return
		}
	}
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

// maxPooledWrite is the largest buffer taken back: a burst's buffer is
// let go rather than kept for every later write.
const maxPooledWrite = 64 << 10

func (p *writeBufs) get() *writeBuf {
	if wb, ok := p.pool.Get().(*writeBuf); ok {
		return wb
	}
	return &writeBuf{b: make([]byte, 0, 512)}
}

// put takes wb back, without its references to events' data, which must
// not outlive the write in the pool.
func (p *writeBufs) put(wb *writeBuf) {
	if cap(wb.b) > maxPooledWrite {
		return
	}
	clear(wb.evs)
	wb.b, wb.evs = wb.b[:0], wb.evs[:0]
	p.pool.Put(wb)
}
