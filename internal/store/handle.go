package store

import (
	"crypto/sha256"
	"encoding/hex"
)

// A client session id (Mcp-Session-Id) is a bearer credential: whoever
// presents it acts in that client session, and in auth mode none nothing
// else is checked. Traces are shown to every caller of a tenant
// (trace_list, trace_get, trace://), so they keep a handle of the id
// instead: enough to group the calls of one client session, useless as
// a credential.
//
// The handle is unkeyed: "cs." and the first 16 hex digits (64 bits) of
// the SHA-256 of the id. The id is 128 random bits, so the handle cannot
// be turned back into it (a preimage search over 2^128 ids), and being
// unkeyed it is the same on every replica and in SQL (migration 00004
// converts older rows with the same formula), with no secret to
// distribute or rotate. 64 bits keep handles of different client
// sessions apart for any number of sessions a deployment will see. The
// "." is outside the base64url alphabet of our ids and the length
// differs, so a handle is never a well-formed session id: the transport
// refuses it without a lookup.
const (
	clientSessionHandlePrefix = "cs."
	clientSessionHandleHex    = 16
	// ClientSessionHandleLen is the length of every handle.
	ClientSessionHandleLen = len(clientSessionHandlePrefix) + clientSessionHandleHex
)

// ClientSessionHandle returns what a trace keeps of client session id:
// "" for "", a handle unchanged (so applying it twice is harmless), and
// otherwise the handle of id. Both stores apply it to every trace they
// write.
func ClientSessionHandle(id string) string {
	if id == "" || IsClientSessionHandle(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	var b [ClientSessionHandleLen]byte
	copy(b[:], clientSessionHandlePrefix)
	hex.Encode(b[len(clientSessionHandlePrefix):], sum[:clientSessionHandleHex/2])
	return string(b[:])
}

// IsClientSessionHandle reports whether s has the form of a handle:
// "cs." and 16 lowercase hex digits.
func IsClientSessionHandle(s string) bool {
	if len(s) != ClientSessionHandleLen || s[:len(clientSessionHandlePrefix)] != clientSessionHandlePrefix {
		return false
	}
	for _, c := range []byte(s[len(clientSessionHandlePrefix):]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
