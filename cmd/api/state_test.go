package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/netfault"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
)

// runServer starts cmd/api's wiring on a free loopback port and returns
// its URL and a stop function that shuts it down as SIGTERM does (also
// called when the test ends).
func runServer(t *testing.T, cfg config.Config, logOut io.Writer) (url string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return runServerOn(t, cfg, logOut, ln)
}

// runServerOn is runServer on a listener the test opened, so the test
// knows the address before the server is built (auth.resource is it).
func runServerOn(t *testing.T, cfg config.Config, logOut io.Writer, ln net.Listener) (url string, stop func()) {
	t.Helper()
	_, url, stop = serveApp(t, cfg, logOut, ln)
	return url, stop
}

// serveApp is runServerOn that also returns the app.
func serveApp(t *testing.T, cfg config.Config, logOut io.Writer, ln net.Listener) (a *app, url string, stop func()) {
	t.Helper()
	return serveAppEnv(t, cfg, logOut, ln, noEnv)
}

// serveAppEnv is serveApp in the environment getenv.
func serveAppEnv(t *testing.T, cfg config.Config, logOut io.Writer, ln net.Listener, getenv func(string) string) (a *app, url string, stop func()) {
	t.Helper()
	a, err := newApp(context.Background(), cfg, logOut, getenv)
	if err != nil {
		ln.Close()
		t.Fatalf("newApp: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.serveOn(ctx, ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("server shutdown: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("server did not shut down within 15s")
			}
		})
	}
	t.Cleanup(stop)
	return a, "http://" + ln.Addr().String() + "/mcp", stop
}

func connect(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	return connectAs(t, url, "", nil)
}

// call runs a tool and returns its envelope.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) envelopeDoc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return envelope(t, res)
}

func mustSucceed(t *testing.T, env envelopeDoc, what string) {
	t.Helper()
	if !env.Success {
		t.Fatalf("%s failed: %s %s", what, env.Error.Code, env.Error.Message)
	}
}

func pgConfig(t *testing.T) config.Config {
	cfg := config.Default()
	cfg.DatabaseURL = pgtest.NewDatabase(t)
	return cfg
}

// State written through one server process is there after a restart: an
// acknowledged write is durable.
func TestRestartKeepsState(t *testing.T) {
	cfg := pgConfig(t)
	url, stop := runServer(t, cfg, io.Discard)
	cs := connect(t, url)
	mustSucceed(t, call(t, cs, "memory_store", map[string]any{"key": "plan", "value": map[string]any{"step": 3}, "tags": []string{"x"}}), "memory_store")
	created := call(t, cs, "session_create", map[string]any{"task": "ship", "initiator": "lead"})
	mustSucceed(t, created, "session_create")
	var s struct{ ID string }
	_ = json.Unmarshal(created.Data, &s)
	mustSucceed(t, call(t, cs, "session_join", map[string]any{"sessionId": s.ID, "agentId": "helper"}), "session_join")
	mustSucceed(t, call(t, cs, "agent_register", map[string]any{"agentId": "rev", "description": "reviews"}), "agent_register")
	_ = cs.Close()
	stop()

	url, _ = runServer(t, cfg, io.Discard) // migrations run again: a no-op
	cs = connect(t, url)
	got := call(t, cs, "memory_retrieve", map[string]any{"key": "plan"})
	mustSucceed(t, got, "memory_retrieve after restart")
	var e struct {
		Value   map[string]int
		Version int
	}
	_ = json.Unmarshal(got.Data, &e)
	if e.Value["step"] != 3 || e.Version != 1 {
		t.Errorf("after restart: %s", got.Data)
	}
	status := call(t, cs, "session_status", map[string]any{"sessionId": s.ID})
	mustSucceed(t, status, "session_status after restart")
	var ss struct{ Participants []struct{ AgentID string } }
	_ = json.Unmarshal(status.Data, &ss)
	if len(ss.Participants) != 2 {
		t.Errorf("participants after restart: %s", status.Data)
	}
	mustSucceed(t, call(t, cs, "agent_get", map[string]any{"agentId": "rev"}), "agent_get after restart")
	// The trace of the calls before the restart was flushed on shutdown.
	traces := call(t, cs, "trace_list", map[string]any{"tool": "memory.store"})
	mustSucceed(t, traces, "trace_list")
	var page struct {
		Items []struct{ Tool, Status string }
	}
	_ = json.Unmarshal(traces.Data, &page)
	if len(page.Items) != 1 || page.Items[0].Status != "ok" {
		t.Errorf("traces of memory.store after restart: %s", traces.Data)
	}
}

// With PostgreSQL gone, calls answer SERVICE_UNAVAILABLE (retryable)
// promptly instead of hanging or crashing; when it is back, they succeed
// again without a restart.
func TestPostgresOutage(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	cfg := config.Default()
	px := netfault.NewProxy(t, "127.0.0.1:5432")
	cfg.DatabaseURL = withHost(t, dbURL, px.Addr())
	url, _ := runServer(t, cfg, io.Discard)
	cs := connect(t, url)
	mustSucceed(t, call(t, cs, "memory_store", map[string]any{"key": "k", "value": 1}), "memory_store")

	px.Cut()
	for i, c := range []struct {
		tool string
		args map[string]any
	}{
		{"memory_store", map[string]any{"key": "k2", "value": 2}},
		{"memory_search", map[string]any{"query": "anything"}},
		{"session_create", map[string]any{"task": "t", "initiator": "a"}},
	} {
		start := time.Now()
		env := call(t, cs, c.tool, c.args)
		if env.Success || env.Error.Code != "SERVICE_UNAVAILABLE" {
			t.Errorf("%d %s during the outage: success %v code %s", i, c.tool, env.Success, env.Error.Code)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s took %s to fail", c.tool, d)
		}
	}

	px.Restore()
	deadline := time.Now().Add(15 * time.Second)
	for {
		env := call(t, cs, "memory_store", map[string]any{"key": "k3", "value": 3})
		if env.Success {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not recovered 15s after PostgreSQL returned: %s", env.Error.Code)
		}
		time.Sleep(200 * time.Millisecond)
	}
	got := call(t, cs, "memory_retrieve", map[string]any{"key": "k"})
	mustSucceed(t, got, "memory_retrieve after the outage")
	if env := call(t, cs, "memory_retrieve", map[string]any{"key": "k2"}); env.Success {
		t.Error("a write refused during the outage was stored")
	}
}

// A configuration naming an unreachable database fails start-up with a
// message naming the key and without the password.
func TestStartupUnreachableDatabase(t *testing.T) {
	cfg := config.Default()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg.DatabaseURL = fmt.Sprintf("postgres://u:hunter2@%s/db?connect_timeout=1", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = newApp(ctx, cfg, io.Discard, noEnv)
	if err == nil {
		t.Fatal("newApp succeeded without a database")
	}
	if msg := err.Error(); !strings.Contains(msg, "databaseURL") || strings.Contains(msg, "hunter2") {
		t.Errorf("error %q: want it to name databaseURL and not the password", msg)
	}
}

// withHost points a database URL at another host:port.
func withHost(t *testing.T, raw, hostPort string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = hostPort
	return u.String()
}
