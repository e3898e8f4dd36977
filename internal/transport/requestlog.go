package transport

import (
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// requestLog is the one structured log line written per request. A
// detached tools/call fills it from two goroutines: the HTTP side (status,
// streaming) and the handler (tool, outcome); each calls finishLog when done
// with its fields and the last one writes the line, so the line is complete
// even when the HTTP response ends before the handler (SEP-1699 polling, a
// disconnect).
type requestLog struct {
	pending    atomic.Int32
	start      time.Time
	httpMethod string // POST, GET or DELETE: the metric's label
	method     string // the JSON-RPC method, or GET/DELETE
	id         protocol.ID
	session    string // the client session's handle, never its id
	tool       string
	toolError  bool
	// status is what the response writer wrote (statusWriter), never
	// assigned by hand.
	status   int
	rpcCode  int
	streamed bool
	w        statusWriter
	// trace is the request's sampled OpenTelemetry span, whose ids the
	// line carries (zero: none).
	trace trace.SpanContext
}

// statusWriter records in its request's log line the status it writes,
// so that the line and the metric say what the client got on every path.
// Unwrap lets http.ResponseController reach the connection underneath
// (deadlines, flushes).
type statusWriter struct {
	http.ResponseWriter
	rec   *requestLog
	wrote bool
}

// record wraps w so that its status lands in rec; the writer lives in rec,
// so a request costs no allocation more.
func (rec *requestLog) record(w http.ResponseWriter) http.ResponseWriter {
	rec.w = statusWriter{ResponseWriter: w, rec: rec}
	return &rec.w
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote, w.rec.status = true, code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.wrote, w.rec.status = true, http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (t *Transport) finishLog(rec *requestLog) {
	if rec.pending.Add(-1) == 0 {
		t.observe(rec.httpMethod, rec.status)
		t.logRequest(rec)
	}
}

// logRequest writes the line: method, tool, client session, status,
// duration and JSON-RPC id; never arguments or results. The method and
// the id are the client's to choose, up to the body limit, so they are
// bounded (logging.Field): one request must not write a line of
// megabytes. The session id and the tool name are the server's own.
func (t *Transport) logRequest(rec *requestLog) {
	lvl := t.log.Info()
	if rec.status >= http.StatusInternalServerError || rec.rpcCode == protocol.CodeInternalError {
		lvl = t.log.Error()
	}
	if !lvl.Enabled() {
		return
	}
	lvl = lvl.Str("method", logging.Field(rec.method)).Int("status", rec.status).
		Float64("durationMs", float64(t.now().Sub(rec.start).Microseconds())/1000)
	if rec.session != "" {
		lvl = lvl.Str("session", rec.session)
	}
	switch {
	case rec.id.IsZero():
	case len(rec.id) <= logging.MaxField:
		lvl = lvl.RawJSON("id", rec.id) // valid JSON: Decode checked it
	default:
		lvl = lvl.Str("id", logging.Field(string(rec.id)))
	}
	if rec.tool != "" {
		lvl = lvl.Str("tool", rec.tool).Bool("toolError", rec.toolError)
	}
	if rec.rpcCode != 0 {
		lvl = lvl.Int("rpcError", rec.rpcCode)
	}
	if rec.streamed {
		lvl = lvl.Bool("sse", true)
	}
	if traceID, spanID, ok := logTrace(rec.trace); ok {
		lvl = lvl.Str("traceId", traceID).Str("spanId", spanID)
	}
	lvl.Msg("mcp request")
}
