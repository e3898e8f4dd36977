package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// ErrResourceNotFound is returned by resource readers for a URI they do not
// know; it becomes JSON-RPC -32002 (server/resources, "Error Handling").
var ErrResourceNotFound = errors.New("resource not found")

// ResourceLister enumerates resources that are not registered one by one —
// the entities of the durable state — for resources/list, which lists
// them before the concrete resources. cursor is "" for the first page or
// a next cursor the lister returned; next is "" on the last page. A page
// holds at most limit items; one with fewer and a next cursor is allowed
// (the server asks again for the rest of its page). A cursor the lister
// does not recognise is reported as a *BadCursorError.
type ResourceLister interface {
	ListResources(ctx context.Context, s Session, cursor string, limit int) (items []protocol.Resource, next string, err error)
}

// BadCursorError reports a pagination cursor the server did not issue.
type BadCursorError struct{ Cursor string }

func (e *BadCursorError) Error() string { return fmt.Sprintf("unknown or expired cursor %q", e.Cursor) }

// Resource is a concrete resource with a fixed URI.
type Resource struct {
	protocol.Resource
	Read func(ctx context.Context, s Session) ([]protocol.ResourceContents, error)
}

// ResourceTemplate serves every URI its RFC 6570 template matches
// (simple {var} expansion, the level-1 form MCP servers use).
type ResourceTemplate struct {
	protocol.ResourceTemplate
	Read func(ctx context.Context, s Session, uri string, vars map[string]string) ([]protocol.ResourceContents, error)
	// Complete, if set, suggests values for a template variable
	// (completion/complete with ref/resource).
	Complete func(ctx context.Context, s Session, variable, prefix string) ([]string, error)

	parts []templatePart
}

type templatePart struct {
	literal  string
	variable string
}

