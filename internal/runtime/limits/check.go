package limits

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Check walks args, the raw JSON of a tool call's arguments, once and
// returns every violation of the limits, in document order, or nil.
//
// tool selects the array limit (see [Checker.ArrayLimit]). When args is
// longer than MaxRequestBytes, Check returns that one REQUEST_TOO_LARGE
// violation, with path "", and does not walk args: the request is rejected
// whatever else is wrong with it, and walking a huge document would be the
// very cost the limit exists to avoid.
//
// args must be valid JSON (it comes from a request body that was already
// parsed). On other input Check never panics, but what it reports is
// unspecified. It does not allocate unless it finds a violation.
func (k *Checker) Check(tool string, args []byte) []Violation {
	if int64(len(args)) > k.maxBytes {
		return []Violation{{
			Path:    "",
			Code:    CodeRequestTooLarge,
			Message: fmt.Sprintf("arguments are %d bytes, more than the limit of %d bytes", len(args), k.maxBytes),
			Limit:   k.maxBytes,
			Actual:  int64(len(args)),
		}}
	}
	w := walker{
		data:       args,
		arrayLimit: int64(k.ArrayLimit(tool)),
		maxString:  k.maxString,
		maxDepth:   k.maxDepth,
	}
	w.walk()
	return w.out
}

// frame is an open object or array.
type frame struct {
	array bool
	// count is, in an array, the number of elements seen so far; the current
	// element's index is count-1.
	count int64
	// keyStart and keyEnd are, in an object, the raw bytes of the current
	// member's name, between its quotes.
	keyStart, keyEnd int
	// outAt is len(out) when an array opened: where its ARRAY_TOO_LARGE
	// goes, so that it precedes the violations inside it.
	outAt int
}

// walker is the state of one Check. It lives on Check's stack: the frames
// of the open containers, never more than maxObjectDepth, are kept in the
// struct itself up to a depth of 16 (the default limit is 10) and only a
// deeper limit makes them spill into a heap slice.
type walker struct {
	data       []byte
	pos        int
	out        []Violation
	arrayLimit int64
	maxString  int
	maxDepth   int

	depth int       // number of open containers
	low   [16]frame // frames 0-15
	high  []frame   // frames 16 and up
}

// frame returns the i-th open container, counted from the outermost.
func (w *walker) frame(i int) *frame {
	if i < len(w.low) {
		return &w.low[i]
	}
	return &w.high[i-len(w.low)]
}

func (w *walker) push(f frame) {
	switch i := w.depth - len(w.low); {
	case i < 0:
		w.low[w.depth] = f
	case i < len(w.high):
		w.high[i] = f
	default:
		w.high = append(w.high, f)
	}
	w.depth++
}

// walk scans the document. Each turn of the loop follows a complete value
// (or the opening of an empty container): it finds a ',' and starts the next
// element or member, or finds a ']' or '}' and closes the innermost
// container.
func (w *walker) walk() {
	w.skipSpace()
	if !w.value() {
		return
	}
	for {
		w.skipSpace()
		if w.depth == 0 || w.pos >= len(w.data) {
			return
		}
		top := w.frame(w.depth - 1)
		switch w.data[w.pos] {
		case ',':
			w.pos++
			w.skipSpace()
			if top.array {
				top.count++
			} else if !w.member() {
				return
			}
			if !w.value() {
				return
			}
		case ']', '}':
			w.pos++
			w.close()
		default:
			return
		}
	}
}

// value scans the value at pos. A scalar is consumed whole. A container
// nested too deep is reported and skipped whole. Any other container is
// opened, and value goes on into its first element or member, if any, so
// that a nest of containers opens without recursion. value reports false
// on malformed input.
func (w *walker) value() bool {
	for {
		if w.pos >= len(w.data) {
			return false
		}
		switch c := w.data[w.pos]; c {
		case '{', '[':
			if w.depth >= w.maxDepth {
				return w.tooDeep()
			}
			w.pos++
			w.push(frame{array: c == '[', outAt: len(w.out)})
			w.skipSpace()
			if w.pos >= len(w.data) {
				return false
			}
			if d := w.data[w.pos]; d == ']' || d == '}' {
				return true // empty; walk closes it
			}
			if c == '[' {
				w.frame(w.depth - 1).count = 1
			} else if !w.member() {
				return false
			}
		case '"':
			start := w.pos + 1
			end := stringEnd(w.data, start)
			if end < 0 {
				return false
			}
			w.pos = end + 1
			if end-start > w.maxString { // otherwise it cannot decode to more runes
				if n := decodedLen(w.data[start:end]); n > int64(w.maxString) {
					w.add(CodeStringTooLong, w.depth, int64(w.maxString), n,
						fmt.Sprintf("string is %d characters long, more than the limit of %d", n, w.maxString))
				}
			}
			return true
		default:
			start := w.pos
			for w.pos < len(w.data) && !isDelim(w.data[w.pos]) {
				w.pos++
			}
			return w.pos > start
		}
	}
}

// member reads the name of an object member at pos, up to and including
// the ':' and the space after it, and records it in the top frame.
func (w *walker) member() bool {
	if w.pos >= len(w.data) || w.data[w.pos] != '"' {
		return false
	}
	start := w.pos + 1
	end := stringEnd(w.data, start)
	if end < 0 {
		return false
	}
	top := w.frame(w.depth - 1)
	top.keyStart, top.keyEnd = start, end
	w.pos = end + 1
	if end-start > w.maxString {
		if n := decodedLen(w.data[start:end]); n > int64(w.maxString) {
			// Reported at the object: a path ending in the name would
			// repeat the whole oversized name.
			w.add(CodeStringTooLong, w.depth-1, int64(w.maxString), n,
				fmt.Sprintf("object member name is %d characters long, more than the limit of %d", n, w.maxString))
		}
	}
	w.skipSpace()
	if w.pos >= len(w.data) || w.data[w.pos] != ':' {
		return false
	}
	w.pos++
	w.skipSpace()
	return true
}

