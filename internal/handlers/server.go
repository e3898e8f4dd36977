package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Options configure a Server.
type Options struct {
	Name         string
	Title        string
	Version      string
	Instructions string
	// PageSize bounds every list result (tools, resources, templates, prompts).
	PageSize int
	// PromptsChange says the embedder adds prompts at run time and tells
	// clients (notifications/prompts/list_changed): the prompts
	// capability then says listChanged, as it does with a Federated
	// surface.
	PromptsChange bool
}

// Server answers MCP requests from its registries.
type Server struct {
	opts      Options
	tools     *ToolRegistry
	resources *ResourceRegistry
	prompts   *PromptRegistry
	lister    ResourceLister
	sealer    StateSealer // round state of multi-round requests (mrtr.go)
	fed       Federated   // nil: no upstreams (see SetFederated)
	afterCall func(ctx context.Context, call *ToolCall, res *protocol.CallToolResult) *protocol.CallToolResult
	ambiguous func(ctx context.Context, name string, candidates []string) *protocol.CallToolResult
}

// NewServer returns a server over tools; resources and prompts are added
// with AddResource, AddResourceTemplate and AddPrompt.
func NewServer(opts Options, tools *ToolRegistry) *Server {
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	return &Server{opts: opts, tools: tools, resources: newResourceRegistry(), prompts: newPromptRegistry()}
}

// Tools returns the tool registry.
func (s *Server) Tools() *ToolRegistry { return s.tools }

// AddResource registers a concrete resource.
func (s *Server) AddResource(r Resource) error { return s.resources.add(r) }

// AddResourceTemplate registers a resource template.
func (s *Server) AddResourceTemplate(t ResourceTemplate) error { return s.resources.addTemplate(t) }

// SetAfterCall installs a hook that sees every result a tool handler
// returns and may replace it — State Sync prepends its invalidation block
// and publishes notifications this way. Without a hook (State Sync off)
// the call path runs no extra code.
func (s *Server) SetAfterCall(fn func(ctx context.Context, call *ToolCall, res *protocol.CallToolResult) *protocol.CallToolResult) {
	s.afterCall = fn
}

// SetAmbiguousTool sets how a tools/call of a bare name that several
// tools share is answered (the runtime answers with an AMBIGUOUS_TOOL
// envelope); the default is a plain isError text result.
func (s *Server) SetAmbiguousTool(fn func(ctx context.Context, name string, candidates []string) *protocol.CallToolResult) {
	s.ambiguous = fn
}

func (s *Server) ambiguousTool(ctx context.Context, name string, candidates []string) *protocol.CallToolResult {
	if s.ambiguous != nil {
		return s.ambiguous(ctx, name, candidates)
	}
	return protocol.ToolError(fmt.Sprintf("tool name %q is ambiguous; call one of: %s", name, strings.Join(candidates, ", ")))
}

// SetResourceLister adds the resources that lister enumerates to
// resources/list, before the concrete resources.
func (s *Server) SetResourceLister(lister ResourceLister) { s.lister = lister }

// AddPrompt registers a prompt.
func (s *Server) AddPrompt(p Prompt) error { return s.prompts.add(p) }

// Initialize answers initialize. The transport creates the client session
// from the returned params and negotiated version.
func (s *Server) Initialize(params json.RawMessage) (*protocol.InitializeParams, *protocol.InitializeResult, *protocol.Error) {
	var p protocol.InitializeParams
	if perr := decodeParams(params, &p); perr != nil {
		return nil, nil, perr
	}
	if p.ProtocolVersion == "" {
		return nil, nil, protocol.Errorf(protocol.CodeInvalidParams, `invalid params: "protocolVersion" is required`)
	}
	return &p, &protocol.InitializeResult{
		ProtocolVersion: protocol.Negotiate(p.ProtocolVersion),
		Capabilities:    s.capabilities(),
		ServerInfo:      s.Info(),
		Instructions:    s.opts.Instructions,
	}, nil
}

// Info is the server's name, title and version, as initialize and every
// modern result give it.
func (s *Server) Info() protocol.Implementation {
	return protocol.Implementation{Name: s.opts.Name, Title: s.opts.Title, Version: s.opts.Version}
}

// capabilities advertises exactly what the server serves
// (basic/lifecycle): clients skip what is not advertised. Prompts and
// completions are served when the server has its own or a Federated
// surface is installed, whose lists change at run time: then prompts
// and resources say listChanged, and clients are told. (Without either,
// prompts/list and completion/complete still answer, with nothing.) The resources'
// listChanged covers what resources/list holds besides the tenant's
// own state entities, whose changes State Sync announces to their
// subscribers (notifications/resources/updated) instead of telling
// every client session of every tenant.
func (s *Server) capabilities() protocol.ServerCapabilities {
	fed := s.fed != nil
	c := protocol.ServerCapabilities{
		// listChanged: upstream servers' tools come and go at run time
		// (admin API, discovery), and clients are told.
		Tools:     &protocol.ToolsCapability{ListChanged: true},
		Resources: &protocol.ResourcesCapability{Subscribe: true, ListChanged: fed},
		Logging:   &struct{}{},
	}
	if s.servesPrompts() {
		c.Prompts = &protocol.PromptsCapability{ListChanged: fed || s.opts.PromptsChange}
	}
	if s.servesCompletions() {
		c.Completions = &struct{}{}
	}
	return c
}

