package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The rest of an upstream's surface: besides tools, a server may offer
// prompts, resources and resource templates, and completions for their
// arguments (server/prompts, server/resources, server/utilities/
// completion). The manager discovers them with the tools, merges them
// over the servers in service, and forwards prompts/get, resources/read,
// completion/complete and resource subscriptions to the server that
// offers the prompt or the resource.
//
//   - A prompt's canonical name is serverId.promptName, as a tool's is
//     (CanonicalName), so two servers' prompts never collide.
//   - A resource keeps the URI its server wrote: a URI is an identifier
//     the server gave it, which the resource's own content, links and
//     notifications repeat. So two servers can claim one URI. The rule
//     is that the server whose id sorts first offers it; the other's is
//     left out and named in that server's status (ResourceConflicts),
//     and logged without the URI. The same holds for two identical URI
//     templates. Ids are unique and sorted bytewise, so the winner does
//     not depend on which server connected first, and it is the same on
//     every replica.
//   - URIs in the schemes of the gateway's own resources
//     (Options.ReservedSchemes) are left out whatever server lists them:
//     an upstream must not shadow a tenant's state (memory://...).

// Defaults of the Options that bound an upstream's surface.
const (
	// DefaultMaxPromptsPerServer matches DefaultMaxToolsPerServer: a
	// prompt is as large as a tool, and as many are as useful.
	DefaultMaxPromptsPerServer = 1000
	// DefaultMaxResourcesPerServer bounds one server's resource list
	// and, separately, its resource-template list. Servers list files
	// and records as resources, so more than tools; a resource entry is
	// a few hundred bytes, and federation.maxToolListBytes bounds the
	// bytes of each list anyway.
	DefaultMaxResourcesPerServer = 5000
)

// Fixed bounds of an upstream's surface.
const (
	// MaxURIBytes bounds a resource's URI and a template's uriTemplate:
	// the common URL limit, and what a client may subscribe to.
	MaxURIBytes = 2048
	// MaxCompletionValues is the most values a completion holds
	// (server/utilities/completion); an upstream that sends more is cut,
	// with hasMore set.
	MaxCompletionValues = 100
	// maxSubscriptionsPerServer bounds the distinct URIs subscribed on
	// one server: a client may subscribe to any URI a template matches.
	maxSubscriptionsPerServer = 4096
	// maxReported bounds the problems and conflicts a status lists.
	maxReported = 100
)

// Prompt is one upstream prompt as mcp-runtime offers it.
type Prompt struct {
	// Server is the upstream's id; Name the prompt's name there, sent as
	// is in prompts/get and completion/complete.
	Server string
	Name   string
	// Canonical is serverId.promptName (CanonicalName).
	Canonical string
	// Listed is the prompt's prompts/list entry as the server wrote it,
	// compact JSON, its own name included.
	Listed json.RawMessage
}

// Resource is one upstream resource.
type Resource struct {
	Server string
	// URI is the resource's URI, as the server wrote it.
	URI string
	// Listed is its resources/list entry as the server wrote it.
	Listed json.RawMessage
}

// ResourceTemplate is one upstream resource template.
type ResourceTemplate struct {
	Server      string
	URITemplate string
	// Listed is its resources/templates/list entry as the server wrote it.
	Listed json.RawMessage
	// re matches the URIs the template expands to (RFC 6570, as the
	// go-sdk's servers match them).
	re *regexp.Regexp
}

// Matches reports whether uri is one the template expands to.
func (t ResourceTemplate) Matches(uri string) bool { return t.re != nil && t.re.MatchString(uri) }

// Surface is the merged prompts, resources and resource templates of the
// servers in service (connected, or failing within their grace period).
// It is a snapshot: cheap to get, never changed afterwards.
type Surface struct {
	// Prompts are sorted by Canonical.
	Prompts []Prompt
	// Resources and Templates are in server id order, each server's
	// sorted by URI (URI template), with no URI (URI template) twice.
	Resources []Resource
	Templates []ResourceTemplate
}

