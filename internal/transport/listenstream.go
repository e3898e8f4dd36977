package transport

import (
	"net/http"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// A listen over HTTP/1.x is taken over from net/http once acknowledged
// (detach.go): an open listen costs its connection, two goroutines and
// its queue.

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
	keepAlive := time.NewTicker(t.opts.KeepAliveInterval)
	defer keepAlive.Stop()
	for {
		// The buffer is the transport's, lent for one write: an idle
		// listen holds none.
		var wb *writeBuf
		select {
		case n := <-l.notes:
			wb = t.writeBufs.get()
			wb.b = l.drain(wb.b, n)
		case <-keepAlive.C:
			wb = t.writeBufs.get()
			wb.b = append(wb.b, keepAliveComment...)
		case <-l.end:
			wb = t.writeBufs.get()
			wb.b = t.appendListenEnd(wb.b, l)
			if s.write(wb.b) == nil {
				s.finish()
			}
			t.writeBufs.put(wb)
			return
		case <-s.gone():
			return
		}
		err := s.write(wb.b)
		t.writeBufs.put(wb)
		if err != nil {
			return
		}
	}
}

// drain appends n and every notification queued behind it, as events.
func (l *listener) drain(buf []byte, n *listenNote) []byte {
	buf = appendListenEvent(buf, l.sub, n)
	for {
		select {
		case n := <-l.notes:
			buf = appendListenEvent(buf, l.sub, n)
		default:
			return buf
		}
	}
}

// appendListenEnd appends the completion result that ends l
// (basic/patterns/subscriptions, "Graceful Closure"), as an event.
func (t *Transport) appendListenEnd(buf []byte, l *listener) []byte {
	buf = append(buf, "data: "...)
	buf = protocol.AppendListenEnd(buf, l.sub, t.serverInfo)
	return append(buf, "\n\n"...)
}