// close pops the innermost container, whose closing bracket was just read,
// and reports it if it is an array with too many elements.
func (w *walker) close() {
	w.depth--
	f := *w.frame(w.depth)
	if !f.array || f.count <= w.arrayLimit {
		return
	}
	w.add(CodeArrayTooLarge, w.depth, w.arrayLimit, f.count,
		fmt.Sprintf("array has %d elements, more than the limit of %d", f.count, w.arrayLimit))
	// Move it from the end to where the array began, before the
	// violations found inside the array.
	if f.outAt < len(w.out)-1 {
		v := w.out[len(w.out)-1]
		copy(w.out[f.outAt+1:], w.out[f.outAt:len(w.out)-1])
		w.out[f.outAt] = v
	}
}

// tooDeep reports the container at pos, one level deeper than allowed, and
// skips it whole. The actual depth reported is the deepest level reached
// inside it.
func (w *walker) tooDeep() bool {
	deepest, ok := w.skipContainer()
	actual := int64(w.depth + deepest)
	w.add(CodeMaxDepthExceeded, w.depth, int64(w.maxDepth), actual,
		fmt.Sprintf("objects and arrays are nested %d deep, more than the limit of %d", actual, w.maxDepth))
	return ok
}

// skipContainer moves pos past the object or array at pos and returns how
// many levels deep it nests (1 for one without containers inside).
func (w *walker) skipContainer() (deepest int, ok bool) {
	depth := 0
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
			if depth <= 0 {
				w.pos++
				return deepest, true
			}
		case '"':
			end := stringEnd(w.data, w.pos+1)
			if end < 0 {
				w.pos = len(w.data)
				return deepest, false
			}
			w.pos = end
		}
		w.pos++
	}
	return deepest, false
}

func (w *walker) skipSpace() {
	for w.pos < len(w.data) {
		switch w.data[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// add appends a violation about the value whose path is given by the
// first n frames of the stack.
func (w *walker) add(code string, n int, limit, actual int64, msg string) {
	w.out = append(w.out, Violation{
		Path:    w.path(n),
		Code:    code,
		Message: msg,
		Limit:   limit,
		Actual:  actual,
	})
}

// path formats the RFC 6901 JSON Pointer of the current value of frame n-1,
// that is, of a value whose ancestors are the first n frames.
func (w *walker) path(n int) string {
	if n == 0 {
		return ""
	}
	var b []byte
	for i := range n {
		f := w.frame(i)
		b = append(b, '/')
		if f.array {
			b = strconv.AppendInt(b, f.count-1, 10)
		} else {
			b = appendPointerToken(b, w.data[f.keyStart:f.keyEnd])
		}
	}
	return string(b)
}

// appendPointerToken appends the member name whose raw JSON (between the
// quotes) is raw, decoded and then escaped as an RFC 6901 reference token:
// "~" as "~0" and "/" as "~1".
func appendPointerToken(b, raw []byte) []byte {
	name := raw
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		// Decode as encoding/json does, invalid UTF-8 becoming U+FFFD.
		quoted := make([]byte, 0, len(raw)+2)
		quoted = append(append(append(quoted, '"'), raw...), '"')
		var s string
		if json.Unmarshal(quoted, &s) == nil {
			name = []byte(s)
		}
	}
	for _, c := range name {
		switch c {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, c)
		}
	}
	return b
}

// stringEnd returns the index of the quote that closes the JSON string
// whose contents begin at start, or -1 if there is none.
func stringEnd(data []byte, start int) int {
	for i := start; i <= len(data); {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return -1
		}
		q := i + j
		// The quote is escaped if an odd number of backslashes precede it.
		// The run cannot reach back past start: data[start-1] is a quote.
		n := 0
		for p := q - 1; p >= start && data[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
	return -1
}

// decodedLen returns the number of runes in the decoded form of the raw
// contents of a JSON string, counted as encoding/json decodes: a valid
// \uXXXX surrogate pair is one rune, any other escape is one rune, and so
// is each byte of invalid UTF-8 (it becomes U+FFFD).
func decodedLen(raw []byte) int64 {
	var n int64
	for i := 0; i < len(raw); n++ {
		c := raw[i]
		switch {
		case c == '\\':
			if i+1 < len(raw) && raw[i+1] == 'u' {
				r := hex4(raw, i+2)
				i += 6
				if 0xD800 <= r && r < 0xDC00 && i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2 := hex4(raw, i+2); 0xDC00 <= r2 && r2 < 0xE000 {
						i += 6
					}
				}
			} else {
				i += 2
			}
		case c < utf8.RuneSelf:
			i++
		default:
			_, size := utf8.DecodeRune(raw[i:])
			i += size
		}
	}
	return n
}

// hex4 decodes the four hex digits at raw[i:], or returns -1.
func hex4(raw []byte, i int) rune {
	if i+4 > len(raw) {
		return -1
	}
	var r rune
	for _, c := range raw[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// isDelim reports whether c ends a number or a literal.
func isDelim(c byte) bool {
	switch c {
	case ',', ']', '}', ':', '"', '[', '{', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
