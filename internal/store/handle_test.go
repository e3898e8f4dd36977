package store

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
)

// wellFormedSessionID is the transport's test of an Mcp-Session-Id it
// could have made (16 bytes in unpadded base64url): a handle must fail
// it, so that the transport refuses a handle without a lookup.
func wellFormedSessionID(s string) bool {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil && len(b) == 16
}

func TestClientSessionHandle(t *testing.T) {
	seen := make(map[string]string)
	for range 1000 {
		var b [16]byte
		_, _ = rand.Read(b[:])
		id := base64.RawURLEncoding.EncodeToString(b[:])
		h := ClientSessionHandle(id)
		switch {
		case !IsClientSessionHandle(h) || len(h) != ClientSessionHandleLen:
			t.Fatalf("handle %q of %q is not of the handle form", h, id)
		case wellFormedSessionID(h):
			t.Fatalf("handle %q of %q is a well-formed session id", h, id)
		case strings.Contains(h, id[:8]) || strings.Contains(id, h[3:11]):
			t.Fatalf("handle %q shares a run of characters with id %q", h, id)
		case ClientSessionHandle(id) != h:
			t.Fatalf("the handle of %q is not stable", id)
		case ClientSessionHandle(h) != h:
			t.Fatalf("the handle of handle %q is %q, want it unchanged", h, ClientSessionHandle(h))
		case seen[h] != "":
			t.Fatalf("ids %q and %q share handle %q", seen[h], id, h)
		}
		seen[h] = id
	}
	if got := ClientSessionHandle(""); got != "" {
		t.Errorf("handle of no client session = %q, want empty", got)
	}
	for _, s := range []string{"cs.0123456789abcdef0", "cs.0123456789ABCDEF", "cs-0123456789abcdef", "cs.0123456789abcdeg", "xs.0123456789abcdef"} {
		if IsClientSessionHandle(s) {
			t.Errorf("IsClientSessionHandle(%q) = true", s)
		}
	}
}
