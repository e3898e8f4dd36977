package response

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// emitter copies one JSON value from src to dst in a single pass, applying
// the list and string caps. src must be valid JSON (json.Marshal output, or
// checked with json.Valid): the scanner tracks only strings and nesting.
//
// The output is compact and canonical: strings are written exactly as
// protocol.AppendString writes their decoded value (no HTML escapes,
// \u2028/\u2029 and control characters escaped, invalid UTF-8 and lone
// surrogates replaced by U+FFFD, other \u escapes decoded), so the envelope
// is valid UTF-8 and its size on the wire can be computed exactly.
type emitter struct {
	src       []byte
	dst       []byte
	maxItems  int    // longer arrays become list objects (>= 1)
	maxRunes  int    // longer string values are cut (> runes of suffix)
	keepRunes int    // runes a cut string keeps before the suffix
	suffix    string // ends a cut string
	budget    int    // the pass stops once len(dst) exceeds it
	cut       bool   // a list or string was cut
	over      bool   // dst exceeded budget, or nesting maxDepth: the output is incomplete
	tooDeep   bool   // the output would nest deeper than maxDepth
	depth     int    // nesting of the value being copied
	height    int    // nesting of the value just copied (list objects included)
}

// maxDepth bounds the nesting of the data (or error context), list objects
// included. Deeper JSON breaks common client decoders (Python's recursion
// limit; encoding/json stops at 10000), and no tool result needs it.
const maxDepth = 512

// run copies the value in src (which may be surrounded by white space).
func (e *emitter) run(src []byte) {
	e.src = src
	if i := skipSpace(src, 0); i < len(src) {
		e.value(i)
	}
	if e.height > maxDepth {
		e.over, e.tooDeep = true, true
	}
}

// enter starts an object or array; false when it nests too deep, which
// also bounds the recursion.
func (e *emitter) enter() bool {
	e.depth++
	if e.depth > maxDepth {
		e.over, e.tooDeep = true, true
		return false
	}
	return true
}

// value copies the value starting at src[i] and returns the index past it.
// After e.over the returned index is meaningless and callers unwind.
func (e *emitter) value(i int) int {
	switch e.src[i] {
	case '{':
		i = e.object(i)
	case '[':
		i = e.array(i)
	case '"':
		i = e.string(i, true)
		e.height = 0
	default:
		j := endOfLiteral(e.src, i)
		e.dst = append(e.dst, e.src[i:j]...)
		e.height = 0
		i = j
	}
	if len(e.dst) > e.budget {
		e.over = true
	}
	return i
}

// object copies the object at src[i]; array the array.
func (e *emitter) object(i int) int {
	if !e.enter() {
		return i
	}
	i, h := e.members(i)
	e.depth--
	e.height = h + 1
	return i
}

func (e *emitter) array(i int) int {
	if !e.enter() {
		return i
	}
	i, h := e.elements(i)
	e.depth--
	e.height = h + 1
	return i
}

// members copies an object and returns the index past it and the greatest
// height of its values.
func (e *emitter) members(i int) (int, int) {
	e.dst = append(e.dst, '{')
	i = skipSpace(e.src, i+1)
	h := 0
	if e.src[i] == '}' {
		e.dst = append(e.dst, '}')
		return i + 1, h
	}
	for {
		i = e.string(i, false) // member names are never cut
		if e.over {
			return i, h
		}
		e.dst = append(e.dst, ':')
		i = skipSpace(e.src, skipSpace(e.src, i)+1)
		i = e.value(i)
		if e.over {
			return i, h
		}
		h = max(h, e.height)
		i = skipSpace(e.src, i)
		if e.src[i] == '}' {
			e.dst = append(e.dst, '}')
			return i + 1, h
		}
		e.dst = append(e.dst, ',')
		i = skipSpace(e.src, i+1)
	}
}

// elements copies an array, as a list object when it is too long, and
// returns the index past it and the greatest height of its elements (one
// more for a list object).
func (e *emitter) elements(i int) (int, int) {
	start := len(e.dst)
	e.dst = append(e.dst, '[')
	i = skipSpace(e.src, i+1)
	h := 0
	if e.src[i] == ']' {
		e.dst = append(e.dst, ']')
		return i + 1, h
	}
	for n := 0; ; n++ {
		if n == e.maxItems {
			return e.wrapList(start, i, n), h + 1
		}
		if n > 0 {
			e.dst = append(e.dst, ',')
		}
		i = e.value(i)
		if e.over {
			return i, h
		}
		h = max(h, e.height)
		i = skipSpace(e.src, i)
		if e.src[i] == ']' {
			e.dst = append(e.dst, ']')
			return i + 1, h
		}
		i = skipSpace(e.src, i+1) // past ','
	}
}

// listOpen turns the array written at dst[start:] into a list object.
const listOpen = `{"items":`

// wrapList finishes an array that has more than maxItems elements: the n
// written so far become "items" of a list object, the rest (from src[i])
// are skipped and counted. Returns the index past the array.
func (e *emitter) wrapList(start, i, n int) int {
	e.cut = true
	e.dst = append(e.dst, listOpen...)
	copy(e.dst[start+len(listOpen):], e.dst[start:len(e.dst)-len(listOpen)])
	copy(e.dst[start:], listOpen)
	total := n
	for {
		i = skipSpace(e.src, skipValue(e.src, i))
		total++
		if e.src[i] == ']' {
			break
		}
		i = skipSpace(e.src, i+1)
	}
	e.dst = append(e.dst, `],"total":`...)
	e.dst = strconv.AppendInt(e.dst, int64(total), 10)
	e.dst = append(e.dst, `,"limit":`...)
	e.dst = strconv.AppendInt(e.dst, int64(e.maxItems), 10)
	e.dst = append(e.dst, `,"offset":0,"hasMore":true}`...)
	return i + 1
}

