// Package echotest checks that a benchmark server implements the echo tool
// the same way as the others, over Streamable HTTP. It is used by tests only.
package echotest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/bench/internal/lookup"
)

// WantSchema is the input schema every benchmark server must advertise.
const WantSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`

type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type client struct {
	t       testing.TB
	url     string
	session string
	version string
	modern  bool   // send the era's Mcp-Method and Mcp-Name headers
	method  string // of the request being posted, for Mcp-Method
	name    string // the tool called, for Mcp-Name
}

func (c *client) post(body string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	if c.modern {
		req.Header.Set("Mcp-Method", c.method)
		if c.method == "tools/call" {
			req.Header.Set("Mcp-Name", c.name)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("POST %s: %v", body, err)
	}
	return resp
}

// call sends a request and returns the result of the response with id.
func (c *client) call(id int, method, params string) (json.RawMessage, http.Header) {
	c.t.Helper()
	c.method = method
	resp := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		c.t.Fatalf("%s: Content-Type: %v", method, err)
	}
	var candidates [][]byte
	switch mt {
	case "application/json":
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			c.t.Fatalf("%s: read body: %v", method, err)
		}
		candidates = append(candidates, b)
	case "text/event-stream":
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
				candidates = append(candidates, bytes.Clone(bytes.TrimSpace(d)))
			}
		}
	default:
		c.t.Fatalf("%s: unexpected Content-Type %q", method, mt)
	}
	for _, b := range candidates {
		var m message
		if json.Unmarshal(b, &m) == nil && m.Method == "" && string(m.ID) == fmt.Sprint(id) {
			if len(m.Error) > 0 {
				c.t.Fatalf("%s: JSON-RPC error %s", method, m.Error)
			}
			return m.Result, resp.Header
		}
	}
	c.t.Fatalf("%s: no response with id %d in %q", method, id, candidates)
	return nil, nil
}

// Check runs initialize, notifications/initialized, tools/list, tools/call
// of echo and memory_retrieve, and DELETE against h.
func Check(t testing.TB, h http.Handler) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := &client{t: t, url: srv.URL}

	res, hdr := c.call(1, "initialize",
		`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"echotest","version":"0"}}`)
	var init struct {
		ProtocolVersion string         `json:"protocolVersion"`
		Capabilities    map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal(res, &init); err != nil {
		t.Fatalf("initialize result %s: %v", res, err)
	}
	if init.ProtocolVersion != "2025-11-25" || init.Capabilities["tools"] == nil {
		t.Fatalf("initialize result %s", res)
	}
	c.session, c.version = hdr.Get("Mcp-Session-Id"), init.ProtocolVersion
	if c.session == "" {
		t.Fatal("no Mcp-Session-Id")
	}

	resp := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", resp.StatusCode)
	}

	res, _ = c.call(2, "tools/list", `{}`)
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res, &list); err != nil || len(list.Tools) != 2 {
		t.Fatalf("tools/list result %s (%v)", res, err)
	}
	schemas := map[string]string{"echo": WantSchema, lookup.Tool: lookup.Schema}
	for _, tool := range list.Tools {
		var got, want any
		_ = json.Unmarshal(tool.InputSchema, &got)
		_ = json.Unmarshal([]byte(schemas[tool.Name]), &want)
		if want == nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s inputSchema = %s, want %s", tool.Name, tool.InputSchema, schemas[tool.Name])
		}
	}

	res, _ = c.call(3, "tools/call", `{"name":"echo","arguments":{"text":"hello \"world\""}}`)
	var call struct {
		Content []map[string]any `json:"content"`
		IsError bool             `json:"isError"`
	}
	if err := json.Unmarshal(res, &call); err != nil {
		t.Fatalf("tools/call result %s: %v", res, err)
	}
	if call.IsError || len(call.Content) != 1 || call.Content[0]["type"] != "text" || call.Content[0]["text"] != `hello "world"` {
		t.Errorf("tools/call result %s", res)
	}

	res, _ = c.call(4, "tools/call", `{"name":"`+lookup.Tool+`","arguments":{"key":"`+lookup.Key+`"}}`)
	checkEntry(t, res)

	req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("Mcp-Protocol-Version", c.version)
	dresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("DELETE: %v", err)
	}
	dresp.Body.Close()
	if dresp.StatusCode/100 != 2 {
		t.Errorf("DELETE: status %d", dresp.StatusCode)
	}
}

// checkEntry checks a memory_retrieve result: the seeded entry, as
// structuredContent and as the JSON of its one text block.
func checkEntry(t testing.TB, res json.RawMessage) {
	t.Helper()
	var call struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(res, &call); err != nil {
		t.Fatalf("memory_retrieve result %s: %v", res, err)
	}
	want, _ := lookup.NewCache().Get(lookup.Key)
	var structured, text lookup.Entry
	if call.IsError || len(call.Content) != 1 || call.Content[0].Type != "text" ||
		json.Unmarshal(call.StructuredContent, &structured) != nil || json.Unmarshal([]byte(call.Content[0].Text), &text) != nil {
		t.Fatalf("memory_retrieve result %s", res)
	}
	// Numbers in the value decode as float64 from JSON.
	want.Value = map[string]any{"n": float64(1), "text": "hello"}
	if !reflect.DeepEqual(structured, want) || !reflect.DeepEqual(text, want) {
		t.Errorf("memory_retrieve result %s, want the entry %+v", res, want)
	}
}

// CheckModern runs server/discover and tools/call of memory_retrieve in
// the 2026-07-28 era (no session; _meta and the era's headers on each
// request) against h.
func CheckModern(t testing.TB, h http.Handler) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := &client{t: t, url: srv.URL, version: ModernVersion, modern: true}
	res, _ := c.call(1, "server/discover", `{"_meta":`+ModernMeta+`}`)
	var disc struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err := json.Unmarshal(res, &disc); err != nil || !slices.Contains(disc.SupportedVersions, ModernVersion) {
		t.Fatalf("server/discover result %s (%v)", res, err)
	}
	c.name = lookup.Tool
	res, _ = c.call(2, "tools/call", `{"name":"`+lookup.Tool+`","arguments":{"key":"`+lookup.Key+`"},"_meta":`+ModernMeta+`}`)
	var rt struct {
		ResultType string `json:"resultType"`
	}
	if err := json.Unmarshal(res, &rt); err != nil || rt.ResultType != "complete" {
		t.Errorf("modern tools/call result %s: want resultType complete", res)
	}
	checkEntry(t, res)
}

// ModernVersion is the protocol revision of the stateless era, and
// ModernMeta the _meta its requests carry.
const (
	ModernVersion = "2026-07-28"
	ModernMeta    = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"echotest","version":"0"}}`
)
