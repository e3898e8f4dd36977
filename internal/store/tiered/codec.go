package tiered

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// entity is what the cache holds.
type entity interface {
	store.MemoryEntry | store.Session | store.Agent
}

// meta returns what the tiers need to know about a value: the version
// that orders writes (agents are immutable between register and remove:
// 0) and when it expires (nil: never).
func meta[T entity](v *T) (version int64, expires *time.Time) {
	switch x := any(v).(type) {
	case *store.MemoryEntry:
		return x.Version, x.ExpiresAt
	case *store.Session:
		return x.Version, nil
	}
	return 0, nil
}

// lifetime is how long a value may stay in a tier whose own limit is max
// (0: no limit): the shorter of max and what is left of the value's life.
// ok is false when the value has expired and must not be cached at all.
func lifetime(expires *time.Time, max time.Duration, now time.Time) (ttl time.Duration, ok bool) {
	if expires == nil {
		return max, true
	}
	left := expires.Sub(now)
	if left <= 0 {
		return 0, false
	}
	if max == 0 || left < max {
		return left, true
	}
	return max, true
}

// expired reports whether a cached value's life is over.
func expired(expires *time.Time, now time.Time) bool {
	return expires != nil && !now.Before(*expires)
}

// jsonLen is the length of v's JSON document (a value or metadata), a
// lower bound of its tier-2 form's.
func jsonLen[T entity](v *T) int {
	switch x := any(v).(type) {
	case *store.MemoryEntry:
		return len(x.Value)
	case *store.Session:
		return len(x.Metadata)
	case *store.Agent:
		return len(x.Metadata)
	}
	return 0
}

// Tier-2 values: "V<version>:<json>", or tombstone.
const tombstone = "T"

// encodeValue is v's tier-2 form. The version is in front, outside the
// JSON, so that the write script can compare versions without decoding.
func encodeValue[T entity](v *T) (string, error) {
	version, _ := meta(v)
	body, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	buf := make([]byte, 0, len(body)+22)
	buf = append(buf, 'V')
	buf = strconv.AppendInt(buf, version, 10)
	buf = append(buf, ':')
	buf = append(buf, body...)
	return string(buf), nil
}

// decodeValue parses a tier-2 value; ok is false for a tombstone or for
// anything this version of the server did not write.
func decodeValue[T entity](raw string) (v T, ok bool) {
	rest, found := strings.CutPrefix(raw, "V")
	if !found {
		return v, false
	}
	_, body, found := strings.Cut(rest, ":")
	if !found {
		return v, false
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return v, false
	}
	return v, true
}

// itemOverhead is a tier-1 entry's cost beyond its strings and slices: the
// cache's node and map slot, the item, and the value struct.
const itemOverhead = 512

// sizeOf estimates the memory a cached value holds on to, for the tier-1
// byte bound: the fixed overhead plus every string and slice it reaches.
func sizeOf[T entity](k ckey, v *T) int64 {
	n := itemOverhead + len(k.tenant) + len(k.a) + len(k.b)
	strs := func(ss []string) {
		for _, s := range ss {
			n += 16 + len(s)
		}
	}
	switch x := any(v).(type) {
	case *store.MemoryEntry:
		n += len(x.Namespace) + len(x.Key) + cap(x.Value)
		strs(x.Tags)
	case *store.Session:
		n += len(x.ID) + len(x.Task) + len(x.Initiator) + len(x.Status) + cap(x.Metadata) + len(x.Summary)
		for _, p := range x.Participants {
			n += 64 + len(p.AgentID) + len(p.Role)
		}
		if x.Error != nil {
			n += 32 + len(x.Error.Code) + len(x.Error.Message)
		}
	case *store.Agent:
		n += len(x.ID) + len(x.Description) + len(x.DisplayName) + cap(x.Metadata)
		strs(x.Capabilities)
		strs(x.Tags)
	}
	return int64(n)
}
