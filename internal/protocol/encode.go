package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// The encoders append to a caller-owned buffer so the transport can reuse
// one pooled buffer per response instead of allocating per message.

// AppendResult appends {"jsonrpc":"2.0","id":ID,"result":RESULT}. result must
// be valid JSON (nil is written as {}: MCP results are objects).
func AppendResult(dst []byte, id ID, result []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"result":`...)
	if len(result) == 0 {
		result = []byte("{}")
	}
	dst = append(dst, result...)
	return append(dst, '}')
}

// AppendError appends {"jsonrpc":"2.0","id":ID|null,"error":{...}}.
func AppendError(dst []byte, id ID, e *Error) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"error":{"code":`...)
	dst = appendInt(dst, int64(e.Code))
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, e.Message)
	if len(e.Data) > 0 {
		dst = append(dst, `,"data":`...)
		dst = append(dst, e.Data...)
	}
	return append(dst, "}}"...)
}

// AppendRequest appends a request (id set) or a notification (id zero) with
// already-encoded params (nil: no params member).
func AppendRequest(dst []byte, id ID, method string, params []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if !id.IsZero() {
		dst = append(dst, `"id":`...)
		dst = append(dst, id...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"method":`...)
	dst = appendString(dst, method)
	if len(params) > 0 {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

// MarshalNotification encodes a notification with params marshalled by
// encoding/json.
func MarshalNotification(method string, params any) ([]byte, error) {
	var p []byte
	if params != nil {
		var err error
		if p, err = Marshal(params); err != nil {
			return nil, err
		}
	}
	return AppendRequest(nil, nil, method, p), nil
}

// Marshal is json.Marshal without HTML escaping: MCP payloads are not
// embedded in HTML, and escaping <, > and & only makes text harder to read.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encode adds a newline
}

func appendID(dst []byte, id ID) []byte {
	if id.IsZero() {
		return append(dst, "null"...)
	}
	return append(dst, id...)
}

func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// appendString appends s as a JSON string. Error messages are short and
// mostly ASCII, so the common case is a straight copy.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			b, _ := json.Marshal(s) // never fails for a string
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
