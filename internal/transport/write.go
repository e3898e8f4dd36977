package transport

import (
	"net/http"
	"strconv"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// contentTypeJSON is shared by every response; net/http only reads header
// values, and sharing saves an allocation per response. Never append to it.
var contentTypeJSON = []string{"application/json"}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
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
