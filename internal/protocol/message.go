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

// IntID makes an ID from an integer (server-to-client requests).
func IntID(n int64) ID {
	return ID(appendInt(nil, n))
}

// Message is one decoded JSON-RPC message. Params, Result and Error stay raw.
type Message struct {
	Kind   Kind
	ID     ID
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
}

// wire mirrors the envelope with every member raw, so a member of the wrong
// type is reported by us with the right code instead of by encoding/json.
type wire struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
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
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		// json.Valid passed, so this is unreachable short of a decoder bug;
		// still answer rather than panic.
		return nil, nil, &Error{Code: CodeParseError, Message: "parse error: " + err.Error()}
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
		if err := json.Unmarshal(w.Method, &m.Method); err != nil {
			return nil, id, &Error{Code: CodeInvalidRequest, Message: `invalid request: "method" must be a string`}
		}
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
