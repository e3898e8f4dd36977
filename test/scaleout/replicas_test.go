// Package scaleout runs cmd/api as separate processes sharing one
// PostgreSQL database and one Redis, and checks that any replica serves
// any request of any client session, with no sticky sessions
// (docs/adr/0015-shared-client-sessions.md).
package scaleout

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// replica is one cmd/api process.
type replica struct {
	name string
	url  string // .../mcp
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan struct{}
}

// listeningLine starts the line a server logs once its listener is
// bound: from then on a request is served, so it is the replica's
// readiness signal.
const listeningLine = "mcp-runtime listening"

// lockedBuffer collects a replica's output and closes listening when
// listeningLine has arrived.
type lockedBuffer struct {
	mu        sync.Mutex
	b         strings.Builder
	listening chan struct{}
}

func newLockedBuffer() *lockedBuffer { return &lockedBuffer{listening: make(chan struct{})} }

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.b.Write(p)
	// The whole output is searched, not p: a write may end mid-line.
	select {
	case <-l.listening:
	default:
		if strings.Contains(l.b.String(), listeningLine) {
			close(l.listening)
		}
	}
	return n, err
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serverBin is the cmd/api binary TestMain builds once for every test.
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "scaleout-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "mcp-runtime")
	cmd := exec.Command("go", "build", "-o", serverBin, "../../cmd/api")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/api: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// startReplica runs bin with env on a free port and waits until it
// listens; /healthz must then answer at once.
func startReplica(t *testing.T, name, bin string, env []string) *replica {
	t.Helper()
	addr := freeAddr(t)
	r := &replica{name: name, url: "http://" + addr + "/mcp", logs: newLockedBuffer(), done: make(chan struct{})}
	r.cmd = exec.Command(bin)
	r.cmd.Env = append(append(os.Environ(), env...), "MCP_ADDR="+addr, "MCP_LOG_LEVEL=info")
	r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
	setParentDeath(r.cmd)
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		r.kill()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, r.logs.String())
		}
	})
	select {
	case <-r.logs.listening:
	case <-r.done:
		t.Fatalf("%s exited at start:\n%s", name, r.logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s not listening within 30s:\n%s", name, r.logs.String())
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("%s listens, but /healthz: %v\n%s", name, err, r.logs.String())
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s listens, but /healthz answers %d:\n%s", name, resp.StatusCode, r.logs.String())
	}
	return r
}

// kill ends the process abruptly (SIGKILL): no graceful shutdown, no
// retry hint on its streams, as when a node dies.
func (r *replica) kill() {
	if r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
	}
	<-r.done
}

// client speaks Streamable HTTP by hand, choosing for each request which
// replica gets it.
type client struct {
	t   *testing.T
	sid string
	rr  []*replica // round-robin targets
	n   int
}

type answer struct {
	status int
	header http.Header
	body   string
}

// do sends one JSON-RPC message to r.
func (c *client) do(r *replica, body string) answer {
	c.t.Helper()
	a, err := post(r.url, c.sid, body)
	if err != nil {
		c.t.Fatalf("POST to %s: %v", r.name, err)
	}
	if c.sid == "" {
		c.sid = a.header.Get("Mcp-Session-Id")
	}
	return a
}

// post sends one JSON-RPC message of session sid ("" for none) to url.
// It reports an error and never fails the test, so that goroutines other
// than the test's can use it.
func post(url, sid, body string) (answer, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	// Bounded, so that a replica that stops answering fails the test
	// rather than hangs it (the default transport's connections are
	// reused all the same).
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}, err
}

// must sends body to r and fails the test unless it is answered with a
// 2xx status and, for a request, a result that is not an error.
func (c *client) must(r *replica, body string) string {
	c.t.Helper()
	a := c.do(r, body)
	if a.status/100 != 2 {
		c.t.Fatalf("%s answered %d to %s: %s", r.name, a.status, body, short(a.body))
	}
	var msg struct {
		Error  json.RawMessage `json:"error"`
		Result struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if a.body != "" {
		if err := json.Unmarshal([]byte(a.body), &msg); err != nil {
			c.t.Fatalf("%s answered %s with something other than one JSON message: %s", r.name, body, short(a.body))
		}
	}
	if len(msg.Error) > 0 || msg.Result.IsError {
		c.t.Fatalf("%s answered %s with an error: %s", r.name, body, short(a.body))
	}
	return a.body
}

func short(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// next sends body to the next replica in turn.
func (c *client) next(body string) string {
	c.t.Helper()
	r := c.rr[c.n%len(c.rr)]
	c.n++
	return c.must(r, body)
}

func (c *client) initialize(r *replica, name string) {
	c.t.Helper()
	c.must(r, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+name+`","version":"1"}}}`)
	if c.sid == "" {
		c.t.Fatal("initialize gave no Mcp-Session-Id")
	}
}

// sse is an open GET stream.
type sse struct {
	events <-chan [2]string // (id, data)
	cut    func()
}

// stream opens the client session's GET stream on r, resuming after
// lastID when set.
func (c *client) stream(r *replica, lastID string) sse {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", c.sid)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		c.t.Fatalf("GET on %s: %v", r.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		c.t.Fatalf("GET on %s: %d", r.name, resp.StatusCode)
	}
	events := make(chan [2]string, 256)
	go func() {
		defer close(events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var id, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = line[4:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			case line == "":
				if data != "" {
					events <- [2]string{id, data}
				}
				id, data = "", ""
			}
		}
	}()
	c.t.Cleanup(cancel)
	return sse{events: events, cut: cancel}
}

// updates reads n resources/updated notifications for uri from s, failing
// after timeout; other events (priming, keep-alives) are skipped.
func updates(t *testing.T, s sse, uri string, n int, timeout time.Duration) [][2]string {
	t.Helper()
	var got [][2]string
	deadline := time.After(timeout)
	for len(got) < n {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("stream ended after %d of %d updates", len(got), n)
			}
			if strings.Contains(ev[1], `"notifications/resources/updated"`) && strings.Contains(ev[1], `"uri":"`+uri+`"`) {
				got = append(got, ev)
			}
		case <-deadline:
			t.Fatalf("%d of %d updates of %s within %v", len(got), n, uri, timeout)
		}
	}
	return got
}

// quiet fails if s carries another update of uri within d.
func quiet(t *testing.T, s sse, uri string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return
			}
			if strings.Contains(ev[1], `"uri":"`+uri+`"`) {
				t.Fatalf("an update delivered twice, or one too many: %s %s", ev[0], ev[1])
			}
		case <-deadline:
			return
		}
	}
}

func storeCall(id int, key string, value int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_store","arguments":{"namespace":"team","key":%q,"value":%d}}}`, id, key, value)
}
