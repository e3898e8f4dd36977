package transport

import (
	"net/http"
	"time"
)

// BodyDeadline gives every request that carries a body timeout to send
// it, whichever handler answers it and whether or not it reads the body.
// Mount it before anything else, on every route of the server.
//
// Without it, a client that sends headers with a Content-Length and then
// nothing holds its connection for ever: after the handler returns,
// net/http reads the rest of an unread body (up to 256 KiB, so that the
// connection can carry the next request), and with http.Server's
// ReadTimeout unset — it would also cut long-lived streams — that read
// has no deadline. The deadline is lifted when the body has been read
// (readBody; net/http lifts it too when the body ends), so a response
// that streams is not cut by it. A request without a body gets none: its
// connection is already watched by net/http's background read, which a
// deadline would cancel.
func BodyDeadline(timeout time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The server's own writer, not a ResponseController: this
			// runs first, before anything wraps it, and a controller
			// would cost an allocation per request.
			if d, ok := w.(readDeadliner); ok && r.Body != http.NoBody {
				_ = d.SetReadDeadline(time.Now().Add(timeout))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// readDeadliner is net/http's ResponseWriter.
type readDeadliner interface{ SetReadDeadline(time.Time) error }

// unwantedBodyGrace is how long the body of a request answered without
// reading it may still take to arrive: long enough for a client that is
// sending it to finish (it then reads the answer, where closing the
// connection under its writes would make the kernel reset it, and a
// client that misses a 401 never refreshes its token), too short for one
// that sends none to hold the connection.
const unwantedBodyGrace = time.Second

// unwantedBody is for an answer given without reading the request's body
// (a refusal, an error): the connection is closed after the answer, and
// net/http, which reads the rest of the body (up to 256 KiB) before it
// closes, waits for it at most unwantedBodyGrace, or the body timeout if
// that is shorter. So a 401 reaches a client that declared a body and
// sent none at once, and its connection ends within the grace. HTTP/2
// needs neither: an unread body there ends its stream, not the
// connection.
func (t *Transport) unwantedBody(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 1 || r.Body == http.NoBody {
		return
	}
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(t.now().Add(min(unwantedBodyGrace, t.opts.ReadBodyTimeout)))
}
