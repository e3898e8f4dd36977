package protocol_test

import (
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

var toolsCallRequest = []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"memory_store","arguments":{"namespace":"default","key":"user:123:prefs","value":{"theme":"dark","lang":"en"}},"_meta":{"progressToken":"p-42"}}}`)

func BenchmarkDecode(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(toolsCallRequest)))
	for b.Loop() {
		msg, _, perr := protocol.Decode(toolsCallRequest)
		if perr != nil || msg.Kind != protocol.KindRequest {
			b.Fatal(perr)
		}
	}
}

func BenchmarkAppendResult(b *testing.B) {
	result := []byte(`{"content":[{"type":"text","text":"{\"success\":true,\"data\":{\"stored\":true}}"}],"structuredContent":{"success":true,"data":{"stored":true}}}`)
	id := protocol.ID(`42`)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	b.SetBytes(int64(len(result)))
	for b.Loop() {
		buf = protocol.AppendResult(buf[:0], id, result)
	}
	if len(buf) == 0 {
		b.Fatal("empty")
	}
}

// modernCallParams are the params of a tools/call of the 2026-07-28 era
// as the go-sdk and TypeScript clients send them: the arguments, then a
// _meta with the client's version, capabilities and info.
var modernCallParams = []byte(`{"name":"memory_store","arguments":{"namespace":"default","key":"user:123:prefs","value":{"theme":"dark","lang":"en","note":"a longer string value, as a model writes one, of some eighty bytes or so"}},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{"form":{}},"roots":{"listChanged":true}},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"2.1.0"}}}`)

// BenchmarkScanModern is the one walk a request's classification and the
// modern era's checks make over its params.
func BenchmarkScanModern(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(modernCallParams)))
	for b.Loop() {
		if !protocol.ScanModern("tools/call", modernCallParams).Modern() {
			b.Fatal("not modern")
		}
	}
}
