package response

// Code is a tool-failure code: the error.code of a failure envelope
// (INV-MCP-RESP-002). The set is closed; Valid reports membership.
type Code string

// The fourteen codes of the response contract, then the three the upstream
// federation needs (ecosystem invariants: an ambiguous bare tool name, an
// upstream that does not connect in time, an upstream invocation that fails).
const (
	// Validation errors.
	CodeInvalidInput         Code = "INVALID_INPUT"
	CodeMissingRequiredField Code = "MISSING_REQUIRED_FIELD"
	CodeInvalidFormat        Code = "INVALID_FORMAT"
	CodeArrayTooLarge        Code = "ARRAY_TOO_LARGE"

	// Resource errors.
	CodeNotFound      Code = "NOT_FOUND"
	CodeAlreadyExists Code = "ALREADY_EXISTS"
	CodeConflict      Code = "CONFLICT"

	// Operation errors.
	CodeOperationFailed Code = "OPERATION_FAILED"
	CodeToolTimeout     Code = "TOOL_TIMEOUT"
	CodeRateLimited     Code = "RATE_LIMITED"
	CodeMemoryPressure  Code = "MEMORY_PRESSURE"

	// System errors.
	CodeInternalError      Code = "INTERNAL_ERROR"
	CodeNotImplemented     Code = "NOT_IMPLEMENTED"
	CodeServiceUnavailable Code = "SERVICE_UNAVAILABLE"

	// Upstream (federation) errors.
	CodeAmbiguousTool     Code = "AMBIGUOUS_TOOL"
	CodeConnectionTimeout Code = "CONNECTION_TIMEOUT"
	CodeInvocationFailed  Code = "INVOCATION_FAILED"
)

// Codes returns every Code, in contract order. The slice is fresh: callers
// may keep or modify it.
func Codes() []Code {
	return []Code{
		CodeInvalidInput, CodeMissingRequiredField, CodeInvalidFormat, CodeArrayTooLarge,
		CodeNotFound, CodeAlreadyExists, CodeConflict,
		CodeOperationFailed, CodeToolTimeout, CodeRateLimited, CodeMemoryPressure,
		CodeInternalError, CodeNotImplemented, CodeServiceUnavailable,
		CodeAmbiguousTool, CodeConnectionTimeout, CodeInvocationFailed,
	}
}

// Valid reports whether c is one of Codes().
func (c Code) Valid() bool { return c.defaultMessage() != "" }

// Retryable reports whether an operation that failed with c may safely be
// retried. This is the one retryable set (INV-MCP-RESP-006): the encoder,
// the envelope schema and the tests all derive from it, and nothing else
// decides retryability. The four are transient conditions of the server or
// its dependencies, not of the request: retrying an invalid or conflicting
// request, or one whose outcome is unknown (INVOCATION_FAILED,
// CONNECTION_TIMEOUT at the upstream layer, which does its own bounded
// retries), could duplicate work or fail the same way.
func (c Code) Retryable() bool {
	switch c {
	case CodeToolTimeout, CodeRateLimited, CodeMemoryPressure, CodeServiceUnavailable:
		return true
	}
	return false
}

// defaultMessage is the message of an Error that has none, and "" for an
// invalid code.
func (c Code) defaultMessage() string {
	switch c {
	case CodeInvalidInput:
		return "invalid input"
	case CodeMissingRequiredField:
		return "missing required field"
	case CodeInvalidFormat:
		return "invalid format"
	case CodeArrayTooLarge:
		return "array too large"
	case CodeNotFound:
		return "not found"
	case CodeAlreadyExists:
		return "already exists"
	case CodeConflict:
		return "conflict"
	case CodeOperationFailed:
		return "operation failed"
	case CodeToolTimeout:
		return "the tool timed out"
	case CodeRateLimited:
		return "rate limited"
	case CodeMemoryPressure:
		return "the server is under memory pressure"
	case CodeInternalError:
		return "internal error"
	case CodeNotImplemented:
		return "not implemented"
	case CodeServiceUnavailable:
		return "service unavailable"
	case CodeAmbiguousTool:
		return "ambiguous tool name"
	case CodeConnectionTimeout:
		return "connection timed out"
	case CodeInvocationFailed:
		return "invocation failed"
	}
	return ""
}

// wireCode is the code a failure envelope carries for c: c itself when
// valid, INTERNAL_ERROR otherwise, so an envelope never lacks a valid code
// (INV-MCP-RESP-002).
func (c Code) wireCode() Code {
	if c.Valid() {
		return c
	}
	return CodeInternalError
}
