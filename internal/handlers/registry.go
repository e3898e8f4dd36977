package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/toolname"
)

// registeredTool is a tool ready to call: compiled schema, both names and
// its tools/list entry built once.
type registeredTool struct {
	Tool
	exposed string
	schema  *argSchema
	listed  protocol.Tool
	// params are the arguments its inputSchema mirrors into Mcp-Param-*
	// headers (x-mcp-header), which a modern request's headers must
	// match (basic/transports/streamable-http).
	params []protocol.ParamHeader
}

// toolSet is an immutable snapshot; readers never lock (the upstream issue
// replaces tool sets at run time while calls are in flight).
type toolSet struct {
	ordered     []*registeredTool
	byExposed   map[string]*registeredTool
	byCanonical map[string]*registeredTool
	// byBare holds the tools of each BareName, in registration order.
	byBare map[string][]*registeredTool
	// listed is tools/list, in the order of keys: by group, the
	// server's own tools (group "") first, then by exposed name. It
	// depends on the set of tools alone, not on the order they were
	// registered or discovered in (docs/adr/0052-list-order-and-cursors.md).
	listed []protocol.Tool
	keys   []listKey
}

// newToolSet indexes ordered and builds its tools/list.
func (r *ToolRegistry) newToolSet(ordered []*registeredTool) *toolSet {
	s := &toolSet{
		ordered:     ordered,
		byExposed:   make(map[string]*registeredTool, len(ordered)),
		byCanonical: make(map[string]*registeredTool, len(ordered)),
		byBare:      map[string][]*registeredTool{},
		listed:      make([]protocol.Tool, len(ordered)),
		keys:        make([]listKey, len(ordered)),
	}
	for _, t := range ordered {
		s.byExposed[t.exposed], s.byCanonical[t.Name] = t, t
		if t.BareName != "" {
			s.byBare[t.BareName] = append(s.byBare[t.BareName], t)
		}
	}
	byKey := slices.Clone(ordered)
	// Exposed names are unique in a registry (addChecked), so no two
	// tools have the same key.
	slices.SortFunc(byKey, func(a, b *registeredTool) int { return toolKey(a).compare(toolKey(b)) })
	for i, t := range byKey {
		s.listed[i], s.keys[i] = r.listing(t), toolKey(t)
	}
	return s
}

// toolKey is t's position in tools/list.
func toolKey(t *registeredTool) listKey { return listKey{group: t.Group, name: t.exposed} }

// addChecked appends rt to the set being built in ordered/names, or says why its
// names are taken.
func addChecked(ordered []*registeredTool, names map[string]string, rt *registeredTool) ([]*registeredTool, error) {
	if _, dup := names["c:"+rt.Name]; dup {
		return ordered, fmt.Errorf("register tool %s: a tool with this name exists", rt.Name)
	}
	if other, dup := names["e:"+rt.exposed]; dup {
		return ordered, fmt.Errorf("register tool %s: exposed name %q is taken by %s", rt.Name, rt.exposed, other)
	}
	names["c:"+rt.Name], names["e:"+rt.exposed] = rt.Name, rt.Name
	return append(ordered, rt), nil
}

// ToolRegistry holds the tools a server offers.
type ToolRegistry struct {
	sep      string
	mu       sync.Mutex // serialises writers
	snap     atomic.Pointer[toolSet]
	decorate func(name, description string) string
	// valid remembers arguments that passed their tool's inputSchema.
	valid validMemo
}

// SetDecorator makes tools/list show decorate(canonical name, description)
// as each tool's description — State Sync appends its Cache-Control
// directive this way. The decorated list is built once per registry
// change, so tools/list pays nothing per request.
func (r *ToolRegistry) SetDecorator(decorate func(name, description string) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decorate = decorate
	r.snap.Store(r.newToolSet(r.snap.Load().ordered))
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
	if !toolname.ValidSeparator(sep) {
		return nil, fmt.Errorf("tool name separator %q: must be 1-3 characters from [A-Za-z0-9_-]", sep)
	}
	r := &ToolRegistry{sep: sep}
	r.snap.Store(r.newToolSet(nil))
	return r, nil
}

