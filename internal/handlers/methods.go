package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

func (s *Server) listTools(params []byte) (any, error) {
	var p protocol.PaginatedParams
	if perr := decodeParams(params, &p); perr != nil {
		return nil, perr
	}
	set := s.tools.snap.Load()
	start, end, next, perr := page(kindTools, len(set.keys), func(i int) listKey { return set.keys[i] }, p.Cursor, s.opts.PageSize)
	if perr != nil {
		return nil, perr
	}
	return &protocol.ListToolsResult{Tools: set.listed[start:end], NextCursor: next}, nil
}

// callToolParams reads tools/call params with the zero-copy member scanner
// rather than reflection: this is the hot path. name is the raw JSON string.
func callToolParams(raw []byte) (name, args, meta []byte, perr *protocol.Error) {
	if len(raw) == 0 {
		return nil, nil, nil, protocol.Errorf(protocol.CodeInvalidParams, `invalid params: "name" is required`)
	}
	keys := [...]string{"name", "arguments", "_meta"}
	var v [len(keys)]json.RawMessage
	if err := protocol.LookupMembers(raw, keys[:], v[:]); err != nil {
		return nil, nil, nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %v", err)
	}
	if len(v[0]) < 3 || v[0][0] != '"' {
		return nil, nil, nil, protocol.Errorf(protocol.CodeInvalidParams, `invalid params: "name" must be a non-empty string`)
	}
	// Arguments of the wrong shape are left to schema validation: the model
	// wrote them, so it gets an isError result it can correct (2025-11-25).
	if m := v[2]; len(m) > 0 && string(m) != "null" && m[0] != '{' {
		return nil, nil, nil, protocol.Errorf(protocol.CodeInvalidParams, `invalid params: "_meta" must be an object`)
	}
	return v[0], v[1], v[2], nil
}

// callTool runs a prepared tools/call and says which tool answered and
// whether with an isError result.
func (s *Server) callTool(ctx context.Context, req *Request, p *Prepared) (any, Outcome, error) {
	if p.perr != nil {
		return nil, Outcome{}, p.perr
	}
	args, meta, t := p.args, p.meta, p.tool
	var out Outcome
	if t == nil {
		n := p.bareName
		switch cands := p.bare; len(cands) {
		case 0:
			// Unknown tool is a protocol error, not a tool result
			// (server/tools). The name is the caller's, of any length:
			// it is echoed bounded, as a log field would be.
			return nil, out, protocol.Errorf(protocol.CodeInvalidParams, "unknown tool: %s", logging.Field(n))
		case 1:
			t = cands[0]
		default:
			// A bare name several upstream servers offer: the model must
			// pick one, so it gets the candidates (INV-MCP-ECO-003).
			names := make([]string, len(cands))
			for i, c := range cands {
				names[i] = c.exposed
			}
			out.ToolError = true
			return s.ambiguousTool(ctx, n, names), out, nil
		}
	}
	out.Tool = t.Name
	call := &ToolCall{Name: t.Name, Arguments: args, Session: req.Session, Peer: req.Peer}
	if t.Precheck != nil {
		if res := t.Precheck(ctx, call); res != nil {
			out.ToolError = res.IsError
			return res, out, nil
		}
	}
	// 2025-11-25: input validation failures are tool results the model can
	// correct, not protocol errors.
	if msg := t.schema.validate(args); msg != "" {
		out.ToolError = true
		msg = fmt.Sprintf("%s: %s", t.exposed, msg)
		if t.Invalid != nil {
			return t.Invalid(ctx, call, msg), out, nil
		}
		return protocol.ToolError(msg), out, nil
	}
	if len(meta) > 0 {
		keys := [...]string{"progressToken"}
		var tok [1]json.RawMessage
		if err := protocol.LookupMembers(meta, keys[:], tok[:]); err == nil && isProgressToken(tok[0]) {
			call.progressToken = tok[0]
		}
	}
	v, err := s.rounds(ctx, req, func(ctx context.Context) (any, error) { return t.Handler(ctx, call) })
	if ir, ok := v.(*protocol.InputRequiredResult); ok && err == nil {
		return ir, out, nil
	}
	res, _ := v.(*protocol.CallToolResult)
	if err != nil {
		// Only a *protocol.Error returned as such is a JSON-RPC error; one
		// wrapped inside another error (a client's answer to sampling, say)
		// is part of the tool's failure and goes to the model.
		if perr, ok := err.(*protocol.Error); ok {
			return nil, out, perr
		}
		res = protocol.ToolError(err.Error())
	}
	if res == nil {
		return nil, out, fmt.Errorf("tool %s returned no result", t.Name)
	}
	if s.afterCall != nil {
		res = s.afterCall(ctx, call, res)
	}
	if res.Content == nil {
		res.Content = []protocol.Content{}
	}
	out.ToolError = res.IsError
	return res, out, nil
}

