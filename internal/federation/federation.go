// Package federation serves the tools, prompts and resources of upstream
// MCP servers as this server's own: each upstream tool becomes a guarded
// tool (limits, timeout category, trace) whose calls are relayed to its
// server, with the upstream's failures mapped to the envelope's codes;
// the upstreams' prompts, resources and templates are merged into the
// server's lists (Surface, a handlers.Federated). internal/upstream owns
// the connections; this package owns what the MCP server makes of them.
package federation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/guarded"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
	"github.com/mcp-runtime/mcp-runtime/internal/toolname"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// upstreamGroup is the handlers.Tool group of every proxied tool.
const upstreamGroup = "upstream"

// Federation connects the upstream MCP servers and keeps their tools in
// the registry: each upstream tool becomes a tool of this server, behind
// the same guardrails as the built-in ones (limits, timeout category,
// envelope and truncation, traces), under the canonical name
// serverId.toolName (DESIGN.md, "Tool names").
type Federation struct {
	m      *upstream.Manager
	pipe   *guarded.Pipeline
	tools  *handlers.ToolRegistry
	notify func() (int, error) // tells clients the tool list changed
	log    zerolog.Logger

	timeouts timeout.Config // the guardrails' timeouts, to check servers' requestTimeoutMs against
	sep      string         // the exposed-name separator, for timeout overrides by exposed name

	mu sync.Mutex // serialises sync: OnToolsChanged and the first sync
	// warned holds the servers already warned about a requestTimeoutMs
	// their category's timeout cuts short (by id and both values).
	warned map[string]bool

	held  *heldCalls // calls to legacy upstreams waiting for modern clients' answers
	route HeldRoute  // to the replicas holding other calls; nil: none

	closeOnce sync.Once
	closeErr  error
}

// Options are what the federation needs besides the manager's settings.
type Options struct {
	// Tools is the registry whose upstream group the federation keeps.
	Tools *handlers.ToolRegistry
	// Pipeline wraps each upstream tool in the guardrails.
	Pipeline *guarded.Pipeline
	// ToolsChanged tells clients that tools/list changed
	// (notifications/tools/list_changed) and returns how many were told.
	ToolsChanged func() (int, error)
	// Timeouts are the guardrails' timeouts, and Separator the
	// exposed-name separator (toolNameSeparator).
	Timeouts  timeout.Config
	Separator string
	// HeldRoute carries a retry of a held call to the replica that holds
	// it (held.go); nil when the replica has no peers to reach.
	HeldRoute HeldRoute
	Log       zerolog.Logger
}

// New builds the manager from o, whose OnToolsChanged it sets to keep the
// registry current; Start connects it.
func New(o upstream.Options, opts Options) (*Federation, error) {
	f := &Federation{pipe: opts.Pipeline, tools: opts.Tools, notify: opts.ToolsChanged, log: opts.Log,
		timeouts: opts.Timeouts, sep: opts.Separator, warned: map[string]bool{}, route: opts.HeldRoute}
	self := ""
	if f.route != nil {
		self = f.route.Self()
	}
	f.held = newHeldCalls(self)
	o.OnToolsChanged = f.sync
	m, err := upstream.NewManager(o)
	if err != nil {
		return nil, fmt.Errorf("upstreams: %w", err)
	}
	f.m = m
	return f, nil
}

// Manager returns the upstream manager, for the admin API and the surface.
func (f *Federation) Manager() *upstream.Manager { return f.m }

// LoopGuard refuses, with 508 Loop Detected, a request that names this
// deployment in upstream.HeaderVia: it comes from this deployment, through
// an upstream that leads back here. The answer to any other request that
// carries the header (one from another deployment's gateway) names the
// deployments behind this one's upstreams (upstream.HeaderDeployments),
// so that gateway can see a loop through this one. A request without the
// header, every ordinary client's, costs one header lookup.
func (f *Federation) LoopGuard(next http.Handler) http.Handler {
	self := f.m.DeploymentID()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		via := r.Header.Values(upstream.HeaderVia)
		if len(via) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if upstream.NamesDeployment(via, self) {
			h := w.Header()
			h.Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusLoopDetected)
			_, _ = io.WriteString(w, loopAnswer)
			return
		}
		w.Header()[upstream.HeaderDeployments] = f.m.Deployments()
		next.ServeHTTP(w, r)
	})
}