// string copies the string starting at src[i] ('"') and returns the index
// past it. A value (cuttable) of more than maxRunes characters keeps its
// first keepRunes and ends with the suffix, maxRunes characters in all; the
// cut falls between characters, never inside a UTF-8 sequence or an escape.
func (e *emitter) string(i int, cuttable bool) int {
	src := e.src
	e.dst = append(e.dst, '"')
	i++
	n := 0    // characters copied
	mark := 0 // len(dst) when n reached keepRunes
	for {
		c := src[i]
		if c == '"' {
			e.dst = append(e.dst, '"')
			return i + 1
		}
		if cuttable {
			if n == e.keepRunes {
				mark = len(e.dst)
			}
			if n == e.maxRunes { // and another character follows
				e.cut = true
				e.dst = appendStringBody(e.dst[:mark], e.suffix)
				e.dst = append(e.dst, '"')
				return skipString(src, i)
			}
		}
		switch {
		case c >= 0x20 && c < utf8.RuneSelf && c != '\\':
			// A run of plain ASCII, up to the next count that matters.
			end := len(src)
			if cuttable {
				stop := e.maxRunes
				if n < e.keepRunes {
					stop = e.keepRunes
				}
				end = min(end, i+stop-n)
			}
			j := i + 1
			for j < end {
				if b := src[j]; b < 0x20 || b >= utf8.RuneSelf || b == '"' || b == '\\' {
					break
				}
				j++
			}
			e.dst = append(e.dst, src[i:j]...)
			n += j - i
			i = j
		case c == '\\':
			i = e.escape(i)
			n++
		case c < 0x20: // not in valid JSON; written as AppendString would
			e.dst = appendRune(e.dst, rune(c))
			i++
			n++
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				e.dst = append(e.dst, `\ufffd`...)
			} else {
				e.dst = appendRune(e.dst, r)
			}
			i += size
			n++
		}
		if len(e.dst) > e.budget {
			e.over = true
			return i
		}
	}
}

// escape copies the escape sequence at src[i] ('\\') as its canonical form
// and returns the index past it. A surrogate pair is one sequence.
func (e *emitter) escape(i int) int {
	src := e.src
	switch c := src[i+1]; c {
	case '"', '\\', 'n', 'r', 't':
		e.dst = append(e.dst, '\\', c)
	case '/':
		e.dst = append(e.dst, '/')
	case 'b':
		e.dst = append(e.dst, `\u0008`...)
	case 'f':
		e.dst = append(e.dst, `\u000c`...)
	case 'u':
		r := hex4(src[i+2:])
		i += 6
		if utf16.IsSurrogate(r) {
			if r < 0xDC00 && i+6 <= len(src) && src[i] == '\\' && src[i+1] == 'u' {
				if r2 := hex4(src[i+2:]); r2 >= 0xDC00 && r2 <= 0xDFFF {
					e.dst = utf8.AppendRune(e.dst, utf16.DecodeRune(r, r2))
					return i + 6
				}
			}
			r = utf8.RuneError // a lone surrogate, as encoding/json decodes it
		}
		e.dst = appendRune(e.dst, r)
		return i
	default: // not in valid JSON
		e.dst = append(e.dst, `\ufffd`...)
	}
	return i + 2
}

// hexDigits are the digits AppendString writes in \u escapes.
const hexDigits = "0123456789abcdef"

// appendRune appends the valid rune r inside a JSON string, as
// protocol.AppendString writes it.
func appendRune(dst []byte, r rune) []byte {
	switch {
	case r == '"' || r == '\\':
		return append(dst, '\\', byte(r))
	case r == '\n':
		return append(dst, '\\', 'n')
	case r == '\r':
		return append(dst, '\\', 'r')
	case r == '\t':
		return append(dst, '\\', 't')
	case r < 0x20:
		return append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
	case r == '\u2028' || r == '\u2029':
		return append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
	}
	return utf8.AppendRune(dst, r)
}

// appendStringBody appends s escaped as inside a JSON string, without the
// quotes. It reuses protocol.AppendString so the rules cannot drift.
func appendStringBody(dst []byte, s string) []byte {
	at := len(dst)
	dst = protocol.AppendString(dst, s)
	copy(dst[at:], dst[at+1:len(dst)-1])
	return dst[:len(dst)-2]
}

// hex4 decodes the four hex digits at the start of b (valid JSON).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

func skipSpace(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// endOfLiteral returns the index past the number, true, false or null at src[i].
func endOfLiteral(src []byte, i int) int {
	for ; i < len(src); i++ {
		switch src[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}

// skipString returns the index past the closing quote of the string whose
// content continues at src[i], where i is at a character boundary.
func skipString(src []byte, i int) int {
	start := i
	for {
		k := bytes.IndexByte(src[i:], '"')
		if k < 0 {
			return len(src)
		}
		i += k
		// The quote is escaped iff an odd run of backslashes precedes it.
		bs := 0
		for p := i - 1; p >= start && src[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 0 {
			return i + 1
		}
		i++
	}
}

// skipValue returns the index past the value starting at src[i].
func skipValue(src []byte, i int) int {
	switch src[i] {
	case '"':
		return skipString(src, i+1)
	case '{', '[':
		depth := 0
		for j := i; j < len(src); j++ {
			switch src[j] {
			case '"':
				j = skipString(src, j+1) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(src)
	}
	return endOfLiteral(src, i)
}
