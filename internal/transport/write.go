package transport

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// bufPool recycles response buffers on the JSON path.
type bufPool struct{ p sync.Pool }

func (b *bufPool) get() *[]byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		*v = (*v)[:0]
		return v
	}
	buf := make([]byte, 0, 1024)
	return &buf
}

func (b *bufPool) put(buf *[]byte) {
	if cap(*buf) <= 64<<10 { // do not pin huge buffers
		b.p.Put(buf)
	}
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client may be gone; nothing to do about it
}

// writeError answers with a JSON-RPC error body and an HTTP status.
func writeError(w http.ResponseWriter, status int, id protocol.ID, e *protocol.Error) {
	writeJSON(w, status, protocol.AppendError(nil, id, e))
}
