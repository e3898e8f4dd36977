package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// A tool may name arguments to mirror into Mcp-Param-{Name} headers with
// x-mcp-header in its inputSchema, so intermediaries can route on them
// without reading the body; a server that reads the body must check the
// headers against it (basic/transports/streamable-http, "Custom Headers
// from Tool Parameters"; server/tools, "x-mcp-header").

// ParamHeader is one argument mirrored into a header.
type ParamHeader struct {
	// Name is the x-mcp-header value: the header is HeaderParamPrefix+Name.
	Name string
	// Path is the chain of properties keys from the schema's root to the
	// argument.
	Path []string
	// Type is the argument's JSON Schema type: string, integer or boolean.
	Type string
}

// maxSafeInteger bounds integers mirrored into headers (IEEE 754 doubles
// hold every integer up to 2^53-1 exactly).
const maxSafeInteger = 1<<53 - 1

// ParamHeaders reads the x-mcp-header annotations of a tool's inputSchema
// (valid JSON). An annotation the specification does not allow — not a
// header token, repeated (case-insensitively), on a type other than
// string, integer or boolean, or not reachable through properties keys
// alone — makes the whole schema invalid: the error says which.
func ParamHeaders(inputSchema json.RawMessage) ([]ParamHeader, error) {
	var root any
	if err := json.Unmarshal(inputSchema, &root); err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	var out []ParamHeader
	if err := collectParamHeaders(root, nil, true, &out); err != nil {
		return nil, err
	}
	seen := make(map[string]string, len(out))
	for _, h := range out {
		key := strings.ToLower(h.Name)
		if other, dup := seen[key]; dup {
			return nil, fmt.Errorf("x-mcp-header %q of property %q repeats that of property %q (names are compared case-insensitively)", h.Name, clip(strings.Join(h.Path, ".")), clip(other))
		}
		seen[key] = strings.Join(h.Path, ".")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// collectParamHeaders walks node; static says it is reached from the
// root through properties keys alone, path is that chain.
func collectParamHeaders(node any, path []string, static bool, out *[]ParamHeader) error {
	switch n := node.(type) {
	case []any:
		for _, v := range n {
			if err := collectParamHeaders(v, path, false, out); err != nil {
				return err
			}
		}
	case map[string]any:
		if v, ok := n["x-mcp-header"]; ok {
			h, err := paramHeader(n, v, path, static)
			if err != nil {
				return err
			}
			*out = append(*out, h)
		}
		for k, v := range n {
			switch k {
			case "properties":
				props, ok := v.(map[string]any)
				if !ok {
					continue
				}
				for name, sub := range props {
					if err := collectParamHeaders(sub, append(path[:len(path):len(path)], name), static, out); err != nil {
						return err
					}
				}
			case "const", "default", "enum", "examples", "x-mcp-header":
				// Instances, not schemas: their members are data.
			default:
				if err := collectParamHeaders(v, path, false, out); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func paramHeader(schema map[string]any, v any, path []string, static bool) (ParamHeader, error) {
	where := "the schema's root"
	if len(path) > 0 {
		where = fmt.Sprintf("property %q", clip(strings.Join(path, ".")))
	}
	name, ok := v.(string)
	if !ok || !isToken(name) {
		return ParamHeader{}, fmt.Errorf("x-mcp-header of %s must be a header name token (letters, digits and !#$%%&'*+-.^_`|~)", where)
	}
	if !static || len(path) == 0 {
		return ParamHeader{}, fmt.Errorf("x-mcp-header %q is not on a property reached through properties keys alone (not through items, oneOf, anyOf, allOf, not, if/then/else or $ref)", clip(name))
	}
	typ, _ := schema["type"].(string)
	switch typ {
	case "string", "integer", "boolean":
	default:
		return ParamHeader{}, fmt.Errorf("x-mcp-header %q is on %s, whose type is not string, integer or boolean", clip(name), where)
	}
	return ParamHeader{Name: name, Path: path, Type: typ}, nil
}

// isToken reports whether s is an HTTP field-name token (RFC 9110 §5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// CheckParamHeaders compares the Mcp-Param-* headers of a tools/call with
// its arguments (valid JSON): an argument present must have its header,
// once, with the same value (integers compared as numbers); an argument
// absent or null must have none. A failure is 400/-32020.
func CheckParamHeaders(specs []ParamHeader, args json.RawMessage, header http.Header) *StatusError {
	mismatch := func(format string, a ...any) *StatusError {
		return statusError(http.StatusBadRequest, CodeHeaderMismatch, "header mismatch: "+format, a...)
	}
	for _, h := range specs {
		hname := HeaderParamPrefix + h.Name
		path := clip(strings.Join(h.Path, "."))
		values := header.Values(hname)
		arg, ambiguous := argumentAt(args, h.Path)
		if ambiguous {
			// A tool decoding names regardless of case (encoding/json
			// into a struct) could read the other spelling.
			return mismatch("the argument %q is given under names that differ only in case", path)
		}
		if arg == nil {
			if len(values) > 0 {
				return mismatch("%s is sent but the argument %q is not", hname, path)
			}
			continue
		}
		if len(values) != 1 {
			return mismatch("the argument %q is sent, so exactly one %s header must be too", path, hname)
		}
		got, err := DecodeHeaderValue(values[0])
		if err != nil {
			return mismatch("%s: %v", hname, err)
		}
		if !sameArgument(h.Type, got, arg) {
			return mismatch("%s %q does not match the argument %q", hname, clip(got), path)
		}
	}
	return nil
}

// argumentAt is the raw value at path in args, nil when absent or null;
// ambiguous when an object on the path has another member whose name
// differs from the path's only in case.
func argumentAt(args json.RawMessage, path []string) (v json.RawMessage, ambiguous bool) {
	v = args
	for _, key := range path {
		if v, ambiguous = exactMember(v, key); ambiguous {
			return nil, true
		}
	}
	if len(v) == 0 || string(v) == "null" {
		return nil, false
	}
	return v, false
}

// sameArgument compares a header's value with the argument's JSON. An
// integer header is a plain decimal, optionally with a zero fraction
// ("42", "-7", "42.0"): other spellings an intermediary would not take
// for the same number ("+42", "042", "4.2e1") are refused.
func sameArgument(typ, header string, arg json.RawMessage) bool {
	switch typ {
	case "string":
		s, ok := StringValue(arg)
		return ok && s == header
	case "boolean":
		return string(arg) == header
	case "integer":
		if !plainInteger(header) {
			return false
		}
		a, err1 := strconv.ParseFloat(string(arg), 64)
		h, err2 := strconv.ParseFloat(header, 64)
		return err1 == nil && err2 == nil && a == h && a == math.Trunc(a) && math.Abs(a) <= maxSafeInteger
	}
	return false
}

// plainInteger reports whether s is -?(0|[1-9][0-9]*)(\.0+)?.
func plainInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	whole, frac, dotted := strings.Cut(s, ".")
	if whole == "" || len(whole) > 1 && whole[0] == '0' || strings.Trim(whole, "0123456789") != "" {
		return false
	}
	return !dotted || frac != "" && strings.Trim(frac, "0") == ""
}
