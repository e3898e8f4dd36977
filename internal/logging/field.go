package logging

import (
	"strconv"
	"unicode/utf8"
)

// MaxField is the most bytes of a value taken from a request (a method
// name, a JSON-RPC id, a header, a path) that a log line carries. Such a
// value is the caller's to choose, up to the body limit: logged whole,
// one request would write a line of megabytes.
const MaxField = 256

// Field bounds a value taken from a request for a log field: at most
// MaxField bytes of it, cut at a character boundary and followed by a
// marker giving the length of the whole, with control characters and
// invalid UTF-8 escaped (\x1b), so that it cannot forge lines or drive a
// terminal in the console format (the JSON encoder escapes them anyway).
// A short printable value, the usual case, is returned as it is, without
// an allocation.
func Field(s string) string {
	if len(s) <= MaxField && printable(s) {
		return s
	}
	cut := s
	if len(cut) > MaxField {
		n := MaxField
		// Back off to the start of the character the cut would split.
		for i := 1; i < utf8.UTFMax && !utf8.RuneStart(s[n]); i++ {
			n--
		}
		cut = s[:n]
	}
	b := make([]byte, 0, len(cut)+32)
	for i := 0; i < len(cut); {
		r, size := utf8.DecodeRuneInString(cut[i:])
		switch {
		case r == utf8.RuneError && size <= 1, r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
			for _, c := range []byte(cut[i : i+size]) {
				b = append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
			}
		default:
			b = append(b, cut[i:i+size]...)
		}
		i += size
	}
	if len(cut) < len(s) {
		b = append(b, "…("...)
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, " bytes)"...)
	}
	return string(b)
}

const hex = "0123456789abcdef"

// printable reports whether s is free of control characters and of
// bytes that are not ASCII, which Field would have to look at closer.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
