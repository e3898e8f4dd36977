package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	"github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// With -protocol-version 2026-07-28, mcpload speaks the stateless era to
// a server that checks it strictly (this project's transport: _meta,
// MCP-Protocol-Version, Mcp-Method and Mcp-Name against the body): it
// discovers instead of initializing, every tools/call and tools/list
// succeeds, and no request carries a session id or starts a session.
func TestModernEra(t *testing.T) {
	h := transporttest.New(t, transporttest.Config{EchoOnly: true}, func(srv *handlers.Server) (transporttest.Transport, error) {
		return transport.New(srv, transport.Options{
			LoopbackOnly: true, Logger: transporttest.Logger(),
			MaxBodyBytes: transporttest.MaxBodyBytes, SessionIdleTimeout: transporttest.SessionIdleTimeout,
			KeepAliveInterval: transporttest.KeepAliveInterval, EventLogSize: transporttest.EventLogSize, MaxSessions: transporttest.MaxSessions,
		})
	})
	var mu sync.Mutex
	seen := map[string]int{} // Mcp-Method of every POST, and "session" for one with an Mcp-Session-Id
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method+" "+r.Header.Get("Mcp-Method")]++
		if r.Header.Get(headerSessionID) != "" {
			seen["session"]++
		}
		mu.Unlock()
		h.Router.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	const requests = 40
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"tools/call", []string{"-tool", "echo", "-args", `{"text":"hi {{seq}}"}`}},
		{"tools/list", nil},
		{"mix", []string{"-mix", `echo:1:{"text":"a"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := runJSON(t, append([]string{"-url", srv.URL + "/mcp", "-protocol-version", "2026-07-28", "-sessions", "2", "-concurrency", "4",
				"-requests", fmt.Sprint(requests), "-warmup", "0s", "-timeout", "5s"}, tc.args...)...)
			if sum.Requests != requests || sum.OK != requests || sum.ProtocolVersion != "2026-07-28" || sum.Server != "transport-test test" {
				t.Errorf("summary %+v (errors %q)", sum, sum.ErrorSamples)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["session"] != 0 || seen["POST "] != 0 || seen["DELETE "] != 0 || seen["POST server/discover"] != 6 || seen["POST tools/list"] < requests {
		t.Errorf("requests seen: %v; want server/discover per session, none without Mcp-Method, no session, no DELETE", seen)
	}
}

// A tool name a header cannot carry as it is goes in the Base64 form
// (basic/transports/streamable-http, "Value Encoding"); a version that
// is not a date is no revision of the stateless era.
func TestModernHeaderValues(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"echo", "echo"},
		{"café", "=?base64?Y2Fmw6k=?="},
		{"tab\there", "=?base64?dGFiCWhlcmU=?="},
	} {
		if got := headerValue(tc.name); got != tc.want {
			t.Errorf("headerValue(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	for v, want := range map[string]bool{"2026-07-28": true, "2027-01-01": true, "2025-11-25": false, "draft": false, "2026-13-45": false} {
		if got := isModern(v); got != want {
			t.Errorf("isModern(%q) = %v, want %v", v, got, want)
		}
	}
}

// In the stateless era each -subscribers holds a subscriptions/listen
// stream naming the URI, acknowledged before the load starts: every
// mutation's notification reaches every one of them.
func TestModernEraListens(t *testing.T) {
	const uri = "memory://default/k"
	var tr *transport.Transport
	h := transporttest.New(t, transporttest.Config{EchoOnly: true}, func(srv *handlers.Server) (transporttest.Transport, error) {
		var err error
		tr, err = transport.New(srv, transport.Options{
			LoopbackOnly: true, Logger: transporttest.Logger(),
			MaxBodyBytes: transporttest.MaxBodyBytes, SessionIdleTimeout: transporttest.SessionIdleTimeout,
			KeepAliveInterval: transporttest.KeepAliveInterval, EventLogSize: transporttest.EventLogSize, MaxSessions: transporttest.MaxSessions,
		})
		if err != nil {
			return nil, err
		}
		return tr, srv.Tools().Add(handlers.Tool{Name: "store", Description: "Changes the URI.",
			Handler: func(context.Context, *handlers.ToolCall) (*protocol.CallToolResult, error) {
				if _, err := tr.ResourceUpdated("", uri); err != nil {
					return nil, err
				}
				return &protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent("stored")}}, nil
			}})
	})
	srv := httptest.NewServer(h.Router)
	t.Cleanup(srv.Close)
	const requests, subscribers = 30, 3
	sum := runJSON(t, "-url", srv.URL+"/mcp", "-protocol-version", "2026-07-28", "-concurrency", "1", "-requests", fmt.Sprint(requests),
		"-warmup", "0s", "-timeout", "5s", "-mix-mutating", "store:1:{}", "-subscribers", fmt.Sprint(subscribers), "-subscribe-uri", uri)
	n := sum.Notifications
	if n == nil || n.Mutations != requests || n.Expected != requests*subscribers || n.Received != n.Expected || n.Missed != 0 {
		t.Fatalf("notifications %+v (errors %q)", n, sum.ErrorSamples)
	}
}