// isProgressToken accepts the token types MCP allows: string or integer.
func isProgressToken(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '"' || raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// dynamicCursor prefixes the cursors of the ResourceLister. A
// resources/list cursor is either dynamicCursor and the lister's own
// cursor (the walk is still in the lister's resources) or a position in
// the concrete resources (the lister is done; see page).
const dynamicCursor = "d:"

// listResources lists the lister's resources first, then the concrete
// ones: the server's own, then the upstreams' (Federated). The lister
// enumerates the durable state most recently updated first, and a client
// may stop after any page (server/utilities/pagination) — most read only
// the first — so the first page is what changed last, not the fixed
// resources a client can also find by name. Every page but the last is
// full: where the lister's resources end, the concrete resources fill
// the rest of the page.
func (s *Server) listResources(ctx context.Context, req *Request) (any, error) {
	var p protocol.PaginatedParams
	if perr := decodeParams(req.Params, &p); perr != nil {
		return nil, perr
	}
	var items []protocol.Resource
	staticCursor := p.Cursor
	if s.lister != nil {
		cursor, inLister := "", p.Cursor == nil
		if p.Cursor != nil {
			cursor, inLister = strings.CutPrefix(*p.Cursor, dynamicCursor)
		}
		if inLister {
			var next string
			var err error
			if items, next, err = s.listDynamic(ctx, req.Session, cursor); err != nil {
				return nil, err
			}
			if next != "" {
				return &protocol.ListResourcesResult{Resources: items, NextCursor: dynamicCursor + next}, nil
			}
			staticCursor = nil
		}
	}
	all := s.concreteResources()
	start, end, next, perr := page(kindResources, len(all.items), all.key, staticCursor, s.opts.PageSize-len(items))
	if perr != nil {
		return nil, perr
	}
	items = append(items, all.items[start:end]...)
	if items == nil {
		items = []protocol.Resource{}
	}
	return &protocol.ListResourcesResult{Resources: items, NextCursor: next}, nil
}

// listDynamic returns up to PageSize of the lister's resources from
// cursor and the lister's next cursor ("" when it has no more). A lister
// may return fewer than it was asked for with a next cursor (it bounds
// its own queries); it is asked again, so that a page is short only
// where the lister's resources end.
func (s *Server) listDynamic(ctx context.Context, session Session, cursor string) ([]protocol.Resource, string, error) {
	var items []protocol.Resource
	for next := cursor; ; {
		got, n, err := s.lister.ListResources(ctx, session, next, s.opts.PageSize-len(items))
		var bad *BadCursorError
		if errors.As(err, &bad) {
			return nil, "", protocol.Errorf(protocol.CodeInvalidParams, "invalid params: unknown or expired cursor %q", dynamicCursor+cursor)
		}
		if err != nil {
			return nil, "", fmt.Errorf("list resources: %w", err)
		}
		items = append(items, got...)
		// len(got) == 0 with a next cursor would never end: give the
		// client the cursor rather than loop.
		if n == "" || len(items) >= s.opts.PageSize || len(got) == 0 {
			return items, n, nil
		}
		next = n
	}
}

func (s *Server) listTemplates(params []byte) (any, error) {
	var p protocol.PaginatedParams
	if perr := decodeParams(params, &p); perr != nil {
		return nil, perr
	}
	all := s.allTemplates()
	start, end, next, perr := page(kindTemplates, len(all.items), all.key, p.Cursor, s.opts.PageSize)
	if perr != nil {
		return nil, perr
	}
	return &protocol.ListResourceTemplatesResult{ResourceTemplates: all.items[start:end], NextCursor: next}, nil
}

func uriParam(raw []byte) (string, *protocol.Error) {
	var p protocol.URIParams
	if perr := decodeParams(raw, &p); perr != nil {
		return "", perr
	}
	if p.URI == "" {
		return "", protocol.Errorf(protocol.CodeInvalidParams, `invalid params: "uri" is required`)
	}
	return p.URI, nil
}

func (s *Server) readResource(ctx context.Context, req *Request) (any, error) {
	uri, perr := uriParam(req.Params)
	if perr != nil {
		return nil, perr
	}
	v, err := s.rounds(ctx, req, func(ctx context.Context) (any, error) { return s.resources.read(ctx, req.Session, uri) })
	if ir, ok := v.(*protocol.InputRequiredResult); ok && err == nil {
		return ir, nil
	}
	if perr, ok := err.(*protocol.Error); ok {
		return nil, perr // the round's: its state or its input refused
	}
	contents, _ := v.([]protocol.ResourceContents)
	if errors.Is(err, ErrResourceNotFound) && s.fed != nil {
		// Not one of the server's own: an upstream's, if one offers it.
		res, handled, ferr := s.fed.ReadResource(ctx, req.Session, uri)
		if handled {
			return res, ferr
		}
	}
	if errors.Is(err, ErrResourceNotFound) {
		return nil, protocol.Errorf(protocol.CodeResourceNotFound, "resource not found: %s", uri).WithData(map[string]string{"uri": uri})
	}
	if err != nil {
		return nil, fmt.Errorf("read resource %s: %w", uri, err)
	}
	if contents == nil {
		contents = []protocol.ResourceContents{}
	}
	return &protocol.ReadResourceResult{Contents: contents}, nil
}

// maxSubscriptionURI bounds a subscribed URI (the common URL limit).
const maxSubscriptionURI = 2048

func (s *Server) subscription(ctx context.Context, req *Request) (any, error) {
	uri, perr := uriParam(req.Params)
	if perr != nil {
		return nil, perr
	}
	if req.Method == protocol.MethodResourcesUnsubscribe {
		req.Session.Unsubscribe(uri)
		if s.fed != nil {
			s.fed.Unsubscribe(ctx, req.Session.ID(), uri)
		}
		return struct{}{}, nil
	}
	// Subscriptions are kept per client session until it ends, so what a
	// client may keep there is bounded: a URI a browser would accept, with
	// a scheme. Patterns (stale://memory.*) need not name a resource.
	if len(uri) > maxSubscriptionURI {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: uri is %d bytes; at most %d", len(uri), maxSubscriptionURI)
	}
	if u, err := url.Parse(uri); err != nil || u.Scheme == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: uri %q is not an absolute URI", uri)
	}
	// An upstream's resource is subscribed on the upstream first, so a
	// refusal there leaves the session unsubscribed.
	upstream := false
	if s.fed != nil && !s.resources.serves(uri) {
		var err error
		if upstream, err = s.fed.Subscribe(ctx, req.Session.ID(), uri); err != nil {
			return nil, err
		}
	}
	if err := req.Session.Subscribe(uri); err != nil {
		if upstream {
			s.fed.Unsubscribe(ctx, req.Session.ID(), uri)
		}
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %v", err)
	}
	return struct{}{}, nil
}

