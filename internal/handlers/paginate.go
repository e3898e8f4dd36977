package handlers

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Cursors are opaque to clients (server/utilities/pagination); ours encode
// an offset with a prefix so that garbage is told apart from a real cursor.
const cursorPrefix = "o1:"

func encodeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.Itoa(offset)))
}

// page returns the [start,end) window of n items for cursor and the cursor
// of the next page ("" on the last one). A cursor that this server did not
// issue, or that points past the end, is -32602.
func page(n int, cursor *string, size int) (start, end int, next string, err *protocol.Error) {
	if cursor != nil {
		raw, decErr := base64.RawURLEncoding.DecodeString(*cursor)
		s, ok := strings.CutPrefix(string(raw), cursorPrefix)
		off, convErr := strconv.Atoi(s)
		if decErr != nil || !ok || convErr != nil || off < 0 || off > n {
			return 0, 0, "", protocol.Errorf(protocol.CodeInvalidParams, "invalid params: unknown or expired cursor %q", *cursor)
		}
		start = off
	}
	end = min(start+size, n)
	if end < n {
		next = encodeCursor(end)
	}
	return start, end, next, nil
}
