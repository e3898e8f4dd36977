package traces

import (
	"errors"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// isInvalid reports whether err is the store refusing input
// (*store.FieldError: a tool name too long, an unknown status) rather
// than failing.
func isInvalid(err error) bool {
	var fe *store.FieldError
	return errors.As(err, &fe)
}

// isolate writes the valid traces of batch, which the store refused
// because of at least one invalid trace, by halving it until the invalid
// ones stand alone; they are counted in Stats.Rejected. A batch is all or
// nothing in the store, so without this one bad trace — a client sending
// a huge tool name every FlushInterval — would cost every caller their
// traces. k bad traces cost about 2·k·log2(BatchSize) writes. It returns
// an error only if the store failed (not refused) a part, which is lost.
func (r *Recorder) isolate(batch []store.Trace, rep *reporter) error {
	if len(batch) == 1 {
		r.rejected.Add(1)
		rep.rejectedTrace()
		return nil
	}
	var failed error
	mid := len(batch) / 2
	for _, part := range [2][]store.Trace{batch[:mid], batch[mid:]} {
		err := r.insert(part, rep)
		switch {
		case err == nil:
		case isInvalid(err):
			if err := r.isolate(part, rep); err != nil {
				failed = err
			}
		default:
			// Already in a rare path: no retry schedule per part.
			failed = r.lose(part, err, rep)
		}
	}
	return failed
}
