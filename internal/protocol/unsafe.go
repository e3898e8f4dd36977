package protocol

import "unsafe"

// unsafeString views b as a string without copying. Only for keys that are
// compared and dropped while b is alive, never stored.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
