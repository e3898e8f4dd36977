package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// CanonicalName is the name mcp-runtime offers an upstream tool under:
// serverID + "." + toolName, so that two servers' "search" tools never
// collide (INV-MCP-ECO-003). Characters of the tool name outside
// [A-Za-z0-9_.-] become '_' and empty '.'-separated segments become '_'.
// Because that mapping is lossy ("a b" and "a/b" would both become "a_b"),
// whenever anything was replaced an 8-hex-digit suffix of the original
// name's SHA-256 is appended: two different upstream names never map to
// the same canonical name, and the suffix is stable across restarts.
func CanonicalName(serverID, toolName string) string {
	var b strings.Builder
	b.Grow(len(serverID) + 1 + len(toolName) + 9)
	b.WriteString(serverID)
	b.WriteByte('.')
	replaced := false
	segStart := true // at the start of a '.'-separated segment
	for _, r := range toolName {
		switch {
		case r == '.':
			if segStart {
				b.WriteByte('_')
				replaced = true
			}
			b.WriteByte('.')
			segStart = true
			continue
		case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
			replaced = true
		}
		segStart = false
	}
	if segStart { // empty name, or a trailing '.'
		b.WriteByte('_')
		replaced = true
	}
	if replaced {
		sum := sha256.Sum256([]byte(toolName))
		b.WriteByte('_')
		b.WriteString(hex.EncodeToString(sum[:4]))
	}
	return b.String()
}
