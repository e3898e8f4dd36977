package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// fakeSession records what the handlers ask of the client session.
type fakeSession struct {
	mu     sync.Mutex
	level  protocol.LoggingLevel
	subs   []string
	unsubs []string
	subErr error
}

func (s *fakeSession) ID() string              { return "sess-1" }
func (s *fakeSession) ProtocolVersion() string { return protocol.LatestVersion }
func (s *fakeSession) ClientInfo() protocol.Implementation {
	return protocol.Implementation{Name: "test-client", Version: "1.0"}
}
func (s *fakeSession) ClientCapabilities() protocol.ClientCapabilities {
	return protocol.ClientCapabilities{}
}

func (s *fakeSession) LogLevel() protocol.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level
}

func (s *fakeSession) SetLogLevel(l protocol.LoggingLevel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.level = l
}

func (s *fakeSession) Subscribe(uri string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subErr != nil {
		return s.subErr
	}
	s.subs = append(s.subs, uri)
	return nil
}

func (s *fakeSession) Unsubscribe(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unsubs = append(s.unsubs, uri)
}

func (s *fakeSession) subscriptions() (subs, unsubs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.subs), slices.Clone(s.unsubs)
}

// sentMessage is one message the fake peer was asked to send, with its
// params as they would go on the wire.
type sentMessage struct {
	method string
	params json.RawMessage
}

// fakePeer records notifications and answers server-to-client requests
// with a canned result.
type fakePeer struct {
	mu        sync.Mutex
	notes     []sentMessage
	requests  []sentMessage
	answer    json.RawMessage
	notifyErr error
	closed    []int
}

func (p *fakePeer) Notify(_ context.Context, method string, params any) error {
	b, err := protocol.Marshal(params)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.notifyErr != nil {
		return p.notifyErr
	}
	p.notes = append(p.notes, sentMessage{method, b})
	return nil
}

func (p *fakePeer) Request(_ context.Context, method string, params any) (json.RawMessage, error) {
	b, err := protocol.Marshal(params)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, sentMessage{method, b})
	if p.answer == nil {
		return nil, &protocol.Error{Code: protocol.CodeMethodNotFound, Message: "client does not support " + method}
	}
	return p.answer, nil
}

func (p *fakePeer) Answer(any) bool { return false }

func (p *fakePeer) CloseStream(retryMs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = append(p.closed, retryMs)
}

func (p *fakePeer) notifications() []sentMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.notes)
}

// env is a server with PageSize 2, a session and a peer.
type env struct {
	s    *Server
	sess *fakeSession
	peer *fakePeer
}

func newEnv(t testing.TB, tools ...Tool) *env {
	t.Helper()
	reg, err := NewToolRegistry("_")
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Add(tools...); err != nil {
		t.Fatal(err)
	}
	s := NewServer(Options{Name: "test-server", Title: "Test", Version: "0.1.0", Instructions: "be nice", PageSize: 2}, reg)
	return &env{s: s, sess: &fakeSession{level: protocol.LevelInfo}, peer: &fakePeer{answer: json.RawMessage(`{"roots":[{"uri":"file:///r"}]}`)}}
}

// handle runs one request as the transport does: Prepare, then Run; the
// Outcome is what the request log records.
func (e *env) handle(method, params string) (Outcome, any, error) {
	req := &Request{Method: method, ID: protocol.IntID(1), Session: e.sess, Peer: e.peer}
	if params != "" {
		req.Params = json.RawMessage(params)
	}
	p := e.s.Prepare(req)
	res, out, err := e.s.Run(context.Background(), req, &p)
	return out, res, err
}

// ok runs a request that must succeed and returns its result as marshalled
// by the transport.
func (e *env) ok(t *testing.T, method, params string) json.RawMessage {
	t.Helper()
	_, res, err := e.handle(method, params)
	if err != nil {
		t.Fatalf("%s %s: %v", method, params, err)
	}
	b, err := protocol.Marshal(res)
	if err != nil {
		t.Fatalf("%s: marshal result %#v: %v", method, res, err)
	}
	return b
}

// fails runs a request that must fail with a JSON-RPC error of code.
func (e *env) fails(t *testing.T, code int, method, params string) *protocol.Error {
	t.Helper()
	_, res, err := e.handle(method, params)
	return wantProtocolError(t, res, err, code)
}

func wantProtocolError(t *testing.T, res any, err error, code int) *protocol.Error {
	t.Helper()
	if err == nil {
		b, _ := protocol.Marshal(res)
		t.Fatalf("succeeded with %s, want error %d", b, code)
	}
	var perr *protocol.Error
	if !errors.As(err, &perr) {
		t.Fatalf("error %v (%T) is not a *protocol.Error, want code %d", err, err, code)
	}
	if perr.Code != code {
		t.Fatalf("code = %d (%s), want %d", perr.Code, perr.Message, code)
	}
	if perr.Message == "" {
		t.Fatal("empty error message")
	}
	return perr
}

func unmarshal[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("unmarshal %s into %T: %v", b, v, err)
	}
	return v
}

func members(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	return unmarshal[map[string]json.RawMessage](t, b)
}

type echoArgs struct {
	Text string `json:"text"`
}

const echoSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`

// echoTool returns its text argument.
func echoTool(name string) Tool {
	return Tool{
		Name:        name,
		Description: "echoes text",
		InputSchema: json.RawMessage(echoSchema),
		Handler: Typed(func(_ context.Context, _ *ToolCall, in echoArgs) (*protocol.CallToolResult, error) {
			return TextResult(in.Text), nil
		}),
	}
}

// simpleTool has no arguments and returns res, err.
func simpleTool(name string, res *protocol.CallToolResult, err error) Tool {
	return Tool{
		Name:        name,
		Description: "tool " + name,
		Handler: func(context.Context, *ToolCall) (*protocol.CallToolResult, error) {
			return res, err
		},
	}
}
