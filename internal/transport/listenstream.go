package transport

import (
	"net/http"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// A listen over HTTP/1.x is taken over from net/http once acknowledged
// (detach.go): an open listen costs its connection, one goroutine
// (drive.go) and its queue.

// serveListen writes the acknowledgement and then l's notifications
// until the client goes away or the server ends the listen. It reports
// whether it handed the stream to a goroutine of its own, which then
// calls release when the stream ends; otherwise the caller does.
func (t *Transport) serveListen(w http.ResponseWriter, r *http.Request, l *listener, release func()) (handedOff bool) {
	t.openStreams.Add(1)
	defer func() {
		if !handedOff {
			t.openStreams.Add(-1) // the goroutine taking it over counts it out
		}
	}()
	closeAfterStream(w, r)
	startSSE(w)
	rc := http.NewResponseController(w)
	ack, err := protocol.Marshal(l.filter)
	if err != nil {
		t.log.Error().Err(err).Msg("encode listen acknowledgement")
		return false
	}
	first := appendListenEvent(nil, l.sub, &listenNote{method: protocol.NotificationSubscriptionsAcknowledged,
		members: append([]byte(`"notifications":`), ack...)})
	_ = rc.SetWriteDeadline(t.now().Add(t.opts.WriteTimeout))
	if _, err := w.Write(first); err != nil || rc.Flush() != nil {
		return false
	}
	_ = rc.SetWriteDeadline(time.Time{})
	if t.detach(rc, r, func(s *connSink) {
		defer release()
		defer t.openStreams.Add(-1)
		t.writeListen(s, l)
	}) {
		return true
	}
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	t.writeListen(handlerSink{t: t, w: w, rc: rc, ctx: r.Context()}, l)
	return false
}

// keepAliveComment is an SSE comment: proxies see traffic, clients
// nothing.
const keepAliveComment = ": keep-alive\n\n"

// writeListen writes l's notifications to s until the client goes away,
// a write fails or the server ends the listen, with its completion
// result.
func (t *Transport) writeListen(s sseSink, l *listener) {
	w := &listenWriter{t: t, s: s, l: l}
	switch s := s.(type) {
	case *connSink:
		t.drive(s, w.pass, l.drive)
	case waitingSink:
		t.serveWaiting(s, w.pass, l.drive)
	}
}

// listenWriter writes a listen's notifications, a pass at a time, as its
// driver (drive.go) calls it.
type listenWriter struct {
	t *Transport
	s sseSink
	l *listener
}

// pass writes the queued notifications, and a keep-alive comment when
// ping is set, and then the completion result if the server ends the
// listen; it reports whether the listen has ended.
func (w *listenWriter) pass(ping bool) (ended bool) {
	// The buffer is the transport's, lent for one write: an idle listen
	// holds none.
	wb := w.t.writeBufs.get()
	defer w.t.writeBufs.put(wb)
	// The end is looked at before the queue: what was queued before the
	// server ended the listen goes out first (but for a notification
	// that found the queue full, which is what ended it).
	end := false
	select {
	case <-w.l.end:
		end = true
	default:
	}
	// Ending, at most a queue's worth more: producers offer until the
	// listen is removed, and must not keep the last pass going.
	wb.b = w.l.drain(wb.b, end)
	if ping {
		wb.b = append(wb.b, keepAliveComment...)
	}
	if end {
		wb.b = w.t.appendListenEnd(wb.b, w.l)
	}
	if len(wb.b) > 0 && w.s.write(wb.b) != nil {
		return true
	}
	if end {
		w.s.finish()
	}
	return end
}

// drain appends the queued notifications, as events: all of them, or
// when last, at most the queue's capacity.
func (l *listener) drain(buf []byte, last bool) []byte {
	for i := 0; !last || i < cap(l.notes); i++ {
		select {
		case n := <-l.notes:
			buf = appendListenEvent(buf, l.sub, n)
		default:
			return buf
		}
	}
	return buf
}

// appendListenEnd appends the completion result that ends l
// (basic/patterns/subscriptions, "Graceful Closure"), as an event.
func (t *Transport) appendListenEnd(buf []byte, l *listener) []byte {
	buf = append(buf, "data: "...)
	buf = protocol.AppendListenEnd(buf, l.sub, t.serverInfo)
	return append(buf, "\n\n"...)
}