func (s *Server) listPrompts(params []byte) (any, error) {
	var p protocol.PaginatedParams
	if perr := decodeParams(params, &p); perr != nil {
		return nil, perr
	}
	all := s.allPrompts()
	start, end, next, perr := page(kindPrompts, len(all.items), all.key, p.Cursor, s.opts.PageSize)
	if perr != nil {
		return nil, perr
	}
	return &protocol.ListPromptsResult{Prompts: all.items[start:end], NextCursor: next}, nil
}

func (s *Server) getPrompt(ctx context.Context, req *Request) (any, error) {
	var p protocol.GetPromptParams
	if perr := decodeParams(req.Params, &p); perr != nil {
		return nil, perr
	}
	pr := s.prompts.get(p.Name)
	if pr == nil && s.fed != nil {
		// The upstream checks its own required arguments.
		res, handled, err := s.fed.GetPrompt(ctx, req.Session, p.Name, p.Arguments)
		if handled {
			return res, err
		}
	}
	if pr == nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "unknown prompt: %q", p.Name)
	}
	for _, a := range pr.Arguments {
		if _, ok := p.Arguments[a.Name]; a.Required && !ok {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: prompt %s requires argument %q", pr.Name, a.Name)
		}
	}
	v, err := s.rounds(ctx, req, func(ctx context.Context) (any, error) { return pr.Get(ctx, req.Session, p.Arguments) })
	if ir, ok := v.(*protocol.InputRequiredResult); ok && err == nil {
		return ir, nil
	}
	if perr, ok := err.(*protocol.Error); ok {
		return nil, perr // the round's: its state or its input refused
	}
	if err != nil {
		return nil, fmt.Errorf("get prompt %s: %w", pr.Name, err)
	}
	res, _ := v.(*protocol.GetPromptResult)
	if res == nil {
		return nil, fmt.Errorf("prompt %s returned no result", pr.Name)
	}
	if res.Messages == nil {
		res.Messages = []protocol.PromptMessage{}
	}
	return res, nil
}

