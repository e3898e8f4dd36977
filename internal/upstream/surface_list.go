package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
)

// surfaceLimits bound one server's prompt, resource and resource-template
// lists.
type surfaceLimits struct {
	maxPrompts   int   // federation.maxPromptsPerUpstream
	maxResources int   // federation.maxResourcesPerUpstream, each of resources and templates
	maxBytes     int64 // each list, all its pages together (federation.maxToolListBytes)
	// reserved are the URI schemes the gateway serves itself, lower case.
	reserved []string
}

// surfaceListing is one discovery of a server's surface. keep[i] is set
// for a list (prompts, resources, templates) whose listing failed in a
// way that may pass: the last list of that kind stays in service.
type surfaceListing struct {
	sf   serverSurface
	keep [3]bool
	err  error // the first such failure, for the log
}

// Indexes of the three lists in serverSurface.problems and
// surfaceListing.keep.
const (
	listPrompts = iota
	listResources
	listTemplates
)

// capabilities is the server's capabilities, never nil.
func (c *conn) capabilities() *mcp.ServerCapabilities {
	if c.init == nil || c.init.Capabilities == nil {
		return &mcp.ServerCapabilities{}
	}
	return c.init.Capabilities
}

// listSurface lists the server's prompts, resources and resource
// templates, each kind only when the server advertises it (the
// capabilities are the session's, basic/lifecycle). A list over a bound
// is refused whole, as a tool list is, and reported; unlike the tool
// list, it does not put the server in error: its tools and its other
// lists stay in service.
func (c *conn) listSurface(ctx context.Context, lim surfaceLimits) surfaceListing {
	var l surfaceListing
	caps := c.capabilities()
	l.sf.subscribe = caps.Resources != nil && caps.Resources.Subscribe
	l.sf.complete = caps.Completions != nil
	if caps.Prompts != nil {
		list, err := listPages(ctx, c, "prompts/list", "prompt list", "prompts", "federation.maxPromptsPerUpstream", lim.maxPrompts, lim.maxBytes,
			func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
				res, err := c.session.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
				if err != nil {
					return nil, "", err
				}
				return res.Prompts, res.NextCursor, nil
			})
		if l.failed(listPrompts, kindPrompt, err) {
			l.sf.prompts, l.sf.problems[listPrompts] = convertPrompts(c.cfg, list)
		}
	}
	if caps.Resources == nil {
		return l
	}
	resources, err := listPages(ctx, c, "resources/list", "resource list", "resources", "federation.maxResourcesPerUpstream", lim.maxResources, lim.maxBytes,
		func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
			res, err := c.session.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.Resources, res.NextCursor, nil
		})
	if l.failed(listResources, kindResource, err) {
		l.sf.resources, l.sf.problems[listResources] = convertResources(c.cfg, resources, lim.reserved)
	}
	templates, err := listPages(ctx, c, "resources/templates/list", "resource template list", "resource templates", "federation.maxResourcesPerUpstream", lim.maxResources, lim.maxBytes,
		func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
			res, err := c.session.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.ResourceTemplates, res.NextCursor, nil
		})
	if l.failed(listTemplates, kindTemplate, err) {
		l.sf.templates, l.sf.problems[listTemplates] = convertTemplates(c.cfg, templates, lim.reserved)
	}
	return l
}

// failed records the outcome of listing list i and reports whether it
// succeeded (the caller converts it). A list refused over a bound is
// left out, with the reason as its problem; any other failure keeps the
// last list.
func (l *surfaceListing) failed(i int, kind string, err error) (ok bool) {
	var f *failure
	switch {
	case err == nil:
		return true
	case errors.As(err, &f) && errors.Is(f, errLimit):
		l.sf.problems[i] = []SurfaceProblem{{Kind: kind, Reason: f.msg}}
	default:
		l.keep[i] = true
		if l.err == nil {
			l.err = err
		}
	}
	return false
}

// listPages walks a paginated list, each page under requestTimeoutMs,
// with one byte budget for the whole walk (counted as the answers are
// read) and at most maxItems items. key is the configuration key of
// maxItems, for the message.
func listPages[T any](ctx context.Context, c *conn, op, what, noun, key string, maxItems int, maxBytes int64,
	page func(ctx context.Context, cursor string) ([]T, string, error)) ([]T, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ex := (&exchange{}).withBudget(maxBytes, what, cancel)
	ctx = withExchange(ctx, ex)
	var items []T
	cursor := ""
	for n := 0; ; n++ {
		if n > maxListPages {
			return nil, permanent(&Error{Kind: ErrInvocationFailed, Server: c.cfg.ID, Op: op,
				Err: &failure{kind: errLimit, msg: fmt.Sprintf("the %s has more than %d pages", what, maxListPages)}})
		}
		rctx, rcancel := context.WithTimeout(ctx, c.cfg.RequestTimeout())
		got, next, err := page(rctx, cursor)
		if err != nil {
			err = c.requestError(rctx, ex, op, err)
		}
		rcancel()
		if err != nil {
			return nil, err
		}
		items = append(items, got...)
		if len(items) > maxItems {
			return nil, permanent(&Error{Kind: ErrInvocationFailed, Server: c.cfg.ID, Op: op,
				Err: &failure{kind: errLimit, msg: fmt.Sprintf("the server lists more than %d %s (%s)", maxItems, noun, key)}})
		}
		if next == "" {
			return items, nil
		}
		cursor = next
	}
}

