package response

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// maxMessageRunes is the longest error message the contract allows.
const maxMessageRunes = 1000

// Error is a tool failure, encoded by Failure as the envelope's structured
// error. It implements error, so handlers return it like any other.
//
// Retryable is not a field: it is derived from Code when the error is
// encoded (Code.Retryable), so no caller can get it wrong (INV-MCP-RESP-006).
type Error struct {
	// Code is the failure code. An empty or unknown code is encoded as
	// INTERNAL_ERROR (INV-MCP-RESP-002).
	Code Code
	// Message is for the model and the user. When encoded it is clipped to
	// 1000 characters (runes), and an empty one becomes the code's default
	// text, so error.message is always 1..1000 characters.
	Message string
	// Context is optional detail, e.g. {"path":"/items","limit":100,"actual":150}.
	// Values are encoded with encoding/json in key order; a value that cannot
	// be encoded is left out.
	Context map[string]any
	// RetryAfterMs suggests when to retry. It is encoded only when positive
	// and the code is retryable: a delay on an error that must not be retried
	// would contradict retryable:false.
	RetryAfterMs int64
}

// NewError returns an Error with a message formatted as by fmt.Sprintf; with
// no args, format is used as is. For a message that is not a constant, use
// NewError(code, "%s", msg) or an Error literal (go vet checks format).
func NewError(code Code, format string, args ...any) *Error {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &Error{Code: code, Message: msg}
}

// Error returns "CODE: message" with the code and default message the
// envelope would carry.
func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	code := e.Code.wireCode()
	msg := e.Message
	if msg == "" {
		msg = code.defaultMessage()
	}
	return string(code) + ": " + msg
}

// WithContext sets Context[k] = v and returns e. The map is allocated on
// first use.
func (e *Error) WithContext(k string, v any) *Error {
	if e.Context == nil {
		e.Context = make(map[string]any, 4)
	}
	e.Context[k] = v
	return e
}

// WithRetryAfter sets RetryAfterMs to d rounded up to a whole millisecond
// (a positive delay never becomes 0) and returns e. A non-positive d clears it.
func (e *Error) WithRetryAfter(d time.Duration) *Error {
	if d <= 0 {
		e.RetryAfterMs = 0
		return e
	}
	e.RetryAfterMs = int64((d + time.Millisecond - 1) / time.Millisecond)
	return e
}

// FromError maps any error to an *Error for Failure:
//
//   - an *Error anywhere in err's chain (errors.As) is returned as is;
//   - context.DeadlineExceeded becomes TOOL_TIMEOUT;
//   - context.Canceled becomes OPERATION_FAILED with the message "cancelled";
//   - anything else becomes INTERNAL_ERROR with the generic message
//     "internal error".
//
// The last case deliberately drops err's text. An error the handler did not
// classify was written for operators, not for clients, and may carry a DSN,
// a host name, a file path or a query; the caller logs or traces err, and
// the client gets a code it can act on. A handler that wants the model to
// read the detail wraps it in an *Error with a proper code.
//
// FromError(nil) is nil.
func FromError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) && e != nil {
		return e
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeToolTimeout, Message: "the operation timed out"}
	case errors.Is(err, context.Canceled):
		return &Error{Code: CodeOperationFailed, Message: "cancelled"}
	}
	return &Error{Code: CodeInternalError, Message: "internal error"}
}
