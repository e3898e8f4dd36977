package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// registeredTool is a tool ready to call: compiled schema, both names and
// its tools/list entry built once.
type registeredTool struct {
	Tool
	exposed string
	schema  *argSchema
	listed  protocol.Tool
}

// toolSet is an immutable snapshot; readers never lock (the upstream issue
// replaces tool sets at run time while calls are in flight).
type toolSet struct {
	ordered     []*registeredTool
	byExposed   map[string]*registeredTool
	byCanonical map[string]*registeredTool
	listed      []protocol.Tool
}

// ToolRegistry holds the tools a server offers.
type ToolRegistry struct {
	sep      string
	mu       sync.Mutex // serialises writers
	snap     atomic.Pointer[toolSet]
	decorate func(name, description string) string
}

// SetDecorator makes tools/list show decorate(canonical name, description)
// as each tool's description — State Sync appends its Cache-Control
// directive this way. The decorated list is built once per registry
// change, so tools/list pays nothing per request.
func (r *ToolRegistry) SetDecorator(decorate func(name, description string) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decorate = decorate
	old := r.snap.Load()
	next := *old
	next.listed = make([]protocol.Tool, len(old.ordered))
	for i, t := range old.ordered {
		next.listed[i] = r.listing(t)
	}
	r.snap.Store(&next)
}

// listing is how t appears in tools/list.
func (r *ToolRegistry) listing(t *registeredTool) protocol.Tool {
	l := t.listed
	if r.decorate != nil {
		l.Description = r.decorate(t.Name, t.Description)
	}
	return l
}

// NewToolRegistry returns an empty registry whose exposed names join
// canonical segments with sep.
func NewToolRegistry(sep string) (*ToolRegistry, error) {
	if !separatorPattern.MatchString(sep) {
		return nil, fmt.Errorf("tool name separator %q: must be 1-3 characters from [A-Za-z0-9_-]", sep)
	}
	r := &ToolRegistry{sep: sep}
	r.snap.Store(&toolSet{byExposed: map[string]*registeredTool{}, byCanonical: map[string]*registeredTool{}})
	return r, nil
}

// Add registers tools. It fails without changing the registry when a tool
// is malformed or its canonical or exposed name is taken.
func (r *ToolRegistry) Add(tools ...Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	next := &toolSet{
		ordered:     append([]*registeredTool(nil), old.ordered...),
		byExposed:   make(map[string]*registeredTool, len(old.byExposed)+len(tools)),
		byCanonical: make(map[string]*registeredTool, len(old.byCanonical)+len(tools)),
	}
	for _, t := range old.ordered {
		next.byExposed[t.exposed], next.byCanonical[t.Name] = t, t
	}
	for _, t := range tools {
		rt, err := r.prepare(t)
		if err != nil {
			return err
		}
		if _, dup := next.byCanonical[rt.Name]; dup {
			return fmt.Errorf("register tool %s: a tool with this name exists", rt.Name)
		}
		if other, dup := next.byExposed[rt.exposed]; dup {
			return fmt.Errorf("register tool %s: exposed name %q is taken by %s", rt.Name, rt.exposed, other.Name)
		}
		next.ordered = append(next.ordered, rt)
		next.byExposed[rt.exposed], next.byCanonical[rt.Name] = rt, rt
	}
	next.listed = make([]protocol.Tool, len(next.ordered))
	for i, t := range next.ordered {
		next.listed[i] = r.listing(t)
	}
	r.snap.Store(next)
	return nil
}

func (r *ToolRegistry) prepare(t Tool) (*registeredTool, error) {
	if err := validCanonical(t.Name); err != nil {
		return nil, fmt.Errorf("register tool: %w", err)
	}
	if t.Description == "" {
		// Clients and the conformance suite require one; the model needs it.
		return nil, fmt.Errorf("register tool %s: description is required", t.Name)
	}
	if t.Handler == nil {
		return nil, fmt.Errorf("register tool %s: handler is nil", t.Name)
	}
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(emptyObjectSchema)
	}
	s, err := compileSchema(t.Name, "inputSchema", t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("register tool: %w", err)
	}
	if len(t.OutputSchema) > 0 {
		if _, err := compileSchema(t.Name, "outputSchema", t.OutputSchema); err != nil {
			return nil, fmt.Errorf("register tool: %w", err)
		}
	}
	exposed := ExposedName(t.Name, r.sep)
	return &registeredTool{
		Tool:    t,
		exposed: exposed,
		schema:  s,
		listed: protocol.Tool{
			Name:         exposed,
			Title:        t.Title,
			Description:  t.Description,
			InputSchema:  t.InputSchema,
			OutputSchema: t.OutputSchema,
			Annotations:  t.Annotations,
		},
	}, nil
}

// lookup finds a tool by exposed or canonical name (tools/call accepts both).
func (r *ToolRegistry) lookup(name string) *registeredTool {
	s := r.snap.Load()
	if t, ok := s.byExposed[name]; ok {
		return t
	}
	return s.byCanonical[name]
}

// lookupRaw finds a tool by its name as a raw JSON string, without
// allocating when the name has no escapes (always, for valid tool names).
func (r *ToolRegistry) lookupRaw(quoted []byte) *registeredTool {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		s := r.snap.Load()
		if t, ok := s.byExposed[string(inner)]; ok {
			return t
		}
		return s.byCanonical[string(inner)]
	}
	var name string
	if err := json.Unmarshal(quoted, &name); err != nil {
		return nil
	}
	return r.lookup(name)
}

// Len is the number of registered tools.
func (r *ToolRegistry) Len() int { return len(r.snap.Load().ordered) }

// ExposedName returns the name clients see for a canonical name.
func (r *ToolRegistry) ExposedName(canonical string) string { return ExposedName(canonical, r.sep) }
