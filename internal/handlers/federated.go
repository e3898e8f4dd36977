package handlers

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Federated is the part of the surface a gateway's upstream servers
// provide: their prompts, resources and resource templates, merged over
// the servers (prompt names namespaced, one server per URI), and the
// requests that reach them. internal/federation implements it over
// internal/upstream.
//
// The server consults it after its own registries, so its own prompts,
// resources and templates win a name or a URI they share with it.
// Installing one advertises prompts and completions, and listChanged for
// prompts and resources (basic/lifecycle): upstreams come and go at run
// time, and their lists with them.
type Federated interface {
	// Prompts, Resources and ResourceTemplates return the merged lists
	// as they are listed (items with Raw set, prompts under their listed
	// names), in a stable order: snapshots the server does not modify.
	Prompts() []protocol.Prompt
	Resources() []protocol.Resource
	ResourceTemplates() []protocol.ResourceTemplate
	// GetPrompt answers prompts/get of a prompt it lists; handled is
	// false when it has none of that name.
	GetPrompt(ctx context.Context, s Session, name string, args map[string]string) (result any, handled bool, err error)
	// ReadResource answers resources/read of a URI an upstream offers
	// (listed, or matching a template); handled is false for any other.
	ReadResource(ctx context.Context, s Session, uri string) (result any, handled bool, err error)
	// Complete answers completion/complete for a prompt or a resource
	// template (or resource) it lists; handled is false otherwise.
	Complete(ctx context.Context, s Session, p *protocol.CompleteParams) (result any, handled bool, err error)
	// Subscribe subscribes s to uri on the upstream that offers it;
	// handled is false when none does. Unsubscribe undoes it, and does
	// nothing for a URI s did not subscribe to through it.
	Subscribe(ctx context.Context, s Session, uri string) (handled bool, err error)
	Unsubscribe(ctx context.Context, s Session, uri string)
}

// SetFederated installs the upstreams' surface; call it before serving.
func (s *Server) SetFederated(f Federated) { s.fed = f }

// ResourceSchemes returns the URI schemes of the server's own resources
// and resource templates, lower case and sorted: a gateway keeps
// upstreams out of them.
func (s *Server) ResourceSchemes() []string {
	var out []string
	for _, r := range s.resources.list() {
		if u, err := url.Parse(r.URI); err == nil && u.Scheme != "" {
			out = append(out, strings.ToLower(u.Scheme))
		}
	}
	for _, t := range s.resources.listTemplates() {
		if scheme, _, ok := strings.Cut(t.URITemplate, ":"); ok && scheme != "" && !strings.ContainsAny(scheme, "{}/") {
			out = append(out, strings.ToLower(scheme))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// servesPrompts and servesCompletions say whether the server answers
// prompts/* and completion/complete, as capabilities advertises.
func (s *Server) servesPrompts() bool     { return s.fed != nil || s.prompts.len() > 0 }
func (s *Server) servesCompletions() bool { return s.fed != nil || s.hasCompletions() }

// allPrompts is the server's prompts, then the upstreams' whose listed
// names are not the server's own.
func (s *Server) allPrompts() []protocol.Prompt {
	own := s.prompts.list()
	if s.fed == nil {
		return own
	}
	return appendUnless(own, s.fed.Prompts(), func(p protocol.Prompt) bool { return s.prompts.get(p.Name) != nil })
}

// concreteResources is the server's concrete resources, then the
// upstreams' whose URIs are not the server's own.
func (s *Server) concreteResources() []protocol.Resource {
	own := s.resources.list()
	if s.fed == nil {
		return own
	}
	return appendUnless(own, s.fed.Resources(), func(r protocol.Resource) bool { return s.resources.serves(r.URI) })
}

// allTemplates is the server's resource templates, then the upstreams'
// that are not the server's own.
func (s *Server) allTemplates() []protocol.ResourceTemplate {
	own := s.resources.listTemplates()
	if s.fed == nil {
		return own
	}
	return appendUnless(own, s.fed.ResourceTemplates(), func(t protocol.ResourceTemplate) bool {
		return s.resources.template(t.URITemplate) != nil
	})
}

// appendUnless appends to own the items of theirs that skip does not
// refuse, in a new slice when it adds any.
func appendUnless[T any](own, theirs []T, skip func(T) bool) []T {
	if len(theirs) == 0 {
		return own
	}
	out := make([]T, len(own), len(own)+len(theirs))
	copy(out, own)
	for _, it := range theirs {
		if !skip(it) {
			out = append(out, it)
		}
	}
	return out
}

// methodNotFound answers a method the server does not serve.
func methodNotFound(method string) *protocol.Error {
	return protocol.Errorf(protocol.CodeMethodNotFound, "method not found: %s", method)
}
