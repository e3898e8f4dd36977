package protocol

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Kind says what a decoded JSON-RPC message is.
type Kind uint8

const (
	KindRequest Kind = iota + 1
	KindNotification
	KindResponse
)

// ID is a JSON-RPC request id kept as its raw JSON text (a string or a
// number), so it is echoed back with exactly the type and spelling the peer
// sent (a client matching responses by "1" vs 1 must get what it sent).
type ID json.RawMessage

// IsZero reports whether the id is absent.
func (id ID) IsZero() bool { return len(id) == 0 }

// String returns the raw JSON text of the id ("null" when absent); it is the
// key under which in-flight requests are tracked.
func (id ID) String() string {
	if len(id) == 0 {
		return "null"
	}
	return string(id)
}

// MarshalJSON writes the raw id, or null when absent.
func (id ID) MarshalJSON() ([]byte, error) {
	if len(id) == 0 {
		return []byte("null"), nil
	}
	return id, nil
}

// UnmarshalJSON accepts a string or a number, kept raw (ids inside params,
// such as notifications/cancelled's requestId, decode through this).
func (id *ID) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*id = nil
		return nil
	}
	if _, err := readID(b); err != nil {
		return err
	}
	*id = append(ID(nil), b...) // a copy: never write into what b aliases
	return nil
}

// IntID makes an ID from an integer (server-to-client requests).
func IntID(n int64) ID {
	return ID(appendInt(nil, n))
}

// Message is one decoded JSON-RPC message. ID, Params and Result stay raw
// and alias the decoded bytes, which must therefore not be reused while the
// message is in use.
type Message struct {
	Kind   Kind
	ID     ID
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
}

// wire holds the envelope's members raw, so a member of the wrong type is
// reported by us with the right code.
type wire struct {
	JSONRPC, ID, Method, Params, Result, Error json.RawMessage
}

// Decode parses exactly one JSON-RPC 2.0 message. On failure it returns the
// JSON-RPC error to send and the id to send it with: the message's id when it
// could be read and is of a valid type, otherwise a zero ID (sent as null).
//
// Batches (a top-level array) are rejected with -32600: Streamable HTTP since
// 2025-06-18 carries one message per POST body (basic/transports).
func Decode(data []byte) (*Message, ID, *Error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, nil, &Error{Code: CodeParseError, Message: "parse error: empty body"}
	}
	if !utf8.Valid(data) {
		return nil, nil, &Error{Code: CodeParseError, Message: "parse error: body is not valid UTF-8"}
	}
	if !json.Valid(data) {
		return nil, nil, &Error{Code: CodeParseError, Message: "parse error: body is not valid JSON"}
	}
	switch trimmed[0] {
	case '{':
	case '[':
		return nil, nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: JSON-RPC batches are not supported; send one message per request"}
	default:
		return nil, nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: a JSON-RPC message must be a JSON object"}
	}
	// The body is valid JSON, so the envelope is read by a scanner that
	// slices members out in place: no reflection and no copies on the path
	// every request takes.
	var w wire
	err := eachMember(data, func(k string, v []byte) bool {
		switch k {
		case "jsonrpc":
			w.JSONRPC = v
		case "id":
			w.ID = v
		case "method":
			w.Method = v
		case "params":
			w.Params = v
		case "result":
			w.Result = v
		case "error":
			w.Error = v
		}
		return true
	})
	if err != nil {
		return nil, nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: " + err.Error()}
	}
	return classify(&w)
}

func classify(w *wire) (*Message, ID, *Error) {
	id, idErr := readID(w.ID)
	if idErr != nil {
		return nil, nil, idErr
	}
	if !isString(w.JSONRPC, "2.0") {
		return nil, id, &Error{Code: CodeInvalidRequest, Message: `invalid request: "jsonrpc" must be the string "2.0"`}
	}
	m := &Message{ID: id}
	if w.Method != nil {
		if len(w.Method) == 0 || w.Method[0] != '"' {
			return nil, id, &Error{Code: CodeInvalidRequest, Message: `invalid request: "method" must be a string`}
		}
		m.Method = methodName(w.Method)
		if m.Method == "" {
			return nil, id, &Error{Code: CodeInvalidRequest, Message: `invalid request: "method" must not be empty`}
		}
		if w.Result != nil || w.Error != nil {
			return nil, id, &Error{Code: CodeInvalidRequest, Message: `invalid request: a request must not carry "result" or "error"`}
		}
		params, err := readParams(w.Params)
		if err != nil {
			return nil, id, err
		}
		m.Params = params
		switch {
		case w.ID == nil:
			m.Kind = KindNotification
		case id.IsZero():
			// MCP (basic/index): "the ID MUST NOT be null".
			return nil, nil, &Error{Code: CodeInvalidRequest, Message: `invalid request: "id" must not be null`}
		default:
			m.Kind = KindRequest
		}
		return m, id, nil
	}
	// No method: this must be a response to a server-to-client request.
	if w.ID == nil || (w.Result == nil && w.Error == nil) {
		return nil, id, &Error{Code: CodeInvalidRequest, Message: `invalid request: missing "method"`}
	}
	if w.Result != nil && w.Error != nil {
		return nil, id, &Error{Code: CodeInvalidRequest, Message: `invalid request: a response carries "result" or "error", not both`}
	}
	m.Kind = KindResponse
	if w.Error != nil {
		var e Error
		if err := json.Unmarshal(w.Error, &e); err != nil || e.Message == "" && e.Code == 0 {
			return nil, id, &Error{Code: CodeInvalidRequest, Message: `invalid request: "error" must be an object with "code" and "message"`}
		}
		m.Error = &e
	} else {
		m.Result = w.Result
	}
	return m, id, nil
}

// readID accepts a string or a number. Absent and null give a zero ID; the
// caller decides whether that is allowed.
func readID(raw json.RawMessage) (ID, *Error) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	switch c := raw[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return ID(raw), nil
	}
	return nil, &Error{Code: CodeInvalidRequest, Message: `invalid request: "id" must be a string or a number`}
}

// readParams accepts an object, treats null as absent, and rejects the rest.
// By-position (array) params are valid JSON-RPC but no MCP method takes them.
func readParams(raw json.RawMessage) (json.RawMessage, *Error) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '{':
		return raw, nil
	case '[':
		return nil, &Error{Code: CodeInvalidParams, Message: `invalid params: "params" must be an object; MCP methods take named parameters`}
	}
	return nil, &Error{Code: CodeInvalidRequest, Message: `invalid request: "params" must be an object`}
}

func isString(raw json.RawMessage, want string) bool {
	return len(raw) == len(want)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == want
}

// methodName unquotes a method name, returning the constant for the methods
// this server knows so that dispatch does not allocate.
func methodName(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	switch string(inner) {
	case MethodToolsCall:
		return MethodToolsCall
	case MethodToolsList:
		return MethodToolsList
	case MethodPing:
		return MethodPing
	case MethodInitialize:
		return MethodInitialize
	case NotificationInitialized:
		return NotificationInitialized
	case MethodResourcesRead:
		return MethodResourcesRead
	case NotificationCancelled:
		return NotificationCancelled
	case NotificationProgress:
		return NotificationProgress
	}
	var s string
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(inner)
	}
	return s
}
