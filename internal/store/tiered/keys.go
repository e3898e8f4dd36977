package tiered

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Kinds of cached entity; the first byte of every key.
const (
	kindMemory  = 'm'
	kindSession = 's'
	kindAgent   = 'a'
)

// ckey is a tier-1 key: comparable, so building one for a lookup does not
// allocate. a and b are namespace and key for memory, the id (and "") for
// sessions and agents.
type ckey struct {
	kind   byte
	tenant string
	a, b   string
}

func memKey(tenant, namespace, key string) ckey {
	return ckey{kind: kindMemory, tenant: tenant, a: namespace, b: key}
}
func sessionKey(tenant, id string) ckey { return ckey{kind: kindSession, tenant: tenant, a: id} }
func agentKey(tenant, id string) ckey   { return ckey{kind: kindAgent, tenant: tenant, a: id} }

// redisKey is k's tier-2 key: prefix, kind, then each part base64url
// encoded. The encoding's alphabet has no ':', so parts cannot run into
// each other whatever bytes a tenant or key holds.
func redisKey(prefix string, k ckey) string {
	enc := base64.RawURLEncoding
	n := len(prefix) + 2 + enc.EncodedLen(len(k.tenant)) + 1 + enc.EncodedLen(len(k.a))
	if k.kind == kindMemory {
		n += 1 + enc.EncodedLen(len(k.b))
	}
	buf := make([]byte, 0, n)
	buf = append(buf, prefix...)
	buf = append(buf, k.kind, ':')
	buf = enc.AppendEncode(buf, []byte(k.tenant))
	buf = append(buf, ':')
	buf = enc.AppendEncode(buf, []byte(k.a))
	if k.kind == kindMemory {
		buf = append(buf, ':')
		buf = enc.AppendEncode(buf, []byte(k.b))
	}
	return string(buf)
}

// Invalidation messages are compact JSON arrays: ["m",tenant,ns,key],
// ["s",tenant,id], ["a",tenant,id], or ["*"] for "drop all of tier 1".
// JSON rather than a delimited string, so that no byte in a tenant or key
// can be mistaken for a separator.
const flushMessage = `["*"]`

func encodeMessage(k ckey) string {
	parts := []string{string(rune(k.kind)), k.tenant, k.a}
	if k.kind == kindMemory {
		parts = append(parts, k.b)
	}
	b, _ := json.Marshal(parts) // strings always marshal
	return string(b)
}

// decodeMessage parses a message; flush reports ["*"].
func decodeMessage(msg string) (k ckey, flush bool, err error) {
	var parts []string
	if err := json.Unmarshal([]byte(msg), &parts); err != nil {
		return ckey{}, false, fmt.Errorf("invalidation message %.64q: %w", msg, err)
	}
	switch {
	case len(parts) == 1 && parts[0] == "*":
		return ckey{}, true, nil
	case len(parts) == 4 && parts[0] == string(rune(kindMemory)):
		return memKey(parts[1], parts[2], parts[3]), false, nil
	case len(parts) == 3 && parts[0] == string(rune(kindSession)):
		return sessionKey(parts[1], parts[2]), false, nil
	case len(parts) == 3 && parts[0] == string(rune(kindAgent)):
		return agentKey(parts[1], parts[2]), false, nil
	}
	return ckey{}, false, fmt.Errorf("invalidation message %.64q: not a key this server sends", msg)
}
