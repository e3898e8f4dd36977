package statetools

import (
	"slices"
	"strconv"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// entryJSON is a memory entry that writes its own JSON (a
// response.JSONAppender). memory_retrieve answers from the in-process cache
// in a few microseconds, and encoding/json's reflection plus the
// re-validation it applies to RawMessage and time.Time output would be a
// fifth of that (a cached read should cost about what the trivial tool does; BENCHMARKS.md).
// The output is what json.Marshal(store.MemoryEntry) writes, byte for byte
// when Value is compact; TestEntryJSONMatchesMarshal holds it to that.
type entryJSON struct{ e *store.MemoryEntry }

// AppendJSON implements response.JSONAppender. Value is valid JSON: the
// stores accept nothing else (store.CheckValue).
func (j entryJSON) AppendJSON(dst []byte) []byte {
	e := j.e
	// One allocation: the fixed members, three timestamps and the
	// strings' quotes fit in 256 bytes; escapes are rare.
	dst = slices.Grow(dst, 256+len(e.Namespace)+len(e.Key)+len(e.Value)+16*len(e.Tags))
	dst = append(dst, `{"namespace":`...)
	dst = protocol.AppendString(dst, e.Namespace)
	dst = append(dst, `,"key":`...)
	dst = protocol.AppendString(dst, e.Key)
	dst = append(dst, `,"value":`...)
	if len(e.Value) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, e.Value...)
	}
	dst = append(dst, `,"tags":`...)
	if e.Tags == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, t := range e.Tags {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = protocol.AppendString(dst, t)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, e.Version, 10)
	dst = appendTime(append(dst, `,"createdAt":`...), e.CreatedAt)
	dst = appendTime(append(dst, `,"updatedAt":`...), e.UpdatedAt)
	if e.ExpiresAt != nil {
		dst = appendTime(append(dst, `,"expiresAt":`...), *e.ExpiresAt)
	}
	return append(dst, '}')
}

// appendTime writes t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, trailing zeros dropped). The stores keep times in UTC at
// microsecond precision, well inside the years MarshalJSON accepts.
func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}
