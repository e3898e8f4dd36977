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
	// names): snapshots the server does not modify, with no listed name,
	// URI or URI template twice. Sorted by it, bytewise, they are served
	// as they are; otherwise the server sorts a copy for each request
	// (docs/adr/0052-list-order-and-cursors.md).
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
	// Subscribe subscribes subscriber (a client session's id, or a
	// listen stream's key) to uri on the upstream that offers it;
	// handled is false when none does. Unsubscribe undoes it, and does
	// nothing for a URI subscriber did not subscribe to through it.
	Subscribe(ctx context.Context, subscriber, uri string) (handled bool, err error)
	Unsubscribe(ctx context.Context, subscriber, uri string)
}

// SubscribeUpstream subscribes a listen stream, named by key, to uri on
// the upstream that offers it (docs/adr/0054-listen-across-replicas.md);
// handled is false when none does, or there are no upstreams.
// UnsubscribeUpstream undoes it.
func (s *Server) SubscribeUpstream(ctx context.Context, key, uri string) (handled bool, err error) {
	if s.fed == nil || s.resources.serves(uri) {
		return false, nil
	}
	return s.fed.Subscribe(ctx, key, uri)
}

// UnsubscribeUpstream undoes SubscribeUpstream.
func (s *Server) UnsubscribeUpstream(ctx context.Context, key, uri string) {
	if s.fed != nil {
		s.fed.Unsubscribe(ctx, key, uri)
	}
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
func (s *Server) servesPrompts() bool {
	return s.fed != nil || s.opts.PromptsChange || s.prompts.len() > 0
}
func (s *Server) servesCompletions() bool { return s.fed != nil || s.hasCompletions() }

// served is a list as served: the server's own items (group ""), then
// the upstreams' (upstreamGroup), each part sorted by name — the order of
// their keys (docs/adr/0052-list-order-and-cursors.md).
type served[T any] struct {
	items []T
	own   int // items[:own] are the server's own
	name  func(*T) string
}

// key is the position of items[i].
func (l served[T]) key(i int) listKey {
	k := listKey{name: l.name(&l.items[i])}
	if i >= l.own {
		k.group = upstreamGroup
	}
	return k
}

// serve is the list of own, sorted by name, then of the items of theirs
// that skip does not refuse, sorted by name.
func serve[T any](own, theirs []T, name func(*T) string, skip func(*T) bool) served[T] {
	l := served[T]{items: own, own: len(own), name: name}
	if len(theirs) == 0 {
		return l
	}
	theirs = sortedByKey(theirs, func(it *T) listKey { return listKey{name: name(it)} })
	l.items = make([]T, len(own), len(own)+len(theirs))
	copy(l.items, own)
	for i := range theirs {
		if !skip(&theirs[i]) {
			l.items = append(l.items, theirs[i])
		}
	}
	return l
}

func promptName(p *protocol.Prompt) string            { return p.Name }
func resourceURI(r *protocol.Resource) string         { return r.URI }
func templateURI(t *protocol.ResourceTemplate) string { return t.URITemplate }

// allPrompts is the server's prompts, then the upstreams' whose listed
// names are not the server's own.
func (s *Server) allPrompts() served[protocol.Prompt] {
	var theirs []protocol.Prompt
	if s.fed != nil {
		theirs = s.fed.Prompts()
	}
	return serve(s.prompts.list(), theirs, promptName, func(p *protocol.Prompt) bool { return s.prompts.get(p.Name) != nil })
}

// concreteResources is the server's concrete resources, then the
// upstreams' whose URIs are not the server's own.
func (s *Server) concreteResources() served[protocol.Resource] {
	var theirs []protocol.Resource
	if s.fed != nil {
		theirs = s.fed.Resources()
	}
	return serve(s.resources.list(), theirs, resourceURI, func(r *protocol.Resource) bool { return s.resources.serves(r.URI) })
}

// allTemplates is the server's resource templates, then the upstreams'
// that are not the server's own.
func (s *Server) allTemplates() served[protocol.ResourceTemplate] {
	var theirs []protocol.ResourceTemplate
	if s.fed != nil {
		theirs = s.fed.ResourceTemplates()
	}
	return serve(s.resources.listTemplates(), theirs, templateURI, func(t *protocol.ResourceTemplate) bool {
		return s.resources.template(t.URITemplate) != nil
	})
}

// methodNotFound answers a method the server does not serve.
func methodNotFound(method string) *protocol.Error {
	return protocol.Errorf(protocol.CodeMethodNotFound, "method not found: %s", method)
}
