package statesync

import (
	"strings"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// The tags of the seed's "Cache-Control Decoration", one per directive, so
// that decorating builds no tag at run time.
const (
	tagNoStore   = "[Cache-Control: " + string(NoStore) + "]"
	tagImmutable = "[Cache-Control: " + string(Immutable) + "]"
)

func tagOf(d Directive) string {
	switch d {
	case NoStore:
		return tagNoStore
	case Immutable:
		return tagImmutable
	}
	return ""
}

// DecorateDescription returns description with " [Cache-Control: X]"
// appended, X being the directive resolved for tool (seed, "Cache-Control
// Decoration"); description unchanged when the tool resolves to no
// directive (seed, "If no defaults are configured, no decoration occurs for
// unmatched tools").
//
// It is idempotent: a description that already ends with the tag is
// returned as is, and one that ends with the other directive's tag (from an
// upstream server, say) has it replaced rather than followed by a
// contradicting one. Results are cached per tool name (seed, "tools/list
// decoration: O(1) per tool (cached)"); the cache entry also remembers the
// description it was made from, so a tool whose description changes is
// decorated afresh instead of getting a stale one.
func (e *Engine) DecorateDescription(tool, description string) string {
	// Comparing the descriptions is one memory comparison, no allocation.
	if d, ok := e.decorations.get(tool); ok && d.in == description {
		return d.out
	}
	out := decorate(description, e.Resolve(tool).CacheControl())
	// Copy what may view a request buffer; one copy when out is in.
	d := decoration{in: strings.Clone(description), out: out}
	if out == description {
		d.out = d.in
	}
	e.decorations.put(tool, d)
	return out
}

// decoration is a cached decoration: the description it was made from, and
// the result.
type decoration struct{ in, out string }

// DecorateTools returns tools with decorated descriptions, for a
// tools/list result (seed, "decorateTools"). It never modifies tools: when
// a description changes it returns a new slice, otherwise tools itself.
func (e *Engine) DecorateTools(tools []protocol.Tool) []protocol.Tool {
	var out []protocol.Tool
	for i := range tools {
		d := e.DecorateDescription(tools[i].Name, tools[i].Description)
		if d == tools[i].Description {
			continue
		}
		if out == nil {
			out = make([]protocol.Tool, len(tools))
			copy(out, tools)
		}
		out[i].Description = d
	}
	if out == nil {
		return tools
	}
	return out
}

// decorate appends the tag of d to description; see DecorateDescription.
func decorate(description string, d Directive) string {
	tag := tagOf(d)
	if tag == "" {
		return description
	}
	base := strings.TrimRight(description, " \t\r\n")
	switch {
	case strings.HasSuffix(base, tag):
		return description
	case strings.HasSuffix(base, tagNoStore):
		base = strings.TrimRight(strings.TrimSuffix(base, tagNoStore), " \t\r\n")
	case strings.HasSuffix(base, tagImmutable):
		base = strings.TrimRight(strings.TrimSuffix(base, tagImmutable), " \t\r\n")
	}
	if base == "" {
		return tag
	}
	return base + " " + tag
}