// SurfaceProblem is a prompt, resource or resource template a server
// lists that is left out, or a whole list left out, and why.
type SurfaceProblem struct {
	// Kind is "prompt", "resource" or "resourceTemplate".
	Kind string `json:"kind"`
	// Name is the prompt's name, the URI or the URI template, bounded;
	// empty when the whole list is left out.
	Name   string `json:"name,omitempty"`
	Reason string `json:"reason"`
}

// ResourceConflict is a resource or resource template of a server that
// another server claims too and offers instead (see the rule above).
type ResourceConflict struct {
	// Kind is "resource" or "resourceTemplate".
	Kind string `json:"kind"`
	// URI is the URI or the URI template both servers list.
	URI string `json:"uri"`
	// OfferedBy is the id of the server whose one is offered.
	OfferedBy string `json:"offeredBy"`
}

// Kinds of surface items, as SurfaceProblem and ResourceConflict name them.
const (
	kindPrompt   = "prompt"
	kindResource = "resource"
	kindTemplate = "resourceTemplate"
)

// serverSurface is what one server offers besides tools, as last
// discovered. Each list is replaced only by a listing of its own kind
// that succeeded or was refused over a bound; a transient failure leaves
// the last one in place.
type serverSurface struct {
	prompts   []Prompt
	resources []Resource
	templates []ResourceTemplate
	// problems of each list, in the order prompts, resources, templates.
	problems [3][]SurfaceProblem
	// subscribe and complete are the server's capabilities
	// (resources.subscribe, completions) at its last connection.
	subscribe, complete bool
}

// Surface returns the merged surface of the servers in service.
func (m *Manager) Surface() *Surface {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.surface
}

// mergeSurfaceLocked rebuilds the merged surface from the servers in
// service, in id order, records each server's resource conflicts, and
// reports which fingerprints changed.
func (m *Manager) mergeSurfaceLocked(servers []*server, offered func(*server) bool) (promptsChanged, resourcesChanged bool) {
	sf := &Surface{}
	owner := map[string]string{}     // URI -> server
	tmplOwner := map[string]string{} // URI template -> server
	for _, s := range servers {
		var conflicts []ResourceConflict
		in := offered(s)
		if in {
			sf.Prompts = append(sf.Prompts, s.surface.prompts...)
			for _, r := range s.surface.resources {
				if o, taken := owner[r.URI]; taken {
					conflicts = append(conflicts, ResourceConflict{Kind: kindResource, URI: r.URI, OfferedBy: o})
					continue
				}
				owner[r.URI] = s.cfg.ID
				sf.Resources = append(sf.Resources, r)
			}
			for _, t := range s.surface.templates {
				if o, taken := tmplOwner[t.URITemplate]; taken {
					conflicts = append(conflicts, ResourceConflict{Kind: kindTemplate, URI: t.URITemplate, OfferedBy: o})
					continue
				}
				tmplOwner[t.URITemplate] = s.cfg.ID
				sf.Templates = append(sf.Templates, t)
			}
		}
		m.setConflictsLocked(s, conflicts, in)
	}
	slices.SortFunc(sf.Prompts, func(a, b Prompt) int { return strings.Compare(a.Canonical, b.Canonical) })
	pfp, rfp := promptsFingerprint(sf.Prompts), resourcesFingerprint(sf.Resources, sf.Templates)
	promptsChanged, resourcesChanged = pfp != m.promptsFP, rfp != m.resourcesFP
	m.surface, m.promptsFP, m.resourcesFP = sf, pfp, rfp
	return promptsChanged, resourcesChanged
}

