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

// aLongTimeAgo is a read deadline that has passed: a read fails at once.
var aLongTimeAgo = time.Unix(1, 0)

// unwantedBody is for an answer given without reading the request's body
// (a refusal, an error): the connection is closed after the answer
// instead of net/http reading the rest of the body first, which a client
// that sends none would make it wait for until the body deadline. So a
// 401 reaches such a client at once, and its connection ends with it.
// HTTP/2 needs neither: an unread body there ends its stream, not the
// connection.
func unwantedBody(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 1 || r.Body == http.NoBody {
		return
	}
	w.Header().Set("Connection", "close")
	// Whatever of the body is already buffered is still read; nothing
	// more is waited for.
	_ = http.NewResponseController(w).SetReadDeadline(aLongTimeAgo)
}