func parseTemplate(t string) ([]templatePart, error) {
	var parts []templatePart
	for len(t) > 0 {
		open := strings.IndexByte(t, '{')
		if open < 0 {
			parts = append(parts, templatePart{literal: t})
			break
		}
		if open > 0 {
			parts = append(parts, templatePart{literal: t[:open]})
		}
		end := strings.IndexByte(t[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("uri template: unclosed '{'")
		}
		name := t[open+1 : open+end]
		if name == "" || strings.ContainsAny(name, "{+#./;?&=,!@|*:") {
			return nil, fmt.Errorf("uri template: only simple {name} variables are supported, got {%s}", name)
		}
		if n := len(parts); n > 0 && parts[n-1].variable != "" {
			return nil, fmt.Errorf("uri template: variables {%s} and {%s} must be separated by a literal", parts[n-1].variable, name)
		}
		parts = append(parts, templatePart{variable: name})
		t = t[open+end+1:]
	}
	return parts, nil
}

// match extracts the variables of uri, or reports false. A variable spans
// up to the next literal and is never empty; values are percent-decoded.
func (rt *ResourceTemplate) match(uri string) (map[string]string, bool) {
	vars := make(map[string]string, len(rt.parts))
	rest := uri
	for i, p := range rt.parts {
		if p.variable == "" {
			if !strings.HasPrefix(rest, p.literal) {
				return nil, false
			}
			rest = rest[len(p.literal):]
			continue
		}
		end := len(rest)
		if i+1 < len(rt.parts) {
			end = strings.Index(rest, rt.parts[i+1].literal)
		} else if strings.Contains(rest, "/") {
			return nil, false
		}
		if end <= 0 {
			return nil, false
		}
		v, err := url.PathUnescape(rest[:end])
		if err != nil {
			return nil, false
		}
		vars[p.variable] = v
		rest = rest[end:]
	}
	return vars, rest == ""
}

// ResourceRegistry holds concrete resources and templates.
type ResourceRegistry struct {
	mu        sync.RWMutex
	resources []*Resource
	byURI     map[string]*Resource
	// templates are in registration order, the order a URI is matched in.
	templates []*ResourceTemplate
	// listed and listedTemplates are what resources/list and
	// resources/templates/list show of them, sorted by URI and URI
	// template (docs/adr/0052-list-order-and-cursors.md); replaced,
	// never modified, by add and addTemplate.
	listed          []protocol.Resource
	listedTemplates []protocol.ResourceTemplate
}

// newResourceRegistry returns an empty registry; its lists are empty, not
// nil, so that the list results have their arrays.
func newResourceRegistry() *ResourceRegistry {
	return &ResourceRegistry{byURI: map[string]*Resource{}, listed: []protocol.Resource{}, listedTemplates: []protocol.ResourceTemplate{}}
}

func (r *ResourceRegistry) add(res Resource) error {
	if res.URI == "" || res.Name == "" || res.Read == nil {
		return fmt.Errorf("register resource %q: uri, name and Read are required", res.URI)
	}
	if _, err := url.Parse(res.URI); err != nil {
		return fmt.Errorf("register resource %q: %w", res.URI, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byURI[res.URI]; dup {
		return fmt.Errorf("register resource %q: already registered", res.URI)
	}
	r.resources = append(r.resources, &res)
	r.byURI[res.URI] = &res
	i, _ := slices.BinarySearchFunc(r.listed, res.URI, func(l protocol.Resource, uri string) int { return strings.Compare(l.URI, uri) })
	r.listed = slices.Insert(slices.Clone(r.listed), i, res.Resource)
	return nil
}

func (r *ResourceRegistry) addTemplate(t ResourceTemplate) error {
	if t.URITemplate == "" || t.Name == "" || t.Read == nil {
		return fmt.Errorf("register resource template %q: uriTemplate, name and Read are required", t.URITemplate)
	}
	parts, err := parseTemplate(t.URITemplate)
	if err != nil {
		return fmt.Errorf("register resource template %q: %w", t.URITemplate, err)
	}
	t.parts = parts
	r.mu.Lock()
	defer r.mu.Unlock()
	// A second template of the same text could never be read or
	// completed (template finds the first), and the list's keys must be
	// unique.
	i, dup := slices.BinarySearchFunc(r.listedTemplates, t.URITemplate, func(l protocol.ResourceTemplate, uri string) int {
		return strings.Compare(l.URITemplate, uri)
	})
	if dup {
		return fmt.Errorf("register resource template %q: already registered", t.URITemplate)
	}
	r.templates = append(r.templates, &t)
	r.listedTemplates = slices.Insert(slices.Clone(r.listedTemplates), i, t.ResourceTemplate)
	return nil
}

// list returns the concrete resources sorted by URI; the caller must not
// modify it.
func (r *ResourceRegistry) list() []protocol.Resource {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.listed
}

// listTemplates returns the templates sorted by URI template; the caller
// must not modify it.
func (r *ResourceRegistry) listTemplates() []protocol.ResourceTemplate {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.listedTemplates
}

// read serves uri from a concrete resource, else the first matching template.
func (r *ResourceRegistry) read(ctx context.Context, s Session, uri string) ([]protocol.ResourceContents, error) {
	r.mu.RLock()
	res := r.byURI[uri]
	templates := r.templates
	r.mu.RUnlock()
	if res != nil {
		return res.Read(ctx, s)
	}
	for _, t := range templates {
		if vars, ok := t.match(uri); ok {
			return t.Read(ctx, s, uri, vars)
		}
	}
	return nil, ErrResourceNotFound
}

func (r *ResourceRegistry) template(uriTemplate string) *ResourceTemplate {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, t := range r.templates {
		if t.URITemplate == uriTemplate {
			return t
		}
	}
	return nil
}

// serves reports whether uri is one of the registry's: a concrete
// resource, or a URI one of its templates matches.
func (r *ResourceRegistry) serves(uri string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.byURI[uri] != nil {
		return true
	}
	for _, t := range r.templates {
		if _, ok := t.match(uri); ok {
			return true
		}
	}
	return false
}
