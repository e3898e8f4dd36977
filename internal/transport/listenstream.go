package transport

import (
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// A listen stream is idle for most of its life, and a replica holds
// thousands (docs/adr/0054-listen-across-replicas.md). Served by its
// handler, each would keep net/http's per-connection buffers (4 KiB to
// read, 6 KiB to write) and the handler goroutine's stack, grown by the
// whole request path, for as long as it is open: about 38 KiB a stream.
// So once the acknowledgement is out, a listen over HTTP/1.x takes its
// connection over (Hijack) and the handler returns: what remains is the
// connection, a writer goroutine that waits in one select, a reader
// goroutine that notices the client closing, and the listener's queue.
// The response continues as it began, chunked (HTTP/1.1) or until the
// connection closes (HTTP/1.0). An HTTP/2 stream cannot be taken over;
// its handler serves it.

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
	if r.ProtoMajor == 1 {
		// The connection is taken over and closed when the listen ends:
		// the client must not put it back in its pool, where the next
		// request on it would meet the closed end.
		w.Header().Set("Connection", "close")
	}
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
	if r.ProtoMajor == 1 && t.detachListen(rc, r.ProtoAtLeast(1, 1), l, release) {
		return true
	}
	t.serveAttached(w, r, rc, l)
	return false
}

// detachListen takes l's connection over from net/http and serves it on
// a goroutine of its own, which Close waits for, unless Close has begun
// (then the handler ends the listen, with its completion result) or the
// connection cannot be taken over.
func (t *Transport) detachListen(rc *http.ResponseController, chunked bool, l *listener, release func()) bool {
	t.streamsMu.Lock()
	defer t.streamsMu.Unlock()
	if t.closed {
		return false
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		return false
	}
	t.streams.Add(1) // under streamsMu: before Close's Wait
	go func() {
		defer t.streams.Done()
		defer release()
		defer t.openStreams.Add(-1)
		t.serveDetached(conn, chunked, l)
	}()
	return true
}

// serveAttached writes l's stream through its handler's ResponseWriter.
func (t *Transport) serveAttached(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, l *listener) {
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	write := func(buf []byte) bool {
		_ = rc.SetWriteDeadline(t.now().Add(t.opts.WriteTimeout))
		if _, err := w.Write(buf); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	keepAlive := time.NewTicker(t.opts.KeepAliveInterval)
	defer keepAlive.Stop()
	var buf []byte
	for {
		buf = buf[:0]
		select {
		case n := <-l.notes:
			buf = l.drain(buf, n)
		case <-keepAlive.C:
			buf = append(buf, keepAliveComment...)
		case <-l.end:
			write(t.appendListenEnd(buf, l))
			return
		case <-r.Context().Done():
			return
		}
		if !write(buf) {
			return
		}
	}
}

// keepAliveComment is an SSE comment: proxies see traffic, clients
// nothing.
const keepAliveComment = ": keep-alive\n\n"

// serveDetached writes l's stream on conn, taken over from net/http after
// the acknowledgement, until the client closes it, a write fails or the
// server ends the listen; then it closes conn. chunked: the response is
// HTTP/1.1 chunked, and each write is one chunk.
func (t *Transport) serveDetached(conn net.Conn, chunked bool, l *listener) {
	gone := make(chan struct{})
	go func() {
		// The client sends nothing more on this connection: a read ends
		// when it closes it (or when conn is closed below), and a client
		// that sends anything instead ends its listen, rather than have
		// the server read whatever it streams a byte at a time.
		defer close(gone)
		var b [1]byte
		_, _ = conn.Read(b[:])
	}()
	defer func() {
		_ = conn.Close()
		<-gone
	}()
	var buf, out []byte
	write := func(payload []byte, last bool) bool {
		frame := payload
		if chunked {
			out = strconv.AppendInt(out[:0], int64(len(payload)), 16)
			out = append(out, "\r\n"...)
			out = append(out, payload...)
			out = append(out, "\r\n"...)
			if last {
				out = append(out, "0\r\n\r\n"...)
			}
			frame = out
		}
		_ = conn.SetWriteDeadline(t.now().Add(t.opts.WriteTimeout))
		_, err := conn.Write(frame)
		return err == nil
	}
	keepAlive := time.NewTicker(t.opts.KeepAliveInterval)
	defer keepAlive.Stop()
	for {
		var payload []byte
		select {
		case n := <-l.notes:
			payload = l.drain(buf[:0], n)
		case <-keepAlive.C:
			payload = append(buf[:0], keepAliveComment...)
		case <-l.end:
			buf = t.appendListenEnd(buf[:0], l)
			write(buf, true)
			return
		case <-gone:
			return
		}
		buf = payload
		if !write(payload, false) {
			return
		}
		if cap(buf) > 4096 || cap(out) > 4096 {
			buf, out = nil, nil // a burst's buffers are not kept for an idle stream
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
