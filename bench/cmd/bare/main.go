// Command bare is the floor of the MCP benchmark: a plain net/http +
// encoding/json handler that does the same protocol work as a real MCP
// server for the echo and memory_retrieve tools (decode the JSON-RPC
// request, dispatch, encode the response) and nothing else: no session
// table, no validation beyond what the exchange needs, no streaming. It
// speaks both eras: a request whose _meta names 2026-07-28 is answered
// statelessly, with resultType and serverInfo.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/mcp-runtime/mcp-runtime/bench/internal/benchserver"
	"github.com/mcp-runtime/mcp-runtime/bench/internal/lookup"
)

const (
	latestVersion = "2025-11-25"
	modernVersion = "2026-07-28"
	maxBody       = 4 << 20
)

var serverInfo = map[string]any{"name": "bare", "version": "1.0.0"}

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
	Content           []textContent  `json:"content"`
	StructuredContent any            `json:"structuredContent,omitempty"`
	IsError           bool           `json:"isError,omitempty"`
	ResultType        string         `json:"resultType,omitempty"`
	Meta              map[string]any `json:"_meta,omitempty"`
}

// meta is what the handler reads of a request's params: the era.
type meta struct {
	Meta struct {
		ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
	} `json:"_meta"`
}

// echoTool is the tools/list entry.
const echoTool = `{"name":"echo","description":"Returns the text argument unchanged.",` +
	`"inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}`

const retrieveTool = `{"name":"` + lookup.Tool + `","description":"` + lookup.Description + `","inputSchema":` + lookup.Schema + `}`

func main() {
	benchserver.Main("bare", newHandler())
}

func newHandler() http.Handler {
	cache := lookup.NewCache()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handleMCP(w, r, cache) })
}

func handleMCP(w http.ResponseWriter, r *http.Request, cache *lookup.Cache) {
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
	var m meta
	_ = json.Unmarshal(req.Params, &m)
	modern := m.Meta.ProtocolVersion >= modernVersion
	switch req.Method {
	case "server/discover":
		resp.Result = map[string]any{
			"supportedVersions": []string{latestVersion, modernVersion},
			"capabilities":      map[string]any{"tools": map[string]any{}},
			"resultType":        "complete", "ttlMs": 0, "cacheScope": "public",
			"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": serverInfo},
		}
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
			"serverInfo":      serverInfo,
		}
	case "ping":
		resp.Result = struct{}{}
	case "tools/list":
		resp.Result = map[string]any{"tools": []json.RawMessage{json.RawMessage(echoTool), json.RawMessage(retrieveTool)}}
	case "tools/call":
		var res *callResult
		res, resp.Error = callTool(req.Params, cache)
		if res != nil {
			if modern {
				res.ResultType, res.Meta = "complete", map[string]any{"io.modelcontextprotocol/serverInfo": serverInfo}
			}
			resp.Result = res
		}
	default:
		resp.Error = &rpcError{Code: -32601, Message: "method not found: " + req.Method}
	}
	writeJSON(w, resp)
}

func callTool(params json.RawMessage, cache *lookup.Cache) (*callResult, *rpcError) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Text *string `json:"text"`
			Key  *string `json:"key"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: -32602, Message: "invalid params: " + err.Error()}
	}
	switch p.Name {
	case "echo":
		if p.Arguments.Text == nil {
			return toolError("missing required argument \"text\""), nil
		}
		return &callResult{Content: []textContent{{Type: "text", Text: *p.Arguments.Text}}}, nil
	case lookup.Tool:
		if p.Arguments.Key == nil {
			return toolError("missing required argument \"key\""), nil
		}
		e, ok := cache.Get(*p.Arguments.Key)
		if !ok {
			return toolError("no entry under " + *p.Arguments.Key), nil
		}
		text, err := json.Marshal(e)
		if err != nil {
			return nil, &rpcError{Code: -32603, Message: "encode entry: " + err.Error()}
		}
		return &callResult{Content: []textContent{{Type: "text", Text: string(text)}}, StructuredContent: e}, nil
	}
	return nil, &rpcError{Code: -32602, Message: "unknown tool: " + p.Name}
}

func toolError(text string) *callResult {
	return &callResult{Content: []textContent{{Type: "text", Text: text}}, IsError: true}
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