// setConflictsLocked records s's resource conflicts in its status, at
// most maxReported of them, and logs a change while s is offered (one
// that is not has none). The URIs are not logged: they may name a
// tenant's records; the admin API shows them.
func (m *Manager) setConflictsLocked(s *server, conflicts []ResourceConflict, offered bool) {
	n := len(conflicts)
	if n > maxReported {
		conflicts = conflicts[:maxReported]
	}
	if slices.Equal(conflicts, s.status.ResourceConflicts) {
		return
	}
	s.status.ResourceConflicts = conflicts
	if !offered {
		return
	}
	if n == 0 {
		m.log.Info().Str("server", s.cfg.ID).Msg("upstream resource conflicts resolved; all its resources are offered")
		return
	}
	m.log.Warn().Str("server", s.cfg.ID).Int("conflicts", n).Str("offeredBy", conflicts[0].OfferedBy).
		Msg("upstream resources left out: a server whose id sorts first lists the same URIs; see the upstream's resourceConflicts")
}

func promptsFingerprint(p []Prompt) string { return surfaceFingerprint(p) }

func resourcesFingerprint(r []Resource, t []ResourceTemplate) string {
	return surfaceFingerprint(struct {
		R []Resource
		T []ResourceTemplate
	}{r, t})
}

// surfaceFingerprint identifies a merged list by everything a client
// sees of it (the entries as their servers wrote them) and where its
// requests go, so a change is announced only when there is one.
func surfaceFingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Cannot happen for these types; an unequal value makes the
		// caller announce rather than miss a change.
		return fmt.Sprintf("unencodable:%p", &v)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// reported is the surface problems for its status: at most
// maxReported, prompts first.
func (sf *serverSurface) reported() []SurfaceProblem {
	var out []SurfaceProblem
	for _, p := range sf.problems {
		out = append(out, p...)
	}
	if len(out) > maxReported {
		out = out[:maxReported]
	}
	return out
}

// surfaceLimits is what bounds a server's surface lists.
func (m *Manager) surfaceLimits() surfaceLimits {
	return surfaceLimits{maxPrompts: m.opts.MaxPromptsPerServer, maxResources: m.opts.MaxResourcesPerServer,
		maxBytes: m.opts.MaxToolListBytes, reserved: m.opts.ReservedSchemes}
}

// applySurfaceLocked takes in a discovery's listing of s's surface: each
// list that was listed (or refused over a bound) replaces the last, and
// the status counts and problems follow. Problems are logged by count
// (their names are the server's, and URIs are not logged).
func (m *Manager) applySurfaceLocked(s *server, l surfaceListing) {
	next := l.sf
	if l.keep[listPrompts] {
		next.prompts, next.problems[listPrompts] = s.surface.prompts, s.surface.problems[listPrompts]
	}
	if l.keep[listResources] {
		next.resources, next.problems[listResources] = s.surface.resources, s.surface.problems[listResources]
	}
	if l.keep[listTemplates] {
		next.templates, next.problems[listTemplates] = s.surface.templates, s.surface.problems[listTemplates]
	}
	if l.err != nil {
		m.log.Warn().Str("server", s.cfg.ID).Err(l.err).Msg("listing upstream prompts or resources failed; the last lists stay")
	}
	problems := next.reported()
	if n := len(problems); n > 0 && !slices.Equal(problems, s.status.SurfaceProblems) {
		m.log.Warn().Str("server", s.cfg.ID).Int("leftOut", n).Str("first", problems[0].Reason).
			Msg("upstream prompts or resources left out; see the upstream's surfaceProblems")
	}
	s.surface = next
	st := &s.status
	st.PromptCount, st.ResourceCount, st.ResourceTemplateCount = len(next.prompts), len(next.resources), len(next.templates)
	st.SurfaceProblems = problems
}

// offers reports whether the server offers any prompt, resource or
// template: a failing server keeps them for the grace period, as tools.
func (sf *serverSurface) offers() bool {
	return len(sf.prompts) > 0 || len(sf.resources) > 0 || len(sf.templates) > 0
}
