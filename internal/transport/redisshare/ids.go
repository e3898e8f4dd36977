package redisshare

// The ids of shared client sessions: those transport.NewSessionID makes,
// and those of sessions created while Redis could not be reached.

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"
)

// sessionIDLen is the length of the ids transport.NewSessionID makes: 16
// bytes in unpadded base64url.
const sessionIDLen = 22

// offlineSessionIDLen is the length of the ids newOfflineSessionID makes:
// 24 bytes, the first four the second it was made.
const offlineSessionIDLen = 32

// newOfflineSessionID returns the id of a shared client session created
// while Redis could not be reached (docs/adr/0047-sessions-created-in-an-outage.md):
// its length tells the other replicas that Redis may not hold it yet, and
// since when, so that they answer 503 rather than 404 until it is written
// back. 160 random bits keep it as unguessable as transport.NewSessionID's
// 128.
func newOfflineSessionID(now time.Time) (string, error) {
	var b [24]byte
	binary.BigEndian.PutUint32(b[:4], uint32(now.Unix()))
	if _, err := rand.Read(b[4:]); err != nil {
		return "", fmt.Errorf("generate client session id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// offlineSince returns when an id of newOfflineSessionID was made; false
// for any other id.
func offlineSince(id string) (time.Time, bool) {
	if len(id) != offlineSessionIDLen {
		return time.Time{}, false
	}
	var b [24]byte
	if n, err := base64.RawURLEncoding.Strict().Decode(b[:], []byte(id)); err != nil || n != len(b) {
		return time.Time{}, false
	}
	return time.Unix(int64(binary.BigEndian.Uint32(b[:4])), 0), true
}

// possibleSessionID reports whether id could have been made by
// transport.NewSessionID or newOfflineSessionID. Any other id names no
// session of ours, in any store, so the shared store answers it 404
// without a Redis lookup: a flood of made-up ids costs nothing and cannot
// make Redis look unavailable to every client
// (docs/adr/0023-get-needs-redis-position.md).
func possibleSessionID(id string) bool {
	if _, ok := offlineSince(id); ok {
		return true
	}
	if len(id) != sessionIDLen {
		return false
	}
	var b [16]byte
	n, err := base64.RawURLEncoding.Strict().Decode(b[:], []byte(id))
	return err == nil && n == len(b)
}