// loopAnswer is the body of a 508: a JSON-RPC error, which is what an MCP
// client reads from a failed POST.
const loopAnswer = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"federation loop: this request has already passed through this deployment (` +
	upstream.HeaderVia + ` names it); an upstream of this server leads back to it"}}`

// Start connects the enabled servers in the background and registers the
// tools of those that answer as they do.
func (f *Federation) Start(ctx context.Context) error {
	if err := f.m.Start(ctx); err != nil {
		return fmt.Errorf("start upstreams: %w", err)
	}
	f.sync()
	return nil
}

// Close stops the manager once; later calls return the first one's error.
// Call it before closing the store the manager persists to.
func (f *Federation) Close(ctx context.Context) error {
	f.closeOnce.Do(func() {
		f.held.close()
		f.closeErr = f.m.Close(ctx)
	})
	return f.closeErr
}

// sync makes the registry's upstream group the manager's current tool set
// and tells clients when tools/list changed, never otherwise.
func (f *Federation) sync() {
	f.mu.Lock()
	defer f.mu.Unlock()
	ups := f.m.Tools()
	tools := make([]handlers.Tool, 0, len(ups))
	for _, u := range ups {
		f.checkTimeoutLocked(u)
		t, err := guarded.Wrap(f.pipe, f.proxy(u, timeout.Category(u.Category)))
		if err != nil {
			f.log.Warn().Err(err).Str("server", u.Server).Str("tool", u.Name).Msg("upstream tool left out")
			continue
		}
		t.Group, t.BareName = upstreamGroup, u.Name
		tools = append(tools, t)
	}
	changed, errs := f.tools.ReplaceGroup(upstreamGroup, tools)
	for _, err := range errs {
		// A name taken by a built-in tool, or a schema the registry
		// refuses: that tool is left out, the others are served.
		f.log.Warn().Err(err).Msg("upstream tool left out")
	}
	if !changed {
		return
	}
	if n, err := f.notify(); err != nil {
		f.log.Error().Err(err).Msg("notify tools/list_changed")
	} else {
		f.log.Info().Int("tools", len(tools)).Int("sessions", n).Msg("upstream tools changed; clients notified")
	}
}

// checkTimeoutLocked warns, once per server and setting, when a server's
// requestTimeoutMs is not below its tools' guardrail timeout: a slow call
// then ends with the guardrail's TOOL_TIMEOUT before the upstream's own
// INVOCATION_FAILED, and the retries requestTimeoutMs paces never happen.
func (f *Federation) checkTimeoutLocked(u upstream.Tool) {
	st, err := f.m.Get(context.Background(), u.Server)
	if err != nil {
		return
	}
	limit := f.timeouts.For(u.Canonical, toolname.Exposed(u.Canonical, f.sep), timeout.Category(u.Category))
	req := st.Config.RequestTimeout()
	key := fmt.Sprintf("%s/%v/%v", u.Server, req, limit)
	if req < limit || f.warned[key] {
		return
	}
	f.warned[key] = true
	f.log.Warn().Str("server", u.Server).Dur("requestTimeout", req).Dur("toolTimeout", limit).Str("category", u.Category).
		Msg("upstream requestTimeoutMs is not below its tools' timeout: slow calls will end with TOOL_TIMEOUT; lower requestTimeoutMs or change the category")
}

