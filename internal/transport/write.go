package transport

import (
	"net/http"
	"strconv"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	// net/http sets Content-Length itself for a body written in one piece
	// under its chunking threshold; only larger bodies need it set here.
	if len(body) > 2048 {
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client may be gone; nothing to do about it
}

// writeError answers with a JSON-RPC error body and an HTTP status.
func writeError(w http.ResponseWriter, status int, id protocol.ID, e *protocol.Error) {
	writeJSON(w, status, protocol.AppendError(nil, id, e))
}

// retryLater answers 503 with a one-second Retry-After: the server cannot
// do it now (shutting down, the shared store unreachable), the client
// should retry, and nothing about its session is wrong.
func retryLater(w http.ResponseWriter, format string, args ...any) {
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, nil, protocol.Errorf(protocol.CodeInternalError, format, args...))
}
