package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
)

// DecodeAny decodes valid JSON into the generic form JSON Schema
// validators take: map[string]any, []any, string, json.Number, bool, nil.
// It matches json.Decoder with UseNumber, but strings without escapes and
// numbers alias data instead of being copied, so the result must not
// outlive data. It exists because argument validation runs on every
// tools/call and the reflection-based decoder dominates its cost.
func DecodeAny(data []byte) (any, error) {
	if !json.Valid(data) {
		return nil, errors.New("not valid JSON")
	}
	v, _ := decodeValue(data, skipSpace(data, 0))
	return v, nil
}

// decodeValue decodes the value at data[i] (valid JSON) and returns it with
// the index just past it.
func decodeValue(data []byte, i int) (any, int) {
	switch c := data[i]; {
	case c == '{':
		m := map[string]any{}
		i = skipSpace(data, i+1)
		for data[i] != '}' {
			if data[i] == ',' {
				i = skipSpace(data, i+1)
			}
			kEnd := endOfString(data, i)
			k := stringValue(data[i:kEnd])
			i = skipSpace(data, kEnd)
			var v any
			v, i = decodeValue(data, skipSpace(data, i+1))
			m[k] = v
			i = skipSpace(data, i)
		}
		return m, i + 1
	case c == '[':
		a := []any{}
		i = skipSpace(data, i+1)
		for data[i] != ']' {
			if data[i] == ',' {
				i = skipSpace(data, i+1)
			}
			var v any
			v, i = decodeValue(data, i)
			a = append(a, v)
			i = skipSpace(data, i)
		}
		return a, i + 1
	case c == '"':
		end := endOfString(data, i)
		return stringValue(data[i:end]), end
	case c == 't':
		return true, i + 4
	case c == 'f':
		return false, i + 5
	case c == 'n':
		return nil, i + 4
	}
	end := endOfValue(data, i)
	return json.Number(unsafeString(data[i:end])), end
}

// stringValue unquotes a JSON string, aliasing it when it has no escapes.
func stringValue(quoted []byte) string {
	raw := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return unsafeString(raw)
	}
	var s string
	_ = json.Unmarshal(quoted, &s) // valid JSON: cannot fail
	return s
}
