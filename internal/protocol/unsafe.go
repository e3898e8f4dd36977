package protocol

import "unsafe"

// unsafeString views b as a string without copying. The string is valid
// only while b is neither modified nor reused: request bodies are read into
// a fresh buffer per request and never written to after decoding, and the
// views (member keys, DecodeAny's strings and numbers) live no longer than
// the request.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
