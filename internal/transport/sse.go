package transport

import (
	"bytes"
	"net/http"
	"strconv"
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
	buf := make([]byte, 0, 512)
	if prime {
		// An id with empty data: the client learns where to resume from
		// before any real event arrives.
		buf = append(buf, "id: "...)
		buf = eventID(buf, st.id, cursor)
		buf = append(buf, "\ndata: \n\n"...)
	}
	keepAlive := time.NewTicker(t.opts.KeepAliveInterval)
	defer keepAlive.Stop()
	// ended writes the retry hint of a closed connection, if it has one,
	// and ends the response.
	ended := func() {
		if c.retryMs > 0 {
			buf = append(buf, "retry: "...)
			buf = strconv.AppendInt(buf, int64(c.retryMs), 10)
			buf = append(buf, "\n\n"...)
			if s.write(buf) != nil {
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
	var evs []Event
	for {
		if isClosed() {
			ended()
			return
		}
		var done, lost bool
		evs, done, lost = st.next(cursor, evs[:0])
		if isClosed() {
			ended()
			return
		}
		if lost {
			t.log.Warn().Str("stream", st.id).Uint64("cursor", cursor).Msg("sse: events after the client's position were dropped from the bounded log")
		}
		for _, ev := range evs {
			buf = appendEvent(buf, st.id, ev)
			cursor = ev.Seq
		}
		if len(buf) > 0 {
			if s.write(buf) != nil {
				return
			}
			if len(evs) > 0 {
				// Only now: an event counts as sent once it left the
				// process, so a failed write leaves it for resumption.
				st.markFlushed(cursor)
			}
			buf = buf[:0]
			if cap(buf) > 4096 {
				buf = make([]byte, 0, 512) // a burst's buffer is not kept for an idle stream
			}
		}
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
			buf = append(buf, keepAliveComment...)
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
