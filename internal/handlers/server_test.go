package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

func TestHandleDispatch(t *testing.T) {
	e := newEnv(t, echoTool("text.echo"))
	t.Run("ping", func(t *testing.T) {
		if raw := e.ok(t, protocol.MethodPing, ""); string(raw) != "{}" {
			t.Fatalf("ping = %s", raw)
		}
	})
	for _, method := range []string{"foo/bar", "", "tools/List", "tools/call ", "notifications/initialized", "sampling/createMessage", "resources/templates"} {
		t.Run("unknown "+method, func(t *testing.T) {
			perr := e.fails(t, protocol.CodeMethodNotFound, method, "{}")
			if method != "" && !strings.Contains(perr.Message, method) {
				t.Errorf("message %q does not name the method", perr.Message)
			}
		})
	}
	t.Run("initialize after initialization", func(t *testing.T) {
		e.fails(t, protocol.CodeInvalidRequest, protocol.MethodInitialize, `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)
	})
}

// TestServerSurvivesBadRequests: after any number of invalid requests the
// server still answers (error-stability.md).
func TestServerSurvivesBadRequests(t *testing.T) {
	e := newEnv(t, echoTool("text.echo"))
	bad := []struct {
		method, params string
		code           int
	}{
		{"nope", "{}", protocol.CodeMethodNotFound},
		{protocol.MethodToolsCall, `{"name":"missing"}`, protocol.CodeInvalidParams},
		{protocol.MethodToolsCall, `{"name":7}`, protocol.CodeInvalidParams},
		{protocol.MethodToolsList, `{"cursor":"x"}`, protocol.CodeInvalidParams},
		{protocol.MethodResourcesRead, `{"uri":"x://y"}`, protocol.CodeResourceNotFound},
		{protocol.MethodPromptsGet, `{"name":"x"}`, protocol.CodeInvalidParams},
		{protocol.MethodLoggingSetLevel, `{"level":"loud"}`, protocol.CodeInvalidParams},
		{protocol.MethodCompletionComplete, `{"ref":{"type":"x"}}`, protocol.CodeInvalidParams},
	}
	for i := range 1000 {
		b := bad[i%len(bad)]
		_, res, err := e.handle(b.method, b.params)
		wantProtocolError(t, res, err, b.code)
	}
	_, r, _ := callResult(t, e, `{"name":"text_echo","arguments":{"text":"still here"}}`)
	if resultText(t, r) != "still here" {
		t.Fatalf("result = %+v", r)
	}
	if res := unmarshal[protocol.ListToolsResult](t, e.ok(t, protocol.MethodToolsList, "")); len(res.Tools) != 1 {
		t.Fatalf("tools/list = %+v", res)
	}
}

func TestSetLevel(t *testing.T) {
	e := newEnv(t)
	for _, l := range []protocol.LoggingLevel{protocol.LevelDebug, protocol.LevelEmergency, protocol.LevelNotice} {
		if raw := e.ok(t, protocol.MethodLoggingSetLevel, `{"level":"`+string(l)+`"}`); string(raw) != "{}" {
			t.Errorf("setLevel %s = %s", l, raw)
		}
		if got := e.sess.LogLevel(); got != l {
			t.Errorf("session level = %q, want %q", got, l)
		}
	}
	for _, params := range []string{`{"level":"verbose"}`, `{"level":"DEBUG"}`, `{"level":""}`, `{}`, ``, `{"level":3}`} {
		t.Run(params, func(t *testing.T) {
			e.fails(t, protocol.CodeInvalidParams, protocol.MethodLoggingSetLevel, params)
			if got := e.sess.LogLevel(); got != protocol.LevelNotice {
				t.Errorf("session level changed to %q", got)
			}
		})
	}
}

const initParams = `{"protocolVersion":%q,"capabilities":{"roots":{"listChanged":true},"sampling":{}},"clientInfo":{"name":"claude","version":"1.2"}}`

func TestInitializeVersion(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ requested, want string }{
		{protocol.Version20251125, protocol.Version20251125},
		{protocol.Version20250618, protocol.Version20250618},
		{protocol.Version20250326, protocol.Version20250326},
		{"2024-11-05", protocol.LatestVersion},
		{"2099-01-01", protocol.LatestVersion},
		{"banana", protocol.LatestVersion},
	} {
		t.Run(tc.requested, func(t *testing.T) {
			p, res, perr := e.s.Initialize(json.RawMessage(fmt.Sprintf(initParams, tc.requested)))
			if perr != nil {
				t.Fatal(perr)
			}
			if res.ProtocolVersion != tc.want {
				t.Errorf("negotiated %q, want %q", res.ProtocolVersion, tc.want)
			}
			if p.ProtocolVersion != tc.requested || p.ClientInfo.Name != "claude" || p.ClientInfo.Version != "1.2" ||
				p.Capabilities.Roots == nil || !p.Capabilities.Roots.ListChanged || string(p.Capabilities.Sampling) != "{}" {
				t.Errorf("params = %+v", p)
			}
			if res.ServerInfo != (protocol.Implementation{Name: "test-server", Title: "Test", Version: "0.1.0"}) || res.Instructions != "be nice" {
				t.Errorf("serverInfo %+v instructions %q", res.ServerInfo, res.Instructions)
			}
		})
	}
	for _, params := range []string{``, `{}`, `{"protocolVersion":""}`, `{"protocolVersion":20251125}`, `{"capabilities":{},"clientInfo":{"name":"c","version":"1"}}`, `{"protocolVersion":"2025-11-25","clientInfo":"c"}`} {
		t.Run("bad "+params, func(t *testing.T) {
			p, res, perr := e.s.Initialize(json.RawMessage(params))
			if perr == nil || perr.Code != protocol.CodeInvalidParams || perr.Message == "" {
				t.Fatalf("Initialize(%s) = %+v, %+v, %v; want -32602", params, p, res, perr)
			}
		})
	}
}

func capabilitiesJSON(t *testing.T, s *Server) map[string]json.RawMessage {
	t.Helper()
	_, res, perr := s.Initialize(json.RawMessage(fmt.Sprintf(initParams, protocol.LatestVersion)))
	if perr != nil {
		t.Fatal(perr)
	}
	b, err := protocol.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return members(t, members(t, b)["capabilities"])
}

func TestInitializeCapabilities(t *testing.T) {
	get := func(context.Context, Session, map[string]string) (*protocol.GetPromptResult, error) {
		return &protocol.GetPromptResult{}, nil
	}
	complete := func(context.Context, Session, string, string) ([]string, error) { return nil, nil }
	read := func(context.Context, Session, string, map[string]string) ([]protocol.ResourceContents, error) {
		return nil, nil
	}
	tests := []struct {
		name            string
		setup           func(t *testing.T, s *Server)
		wantPrompts     bool
		wantCompletions bool
	}{
		{"tools only", func(*testing.T, *Server) {}, false, false},
		{"prompt without Complete", func(t *testing.T, s *Server) {
			if err := s.AddPrompt(plainPrompt("p", get)); err != nil {
				t.Fatal(err)
			}
		}, true, false},
		{"prompt with Complete", func(t *testing.T, s *Server) {
			p := plainPrompt("p", get)
			p.Complete = complete
			if err := s.AddPrompt(p); err != nil {
				t.Fatal(err)
			}
		}, true, true},
		{"template with Complete", func(t *testing.T, s *Server) {
			if err := s.AddResourceTemplate(ResourceTemplate{
				ResourceTemplate: protocol.ResourceTemplate{URITemplate: "x://{id}", Name: "x"}, Read: read, Complete: complete,
			}); err != nil {
				t.Fatal(err)
			}
		}, false, true},
		{"template without Complete", func(t *testing.T, s *Server) {
			if err := s.AddResourceTemplate(ResourceTemplate{
				ResourceTemplate: protocol.ResourceTemplate{URITemplate: "x://{id}", Name: "x"}, Read: read,
			}); err != nil {
				t.Fatal(err)
			}
		}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, echoTool("a.b"))
			tc.setup(t, e.s)
			caps := capabilitiesJSON(t, e.s)
			if _, ok := caps["tools"]; !ok {
				t.Error("tools not advertised")
			}
			if _, ok := caps["logging"]; !ok {
				t.Error("logging not advertised")
			}
			if res := members(t, caps["resources"]); string(res["subscribe"]) != "true" {
				t.Errorf("resources = %s, want subscribe true", caps["resources"])
			}
			if _, ok := caps["prompts"]; ok != tc.wantPrompts {
				t.Errorf("prompts advertised = %v, want %v (%v)", ok, tc.wantPrompts, caps)
			}
			if _, ok := caps["completions"]; ok != tc.wantCompletions {
				t.Errorf("completions advertised = %v, want %v", ok, tc.wantCompletions)
			}
		})
	}
}

func TestNewServerDefaultPageSize(t *testing.T) {
	reg, _ := NewToolRegistry("_")
	var tools []Tool
	for i := range 150 {
		tools = append(tools, echoTool(fmt.Sprintf("t%03d", i)))
	}
	if err := reg.Add(tools...); err != nil {
		t.Fatal(err)
	}
	e := &env{s: NewServer(Options{}, reg), sess: &fakeSession{}, peer: &fakePeer{}}
	if e.s.Tools() != reg {
		t.Fatal("Tools() is not the registry given")
	}
	res := unmarshal[protocol.ListToolsResult](t, e.ok(t, protocol.MethodToolsList, ""))
	if len(res.Tools) != 100 || res.NextCursor == "" {
		t.Fatalf("first page has %d tools, cursor %q; want the default page of 100", len(res.Tools), res.NextCursor)
	}
}

// TestConcurrentCallsAndRegistration: tools are added while calls and lists
// are in flight (run under -race).
func TestConcurrentCallsAndRegistration(t *testing.T) {
	e := newEnv(t, echoTool("base.echo"))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				text := fmt.Sprintf("w%d-%d", w, i)
				_, res, err := e.handle(protocol.MethodToolsCall, `{"name":"base_echo","arguments":{"text":"`+text+`"}}`)
				if err != nil {
					errs <- err
					return
				}
				if r := res.(*protocol.CallToolResult); r.IsError || r.Content[0].Text != text {
					errs <- fmt.Errorf("call %s = %+v", text, r)
					return
				}
				if _, _, err := e.handle(protocol.MethodToolsList, ""); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 50 {
			if err := e.s.Tools().Add(echoTool(fmt.Sprintf("added.t%d", i))); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := e.s.Tools().Len(); n != 51 {
		t.Fatalf("Len = %d, want 51", n)
	}
	items, _ := listAll(t, e, protocol.MethodToolsList, "tools")
	if len(items) != 51 {
		t.Fatalf("listed %d tools, want 51", len(items))
	}
}
