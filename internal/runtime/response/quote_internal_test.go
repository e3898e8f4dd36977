package response

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// quotedLen must agree with protocol.AppendString on any bytes, valid
// UTF-8 or not, since wireSize (INV-MCP-RESP-003) rests on it.
func TestQuotedLenMatchesAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "\"\\\n\r\t\x00\x1f\x7f", "\u2028\u2029\u2027\u202a", "é中😀", "\xff\xe2\x80", "\xe2\x80\xa8\xff", "<>&"} {
		if got, want := quotedLen([]byte(s)), len(protocol.AppendString(nil, s)); got != want {
			t.Errorf("quotedLen(%q) = %d, want %d", s, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOf(rapid.OneOf(rapid.Byte(), rapid.SampledFrom([]byte{'"', '\\', '\n', 0xe2, 0x80, 0xa8, 0xa9}))).Draw(t, "bytes")
		if got, want := quotedLen(b), len(protocol.AppendString(nil, string(b))); got != want {
			t.Fatalf("quotedLen(%q) = %d, want %d", b, got, want)
		}
	})
}