func (s *Server) setLevel(req *Request) (any, error) {
	var p protocol.SetLevelParams
	if perr := decodeParams(req.Params, &p); perr != nil {
		return nil, perr
	}
	if !p.Level.Valid() {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: unknown logging level %q", p.Level)
	}
	req.Session.SetLogLevel(p.Level)
	return struct{}{}, nil
}

// maxCompletionValues is the cap from server/utilities/completion.
const maxCompletionValues = 100

func (s *Server) complete(ctx context.Context, req *Request) (any, error) {
	var p protocol.CompleteParams
	if perr := decodeParams(req.Params, &p); perr != nil {
		return nil, perr
	}
	var (
		values []string
		err    error
	)
	switch p.Ref.Type {
	case protocol.RefPrompt, protocol.RefResource:
		if s.fed == nil || (p.Ref.Type == protocol.RefPrompt && s.prompts.get(p.Ref.Name) != nil) ||
			(p.Ref.Type == protocol.RefResource && s.resources.template(p.Ref.URI) != nil) {
			break
		}
		// Not the server's own: an upstream's, if one lists it.
		res, handled, err := s.fed.Complete(ctx, req.Session, &p)
		if handled {
			return res, err
		}
	}
	switch p.Ref.Type {
	case protocol.RefPrompt:
		pr := s.prompts.get(p.Ref.Name)
		if pr == nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "unknown prompt: %q", p.Ref.Name)
		}
		if pr.Complete != nil {
			values, err = pr.Complete(ctx, req.Session, p.Argument.Name, p.Argument.Value)
		}
	case protocol.RefResource:
		t := s.resources.template(p.Ref.URI)
		if t == nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "unknown resource template: %q", p.Ref.URI)
		}
		if t.Complete != nil {
			values, err = t.Complete(ctx, req.Session, p.Argument.Name, p.Argument.Value)
		}
	default:
		return nil, protocol.Errorf(protocol.CodeInvalidParams, `invalid params: ref.type must be "ref/prompt" or "ref/resource", got %q`, p.Ref.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("complete %s: %w", p.Argument.Name, err)
	}
	c := protocol.Completion{Values: values}
	if c.Values == nil {
		c.Values = []string{}
	}
	if len(c.Values) > maxCompletionValues {
		total := len(c.Values)
		c.Values, c.Total, c.HasMore = c.Values[:maxCompletionValues], &total, true
	}
	return &protocol.CompleteResult{Completion: c}, nil
}
