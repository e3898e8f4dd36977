package statesync

import (
	"unsafe"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// unsafeView views b as a string without copying, like the protocol
// decoder does for request members.
func unsafeView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func textResult(texts ...string) *protocol.CallToolResult {
	res := &protocol.CallToolResult{}
	for _, s := range texts {
		res.Content = append(res.Content, protocol.TextContent(s))
	}
	return res
}
