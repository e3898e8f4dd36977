package handlers

import (
	"encoding/json"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Outcome is what the request log records of an answered request.
type Outcome struct {
	Tool      string // the canonical name of the tool a tools/call ran; "" otherwise
	ToolError bool   // the tools/call was answered with an isError result
}

// Prepared is a request read once: a tools/call's params are scanned and
// its tool looked up here, so that the transport can ask LongRunning
// before it dispatches and Run does not scan the params again.
type Prepared struct {
	call             bool            // a tools/call
	name, args, meta []byte          // a tools/call's params; name is the raw JSON string
	perr             *protocol.Error // params that are not a tools/call's
	tool             *registeredTool // by exposed or canonical name; nil: unknown, or a bare name
	// bareName and bare: when tool is nil, the name unquoted and the
	// tools whose BareName it is (INV-MCP-ECO-003), looked up here once
	// so that the tool whose Mcp-Param-* headers the transport checks is
	// the tool Run runs, whatever ReplaceGroup does in between.
	bareName string
	bare     []*registeredTool
}

// Prepare reads req for Run, which gets req and the result.
func (s *Server) Prepare(req *Request) Prepared {
	var p Prepared
	if req.Method == protocol.MethodToolsCall {
		p.call = true
		p.name, p.args, p.meta, p.perr = callToolParams(req.Params)
		if p.perr == nil {
			p.tool = s.tools.lookupRaw(p.name)
		}
		if p.perr == nil && p.tool == nil {
			_ = json.Unmarshal(p.name, &p.bareName) // a valid JSON string
			p.bare = s.tools.lookupBare(p.bareName)
		}
	}
	return p
}

// ParamHeaders returns, for a tools/call of a tool whose inputSchema
// mirrors arguments into Mcp-Param-* headers (x-mcp-header), those
// arguments and the call's arguments, for the transport to check its
// headers against (basic/transports/streamable-http); nil otherwise.
//
// A call by a bare name that one tool has is that tool's call; one that
// several have runs none (AMBIGUOUS_TOOL), so has nothing to check.
func (p *Prepared) ParamHeaders() ([]protocol.ParamHeader, []byte) {
	t := p.tool
	if t == nil && len(p.bare) == 1 {
		t = p.bare[0]
	}
	if t == nil || len(t.params) == 0 {
		return nil, nil
	}
	return t.params, p.args
}

// ClientCapabilities returns the client capabilities a tools/call's tool
// needs (Tool.ClientCapabilities); nil for any other request.
func (p *Prepared) ClientCapabilities() []string {
	if p.tool == nil {
		return nil
	}
	return p.tool.ClientCapabilities
}

// LongRunning reports whether the request is a tools/call of a tool
// registered LongRunning (see Tool.LongRunning).
func (p *Prepared) LongRunning() bool { return p.tool != nil && p.tool.LongRunning }

// ToolName is the exposed name of the tool a tools/call names, when this
// server has a tool of that name; "" otherwise. Unlike the name the client
// sent, it is one of a known few, fit for a span's name.
func (p *Prepared) ToolName() string {
	if p.tool == nil {
		return ""
	}
	return p.tool.exposed
}
