// Command bare is the floor of the MCP benchmark: a plain net/http +
// encoding/json handler that does the same protocol work as a real MCP
// server for the echo tool (decode the JSON-RPC request, dispatch, encode the
// response) and nothing else: no session table, no validation beyond what
// the exchange needs, no streaming.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/mcp-runtime/mcp-runtime/bench/internal/benchserver"
)

const (
	latestVersion = "2025-11-25"
	maxBody       = 4 << 20
)

// supported reports whether initialize accepts a protocol revision as-is.
func supported(version string) bool {
	switch version {
	case "2025-03-26", "2025-06-18", "2025-11-25":
		return true
	}
	return false
}

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type callResult struct {
	Content []textContent `json:"content"`
	IsError bool          `json:"isError,omitempty"`
}

// echoTool is the tools/list entry.
const echoTool = `{"name":"echo","description":"Returns the text argument unchanged.",` +
	`"inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}`

func main() {
	benchserver.Main("bare", http.HandlerFunc(handleMCP))
}

func handleMCP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
		return
	default:
		w.Header().Set("Allow", "POST, DELETE")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var req request
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&req); err != nil {
		writeJSON(w, response{JSONRPC: "2.0", ID: json.RawMessage("null"),
			Error: &rpcError{Code: -32700, Message: "parse error: " + err.Error()}})
		return
	}
	if len(req.ID) == 0 {
		// Notification (notifications/initialized and the like).
		w.WriteHeader(http.StatusAccepted)
		return
	}
	resp := response{JSONRPC: "2.0", ID: req.ID}
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		version := latestVersion
		if supported(p.ProtocolVersion) {
			version = p.ProtocolVersion
		}
		id, err := newSessionID()
		if err != nil {
			resp.Error = &rpcError{Code: -32603, Message: err.Error()}
			break
		}
		w.Header().Set("Mcp-Session-Id", id)
		resp.Result = map[string]any{
			"protocolVersion": version,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "bare", "version": "1.0.0"},
		}
	case "ping":
		resp.Result = struct{}{}
	case "tools/list":
		resp.Result = map[string]any{"tools": []json.RawMessage{json.RawMessage(echoTool)}}
	case "tools/call":
		resp.Result, resp.Error = callTool(req.Params)
	default:
		resp.Error = &rpcError{Code: -32601, Message: "method not found: " + req.Method}
	}
	writeJSON(w, resp)
}

func callTool(params json.RawMessage) (any, *rpcError) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Text *string `json:"text"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: -32602, Message: "invalid params: " + err.Error()}
	}
	if p.Name != "echo" {
		return nil, &rpcError{Code: -32602, Message: "unknown tool: " + p.Name}
	}
	if p.Arguments.Text == nil {
		return callResult{Content: []textContent{{Type: "text", Text: "missing required argument \"text\""}}, IsError: true}, nil
	}
	return callResult{Content: []textContent{{Type: "text", Text: *p.Arguments.Text}}}, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func newSessionID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("session id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