// proxy is the pipeline tool that forwards calls of u to its server. The
// arguments were validated against u's inputSchema by the registry before
// Run (INV-MCP-ECO-300).
func (f *Federation) proxy(u upstream.Tool, category timeout.Category) guarded.Tool {
	desc := u.Description
	if strings.TrimSpace(desc) == "" {
		desc = fmt.Sprintf("Tool %s of the upstream MCP server %s.", u.Name, u.Server)
	}
	return guarded.Tool{
		Name: u.Canonical, Title: u.Title, Description: desc,
		InputSchema: u.InputSchema, Annotations: u.Annotations,
		Category: category,
		// The upstream's result reaches the client as the upstream sent
		// it, isError included (INV-MCP-ECO-301), and is described by the
		// upstream's own outputSchema (DESIGN.md, "Gateway fidelity").
		PassThrough: true, OutputSchema: u.OutputSchema,
		Run: func(ctx context.Context, call *handlers.ToolCall) (any, error) { return f.run(ctx, u, call) },
	}
}

// run is one round of a call of u: the whole call, unless the client is
// asked for input first (rounds.go, held.go).
func (f *Federation) run(ctx context.Context, u upstream.Tool, call *handlers.ToolCall) (any, error) {
	if in := handlers.InputOf(ctx); len(in.State) > 0 && in.State[0] == heldState {
		return f.resume(ctx, call, in)
	}
	round, err := roundOf(ctx, u, call)
	if err != nil {
		return nil, err
	}
	if call.Session != nil && protocol.IsModernVersion(call.Session.ProtocolVersion()) && !f.m.Modern(u.Server) {
		// A legacy upstream asks with requests inside the call, which a
		// modern client takes only as rounds: the call is held.
		args := bytes.Clone(call.Arguments) // the call outlives the request's buffers
		c := f.held.start(ctx, u, call, call.Session.ClientCapabilities(), func(ctx context.Context, relay upstream.Relay) (upstream.CallResult, error) {
			return f.m.CallRound(ctx, u.Server, u.Name, args, round, relay)
		})
		return step(ctx, c)
	}
	res, err := f.m.CallRound(ctx, u.Server, u.Name, call.Arguments, round, callRelay{call})
	return result(u, res, err)
}

// result is what Run returns for an upstream's answer.
func result(u upstream.Tool, res upstream.CallResult, err error) (any, error) {
	if err != nil {
		return nil, callError(u, err)
	}
	if res.Input != nil {
		need, err := needInput(u, res.Input)
		if err != nil {
			return nil, err
		}
		return nil, need
	}
	return response.Passed{Content: res.Content, StructuredContent: res.StructuredContent, Meta: res.Meta,
		IsError: res.IsError, Attempts: res.Attempts}, nil
}

// callError maps a failed call to the envelope's codes (INV-MCP-ECO-100,
// -301): the message names the server and the operation.
func callError(u upstream.Tool, err error) error {
	ctx := map[string]any{"server": u.Server, "tool": u.Name}
	var ue *upstream.Error
	if errors.As(err, &ue) {
		ctx["attempts"] = max(ue.Attempts, 1)
		ctx["timedOut"] = ue.Timeout
	}
	code := response.CodeInvocationFailed
	switch {
	case errors.Is(err, upstream.ErrConnectionTimeout):
		code = response.CodeConnectionTimeout
	case errors.Is(err, upstream.ErrNotFound):
		code = response.CodeNotFound
	case errors.Is(err, upstream.ErrDisabled), errors.Is(err, upstream.ErrUnavailable):
		code = response.CodeServiceUnavailable
	}
	e := response.NewError(code, "%s", err.Error())
	e.Context = ctx
	if ue != nil && ue.RetryAfter > 0 {
		// The next connection attempt: a retry before it fails the same way.
		e = e.WithRetryAfter(ue.RetryAfter)
	}
	return e
}

// AmbiguousTool answers a bare tool name several servers share
// (handlers.Server.SetAmbiguousTool), with an AMBIGUOUS_TOOL envelope.
func AmbiguousTool(limits response.Limits) func(context.Context, string, []string) *protocol.CallToolResult {
	return func(_ context.Context, name string, candidates []string) *protocol.CallToolResult {
		e := response.NewError(response.CodeAmbiguousTool, "tool name %q is offered by several upstream servers; call one of: %s",
			name, strings.Join(candidates, ", "))
		e.Context = map[string]any{"name": name, "candidates": candidates}
		return response.Failure(e, response.Metadata{}, limits)
	}
}