// discover answers server/discover (server/discover): the revisions a
// modern request may name, and what the server serves to a modern
// client (ModernCapabilities).
func (s *Server) discover() *protocol.DiscoverResult {
	return &protocol.DiscoverResult{
		SupportedVersions: protocol.ModernVersions(),
		Capabilities:      s.ModernCapabilities(),
		Instructions:      s.opts.Instructions,
	}
}

// ModernCapabilities is what the server serves to a client of the modern
// era, whose notifications travel on subscriptions/listen streams
// (basic/patterns/subscriptions). It differs from the legacy answer in
// two ways. prompts is always declared, since prompts/list always
// answers (with nothing when no prompt is served); the legacy answer
// keeps it to servers with prompts, as it always has. And
// resources.listChanged is always declared: a listen is scoped to its
// tenant, so a change of the tenant's entries (created, deleted) is told
// to that tenant's listeners alone, where the legacy era would have to
// tell every client session of every tenant.
func (s *Server) ModernCapabilities() protocol.ServerCapabilities {
	c := s.capabilities()
	c.Resources = &protocol.ResourcesCapability{Subscribe: true, ListChanged: true}
	if c.Prompts == nil {
		c.Prompts = &protocol.PromptsCapability{}
	}
	return c
}

func (s *Server) hasCompletions() bool {
	for _, p := range s.prompts.list() {
		if s.prompts.get(p.Name).Complete != nil {
			return true
		}
	}
	for _, t := range s.resources.listTemplates() {
		if s.resources.template(t.URITemplate).Complete != nil {
			return true
		}
	}
	return false
}

// Handle answers one request: Prepare and Run in one, for a caller that
// needs neither the Outcome nor to know beforehand whether the call is
// long-running (the transport calls the pair).
func (s *Server) Handle(ctx context.Context, req *Request) (any, error) {
	p := s.Prepare(req)
	res, _, err := s.Run(ctx, req, &p)
	return res, err
}

// Run answers req, prepared as p. The result is marshalled by the
// transport; an error that is not a *protocol.Error is reported as
// -32603. The Outcome says which tool a tools/call ran, for the request
// log.
func (s *Server) Run(ctx context.Context, req *Request, p *Prepared) (any, Outcome, error) {
	if p.call {
		return s.callTool(ctx, req, p)
	}
	res, err := s.handle(ctx, req)
	return res, Outcome{}, err
}

// handle answers every method but tools/call.
func (s *Server) handle(ctx context.Context, req *Request) (any, error) {
	switch req.Method {
	case protocol.MethodPing:
		return struct{}{}, nil
	case protocol.MethodToolsList:
		return s.listTools(req.Params)
	case protocol.MethodResourcesList:
		return s.listResources(ctx, req)
	case protocol.MethodResourcesTemplatesList:
		return s.listTemplates(req.Params)
	case protocol.MethodResourcesRead:
		return s.readResource(ctx, req)
	case protocol.MethodResourcesSubscribe, protocol.MethodResourcesUnsubscribe:
		return s.subscription(ctx, req)
	case protocol.MethodPromptsList:
		return s.listPrompts(req.Params)
	case protocol.MethodPromptsGet:
		return s.getPrompt(ctx, req)
	case protocol.MethodLoggingSetLevel:
		return s.setLevel(req)
	case protocol.MethodCompletionComplete:
		return s.complete(ctx, req)
	case protocol.MethodInitialize:
		return nil, protocol.Errorf(protocol.CodeInvalidRequest, "invalid request: the client session is already initialized")
	case protocol.MethodServerDiscover:
		// A method of the modern era only: a legacy client session has
		// initialize's answer (basic/versioning, "Dual-era").
		if req.Session != nil && protocol.IsModernVersion(req.Session.ProtocolVersion()) {
			return s.discover(), nil
		}
	}
	return nil, methodNotFound(req.Method)
}

// decodeParams decodes params into v; absent params decode as {}.
func decodeParams(raw json.RawMessage, v any) *protocol.Error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %s", describeJSONError(err))
	}
	return nil
}

// describeJSONError names the offending field of a decode error.
func describeJSONError(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
		return fmt.Sprintf("%q must be %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	return err.Error()
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	case "float64", "float32", "int", "int64", "int32", "uint", "uint64":
		return "a number"
	}
	return goKind
}
