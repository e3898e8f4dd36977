package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// errNotObject is returned by eachMember for input that is not an object.
var errNotObject = errors.New("not a JSON object")

// eachMember calls fn with the key and raw value of every member of the
// JSON object data, in order, without copying: key and value alias data.
// data MUST already be valid JSON (json.Valid); the scanner relies on that
// and only tracks strings and nesting. A key containing escapes is unquoted
// (rare; it costs an allocation). fn returning false stops the walk.
func eachMember(data []byte, fn func(key string, value []byte) bool) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return errNotObject
	}
	i++
	for {
		i = skipSpace(data, i)
		if data[i] == '}' {
			return nil
		}
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		kEnd := endOfString(data, i)
		key, err := memberKey(data[i:kEnd])
		if err != nil {
			return err
		}
		i = skipSpace(data, kEnd)
		i = skipSpace(data, i+1) // ':'
		vEnd := endOfValue(data, i)
		if !fn(key, data[i:vEnd]) {
			return nil
		}
		i = vEnd
	}
}

// memberKey returns the key of a quoted member name. Keys without escapes
// (all of MCP's) are viewed in place; the rest are unquoted, outside the
// loop so that the common path does not allocate.
func memberKey(quoted []byte) (string, error) {
	raw := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return unsafeString(raw), nil
	}
	var key string
	if err := json.Unmarshal(quoted, &key); err != nil {
		return "", err
	}
	return key, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// endOfString returns the index just past the string starting at data[i].
func endOfString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// endOfValue returns the index just past the value starting at data[i].
func endOfValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return endOfString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = endOfString(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	}
	for j := i; j < len(data); j++ {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
	}
	return len(data)
}

// EachMember calls fn with the key (unquoted) and raw value of every
// member of the JSON object data, in order; data must be valid JSON. fn
// returning false stops the walk.
func EachMember(data []byte, fn func(key string, value []byte) bool) error {
	return eachMember(data, fn)
}

// LookupMembers finds the raw values of the named members of the JSON
// object data (valid JSON, as after Decode) without decoding the rest:
// dst[i] receives the value of keys[i], or nil when absent. When a key
// repeats, the last occurrence wins, as with encoding/json.
func LookupMembers(data []byte, keys []string, dst []json.RawMessage) error {
	return eachMember(data, func(k string, v []byte) bool {
		for i, want := range keys {
			if k == want {
				dst[i] = v
			}
		}
		return true
	})
}

// errNotArray is returned by EachElement for input that is not an array.
var errNotArray = errors.New("not a JSON array")

// EachElement calls fn with the raw value of every element of the JSON
// array data, in order, without copying; data must be valid JSON. fn
// returning false stops the walk.
func EachElement(data []byte, fn func(value []byte) bool) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return errNotArray
	}
	i++
	for {
		i = skipSpace(data, i)
		if data[i] == ']' {
			return nil
		}
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end := endOfValue(data, i)
		if !fn(data[i:end]) {
			return nil
		}
		i = end
	}
}

// StringValue returns the string a JSON string value holds; ok is false
// for any other value. data must be valid JSON. A string without escapes
// is copied once; one with escapes goes through encoding/json.
func StringValue(data []byte) (s string, ok bool) {
	if len(data) < 2 || data[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(data, '\\') < 0 {
		return string(data[1 : len(data)-1]), true
	}
	if json.Unmarshal(data, &s) != nil {
		return "", false
	}
	return s, true
}

// exactMember returns the value of the member named key of the JSON object
// data (valid JSON; the last one when it repeats), and whether data also
// has a member whose name differs from key only in case — a decoder that
// matches names regardless of case (encoding/json) could read that one
// instead. A data that is not an object has neither.
func exactMember(data []byte, key string) (value []byte, ambiguous bool) {
	if len(data) == 0 || data[0] != '{' {
		return nil, false
	}
	_ = eachMember(data, func(k string, v []byte) bool {
		switch {
		case k == key:
			value = v
		case strings.EqualFold(k, key):
			ambiguous = true
		}
		return true
	})
	return value, ambiguous
}
