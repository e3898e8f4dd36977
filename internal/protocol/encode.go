package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The encoders append to a caller-owned buffer, so a response is built in
// one allocation instead of one per part.

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
	dst = AppendString(dst, e.Message)
	if len(e.Data) > 0 {
		// Compacted, which also validates: invalid data is dropped rather
		// than breaking the message (or the SSE frame carrying it).
		buf := bytes.NewBuffer(append(dst, `,"data":`...))
		if err := json.Compact(buf, e.Data); err == nil {
			dst = buf.Bytes()
		}
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
	dst = AppendString(dst, method)
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

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as encoding/json does
// with HTML escaping off: control characters, quote and backslash escaped,
// invalid UTF-8 replaced by U+FFFD, and U+2028/U+2029 escaped because some
// JavaScript parsers treat them as line ends.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendResponse appends a successful response carrying result, encoded
// by hand for a tools/call result (the hot path) and by encoding/json
// otherwise.
func AppendResponse(dst []byte, id ID, result any) ([]byte, error) {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"result":`...)
	var err error
	if r, ok := result.(*CallToolResult); ok {
		dst, err = AppendToolResult(dst, r)
	} else {
		var b []byte
		b, err = Marshal(result)
		dst = append(dst, b...)
	}
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// AppendToolResult appends the JSON of r. Text blocks without annotations
// are written directly; other blocks go through encoding/json.
func AppendToolResult(dst []byte, r *CallToolResult) ([]byte, error) {
	dst = append(dst, `{"content":[`...)
	for i, b := range r.RawContent {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, b...)
	}
	for i, c := range r.Content {
		if r.RawContent != nil {
			break
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		if c.Type == ContentText && c.Annotations == nil {
			dst = append(dst, `{"type":"text","text":`...)
			dst = AppendString(dst, c.Text)
			dst = append(dst, '}')
			continue
		}
		b, err := Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("encode %s content: %w", c.Type, err)
		}
		dst = append(dst, b...)
	}
	dst = append(dst, ']')
	if len(r.StructuredContent) > 0 {
		if t := bytes.TrimLeft(r.StructuredContent, " \t\r\n"); len(t) == 0 || t[0] != '{' {
			return nil, fmt.Errorf("encode structuredContent: must be a JSON object")
		}
		dst = append(dst, `,"structuredContent":`...)
		if r.StructuredCompact {
			dst = append(dst, r.StructuredContent...)
		} else {
			// Compact validates too: a tool's raw JSON must not break the frame.
			buf := bytes.NewBuffer(dst)
			if err := json.Compact(buf, r.StructuredContent); err != nil {
				return nil, fmt.Errorf("encode structuredContent: %w", err)
			}
			dst = buf.Bytes()
		}
	}
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	if len(r.Meta) > 0 {
		dst = append(dst, `,"_meta":`...)
		dst = append(dst, r.Meta...)
	}
	return append(dst, '}'), nil
}