// convertPrompts turns a server's prompt list into Prompts sorted by
// Canonical, leaving out (and reporting) prompts without a usable name
// and names the list repeats.
func convertPrompts(cfg Config, in []*mcp.Prompt) ([]Prompt, []SurfaceProblem) {
	var (
		out      []Prompt
		problems []SurfaceProblem
		names    = map[string]bool{}
		canon    = map[string]bool{}
	)
	for _, p := range in {
		if p == nil {
			continue
		}
		canonical := CanonicalName(cfg.ID, p.Name)
		var listed []byte
		var err error
		switch {
		case p.Name == "":
			err = errors.New("the prompt has no name")
		case len(p.Name) > MaxToolNameBytes:
			err = fmt.Errorf("the name is %d bytes, more than the %d a name may have", len(p.Name), MaxToolNameBytes)
		case names[p.Name]:
			err = errors.New("the server lists this name more than once")
		case canon[canonical]:
			err = fmt.Errorf("canonical name %s is taken by another prompt", canonical)
		default:
			listed, err = json.Marshal(p)
		}
		if err != nil {
			problems = append(problems, SurfaceProblem{Kind: kindPrompt, Name: logging.Field(p.Name), Reason: err.Error()})
			continue
		}
		names[p.Name], canon[canonical] = true, true
		out = append(out, Prompt{Server: cfg.ID, Name: p.Name, Canonical: canonical, Listed: listed})
	}
	slices.SortFunc(out, func(a, b Prompt) int { return strings.Compare(a.Canonical, b.Canonical) })
	return out, problems
}

// convertResources turns a server's resource list into Resources sorted
// by URI, leaving out (and reporting) unusable URIs, URIs in a reserved
// scheme and URIs the list repeats. The order is the URIs', not the
// server's, so a server that lists in another order each time does not
// announce a change each time.
func convertResources(cfg Config, in []*mcp.Resource, reserved []string) ([]Resource, []SurfaceProblem) {
	var (
		out      []Resource
		problems []SurfaceProblem
		seen     = map[string]bool{}
	)
	for _, r := range in {
		if r == nil {
			continue
		}
		var listed []byte
		err := checkURI("URI", r.URI, false, reserved)
		switch {
		case err != nil:
		case seen[r.URI]:
			err = errors.New("the server lists this URI more than once")
		default:
			listed, err = json.Marshal(r)
		}
		if err != nil {
			problems = append(problems, SurfaceProblem{Kind: kindResource, Name: logging.Field(r.URI), Reason: err.Error()})
			continue
		}
		seen[r.URI] = true
		out = append(out, Resource{Server: cfg.ID, URI: r.URI, Listed: listed})
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.URI, b.URI) })
	return out, problems
}

// convertTemplates is convertResources for resource templates, which
// must also parse as RFC 6570 URI templates.
func convertTemplates(cfg Config, in []*mcp.ResourceTemplate, reserved []string) ([]ResourceTemplate, []SurfaceProblem) {
	var (
		out      []ResourceTemplate
		problems []SurfaceProblem
		seen     = map[string]bool{}
	)
	for _, t := range in {
		if t == nil {
			continue
		}
		var (
			listed []byte
			tmpl   *uritemplate.Template
		)
		err := checkURI("URI template", t.URITemplate, true, reserved)
		switch {
		case err != nil:
		case seen[t.URITemplate]:
			err = errors.New("the server lists this URI template more than once")
		default:
			if tmpl, err = uritemplate.New(t.URITemplate); err != nil {
				err = errors.New("not a valid RFC 6570 URI template")
				break
			}
			listed, err = json.Marshal(t)
		}
		if err != nil {
			problems = append(problems, SurfaceProblem{Kind: kindTemplate, Name: logging.Field(t.URITemplate), Reason: err.Error()})
			continue
		}
		seen[t.URITemplate] = true
		out = append(out, ResourceTemplate{Server: cfg.ID, URITemplate: t.URITemplate, Listed: listed, re: tmpl.Regexp()})
	}
	slices.SortFunc(out, func(a, b ResourceTemplate) int { return strings.Compare(a.URITemplate, b.URITemplate) })
	return out, problems
}

// checkURI checks a resource's URI (a template's, with template set):
// present, at most MaxURIBytes, with a literal scheme that is not one of
// reserved.
func checkURI(what, uri string, template bool, reserved []string) error {
	switch {
	case uri == "":
		return fmt.Errorf("the %s is empty", what)
	case len(uri) > MaxURIBytes:
		return fmt.Errorf("the %s is %d bytes, more than the %d one may have", what, len(uri), MaxURIBytes)
	}
	scheme := URIScheme(uri)
	switch {
	case scheme == "" && template:
		return fmt.Errorf("the %s does not start with a literal scheme", what)
	case scheme == "":
		return fmt.Errorf("the %s has no scheme", what)
	case slices.Contains(reserved, scheme):
		return fmt.Errorf("%s: is a scheme of the gateway's own resources, which upstreams cannot offer", scheme)
	}
	return nil
}

// URIScheme is uri's scheme in lower case (RFC 3986 section 3.1: a letter,
// then letters, digits, '+', '-' or '.', before the first ':'), or ""
// when it has none.
func URIScheme(uri string) string {
	i := strings.IndexByte(uri, ':')
	if i <= 0 {
		return ""
	}
	for j := 0; j < i; j++ {
		c := uri[j]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return ""
		}
	}
	return strings.ToLower(uri[:i])
}
