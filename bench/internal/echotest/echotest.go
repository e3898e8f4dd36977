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
	"strings"
	"testing"
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
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("POST %s: %v", body, err)
	}
	return resp
}

// call sends a request and returns the result of the response with id.
func (c *client) call(id int, method, params string) (json.RawMessage, http.Header) {
	c.t.Helper()
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
// echo and DELETE against h.
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
	if err := json.Unmarshal(res, &list); err != nil || len(list.Tools) != 1 || list.Tools[0].Name != "echo" {
		t.Fatalf("tools/list result %s (%v)", res, err)
	}
	var got, want any
	_ = json.Unmarshal(list.Tools[0].InputSchema, &got)
	_ = json.Unmarshal([]byte(WantSchema), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("echo inputSchema = %s, want %s", list.Tools[0].InputSchema, WantSchema)
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
