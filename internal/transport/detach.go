package transport

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
)

// An SSE stream that stays open is idle for most of its life, and a
// replica holds thousands of them: listen streams
// (docs/adr/0054-listen-across-replicas.md) and the standalone GET
// streams of legacy client sessions (docs/adr/0056-cheap-by-default.md).
// Served by its handler, each keeps net/http's per-connection buffers
// (4 KiB to read, about 6 KiB to write) and the handler goroutine's
// stack, grown by the whole request path, for as long as it is open:
// about 40 KiB a stream. So once its headers are out, such a stream over
// HTTP/1.x takes its connection over (Hijack) and the handler returns:
// what remains is the connection and one goroutine that waits for the
// client to close it and writes what is due in between (drive.go). The
// response continues as it began, chunked (HTTP/1.1) or until the
// connection closes (HTTP/1.0). An HTTP/2 stream cannot be taken over;
// its handler serves it.

// sseSink is where a stream's bytes go: through its handler's
// ResponseWriter (a waitingSink), or straight to a connection taken over
// (*connSink).
type sseSink interface {
	// write sends buf, flushed, under the write timeout.
	write(buf []byte) error
	// finish ends the response after the stream's last write.
	finish()
}

// waitingSink is a sink whose stream is written by a goroutine that
// waits for its next write.
type waitingSink interface {
	sseSink
	// gone is closed when the client has gone away.
	gone() <-chan struct{}
}

// handlerSink writes through the handler's ResponseWriter; the caller
// clears the write deadline when the stream ends, so that net/http can
// finish the response.
type handlerSink struct {
	t   *Transport
	w   http.ResponseWriter
	rc  *http.ResponseController
	ctx context.Context // the request's
}

func (s handlerSink) write(buf []byte) error {
	_ = s.rc.SetWriteDeadline(s.t.now().Add(s.t.opts.WriteTimeout)) // unsupported on some writers: no deadline then
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s handlerSink) gone() <-chan struct{} { return s.ctx.Done() }

// finish leaves the end of the response to net/http, once the handler
// returns.
func (s handlerSink) finish() {}

// connSink writes to a connection taken over from net/http after the
// response's headers: each write one chunk when the response is chunked.
// pending is net/http's reader of the connection when it holds bytes
// already read; otherwise that reader, 4 KiB, is let go: kept, it was
// the largest part of an idle stream's memory (BENCHMARKS.md, "10,000
// subscribers on one replica").
type connSink struct {
	t       *Transport
	conn    net.Conn
	pending *bufio.Reader
	chunked bool
}

func newConnSink(t *Transport, conn net.Conn, pending *bufio.Reader, chunked bool) *connSink {
	return &connSink{t: t, conn: conn, pending: pending, chunked: chunked}
}

func (s *connSink) write(buf []byte) error {
	frame := buf
	if s.chunked {
		wb := s.t.writeBufs.get()
		defer s.t.writeBufs.put(wb)
		wb.b = strconv.AppendInt(wb.b, int64(len(buf)), 16)
		wb.b = append(wb.b, "\r\n"...)
		wb.b = append(wb.b, buf...)
		frame = append(wb.b, "\r\n"...)
		wb.b = frame
	}
	_ = s.conn.SetWriteDeadline(s.t.now().Add(s.t.opts.WriteTimeout))
	_, err := s.conn.Write(frame)
	return err
}

// finish ends a chunked response, so that the client sees it complete.
func (s *connSink) finish() {
	if s.chunked {
		_ = s.conn.SetWriteDeadline(s.t.now().Add(s.t.opts.WriteTimeout))
		_, _ = s.conn.Write([]byte("0\r\n\r\n"))
	}
}

// detach takes the connection under rc over from net/http and runs serve
// with it on a goroutine of its own, which Close waits for. It does not
// when Close has begun or the connection cannot be taken over; then the
// caller serves the stream through its handler.
//
// A request with a body is not taken over: its body is the handler's to
// read (a GET's is ignored), and the reader above would take its bytes
// for the client sending more.
func (t *Transport) detach(rc *http.ResponseController, r *http.Request, serve func(*connSink)) bool {
	if r.ProtoMajor != 1 || r.ContentLength != 0 && r.Method != http.MethodPost {
		return false
	}
	t.streamsMu.Lock()
	defer t.streamsMu.Unlock()
	if t.closed {
		return false
	}
	conn, brw, err := rc.Hijack()
	if err != nil {
		return false
	}
	var pending *bufio.Reader // only when it holds bytes: see newConnSink
	if brw.Reader.Buffered() > 0 {
		pending = brw.Reader
	}
	chunked := r.ProtoAtLeast(1, 1)
	t.streams.Add(1) // under streamsMu: before Close's Wait
	go func() {
		defer t.streams.Done()
		s := newConnSink(t, conn, pending, chunked)
		defer func() { _ = conn.Close() }()
		// The request's panic handler is no longer above this goroutine:
		// a panic ends this stream, not the process.
		defer func() {
			if v := recover(); v != nil {
				t.log.Error().Str("panic", logging.Field(fmt.Sprint(v))).Bytes("stack", debug.Stack()).Msg("sse: panic in a taken-over stream; it is closed")
			}
		}()
		serve(s)
	}()
	return true
}

// closeAfterStream marks an HTTP/1.x response whose connection may be
// taken over: the client must not put the connection back in its pool
// when the stream ends, where its next request would meet the closed end.
func closeAfterStream(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
}