// Add registers tools. It fails without changing the registry when a tool
// is malformed or its canonical or exposed name is taken.
func (r *ToolRegistry) Add(tools ...Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	ordered := slices.Clone(old.ordered)
	names := make(map[string]string, 2*(len(ordered)+len(tools)))
	for _, t := range ordered {
		names["c:"+t.Name], names["e:"+t.exposed] = t.Name, t.Name
	}
	for _, t := range tools {
		rt, err := r.prepare(t)
		if err != nil {
			return err
		}
		if ordered, err = addChecked(ordered, names, rt); err != nil {
			return err
		}
	}
	r.snap.Store(r.newToolSet(ordered))
	return nil
}

// ReplaceGroup makes tools the whole of group: the group's other tools go,
// the rest of the registry stays, in one atomic swap (calls in flight keep
// the tool they looked up). Tools must all carry Group == group. A tool
// that is malformed or whose name is taken is left out and reported in
// errs; the others are registered. changed reports whether tools/list is
// different afterwards.
func (r *ToolRegistry) ReplaceGroup(group string, tools []Tool) (changed bool, errs []error) {
	if group == "" {
		return false, []error{fmt.Errorf("replace tool group: the group name is empty")}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.snap.Load()
	ordered := make([]*registeredTool, 0, len(old.ordered)+len(tools))
	names := make(map[string]string, 2*cap(ordered))
	for _, t := range old.ordered {
		if t.Group != group {
			ordered, _ = addChecked(ordered, names, t)
		}
	}
	for _, t := range tools {
		if t.Group != group {
			errs = append(errs, fmt.Errorf("register tool %s: group %q, want %q", t.Name, t.Group, group))
			continue
		}
		rt, err := r.prepare(t)
		if err == nil {
			ordered, err = addChecked(ordered, names, rt)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	next := r.newToolSet(ordered)
	changed = !slices.EqualFunc(old.listed, next.listed, sameListing)
	r.snap.Store(next)
	r.forgetReplaced(ordered)
	return changed, errs
}

// forgetReplaced drops from the validation memo the schemas of tools that
// are no longer registered; the caller holds r.mu.
func (r *ToolRegistry) forgetReplaced(ordered []*registeredTool) {
	live := make(map[*argSchema]bool, len(ordered))
	for _, t := range ordered {
		live[t.schema] = true
	}
	r.valid.keepOnly(live)
}

// sameListing compares two tools/list entries by their JSON, which is what
// a client sees.
func sameListing(a, b protocol.Tool) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func (r *ToolRegistry) prepare(t Tool) (*registeredTool, error) {
	if err := toolname.ValidCanonical(t.Name); err != nil {
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
	s.memo = &r.valid
	if len(t.OutputSchema) > 0 {
		if _, err := compileSchema(t.Name, "outputSchema", t.OutputSchema); err != nil {
			return nil, fmt.Errorf("register tool: %w", err)
		}
	}
	exposed := toolname.Exposed(t.Name, r.sep)
	params, err := protocol.ParamHeaders(t.InputSchema)
	if err != nil {
		// server/tools, "x-mcp-header": a client must refuse the whole
		// definition, so it is not offered.
		return nil, fmt.Errorf("register tool %s: inputSchema: %w", t.Name, err)
	}
	return &registeredTool{
		Tool:    t,
		exposed: exposed,
		schema:  s,
		params:  params,
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

// lookupBare finds the tools whose BareName is name: one resolves the
// call, several make it ambiguous (INV-MCP-ECO-003).
func (r *ToolRegistry) lookupBare(name string) []*registeredTool {
	return r.snap.Load().byBare[name]
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
func (r *ToolRegistry) ExposedName(canonical string) string {
	return toolname.Exposed(canonical, r.sep)
}
