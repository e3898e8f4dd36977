package handlers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// Prompt is a prompt template as registered.
type Prompt struct {
	protocol.Prompt
	Get func(ctx context.Context, s Session, args map[string]string) (*protocol.GetPromptResult, error)
	// Complete, if set, suggests values for an argument
	// (completion/complete with ref/prompt).
	Complete func(ctx context.Context, s Session, argument, prefix string) ([]string, error)
}

// PromptRegistry holds prompts; it lists them by name
// (docs/adr/0052-list-order-and-cursors.md).
type PromptRegistry struct {
	mu     sync.RWMutex
	byName map[string]*Prompt
	// listed is prompts/list's part of them, sorted by name; replaced,
	// never modified, by add.
	listed []protocol.Prompt
}

// newPromptRegistry returns an empty registry; its list is empty, not
// nil, so that prompts/list has a "prompts" array.
func newPromptRegistry() *PromptRegistry {
	return &PromptRegistry{byName: map[string]*Prompt{}, listed: []protocol.Prompt{}}
}

func (r *PromptRegistry) add(p Prompt) error {
	if p.Name == "" || p.Get == nil {
		return fmt.Errorf("register prompt %q: name and Get are required", p.Name)
	}
	if p.Description == "" {
		return fmt.Errorf("register prompt %s: description is required", p.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.byName[p.Name]; dup {
		return fmt.Errorf("register prompt %s: already registered", p.Name)
	}
	r.byName[p.Name] = &p
	i, _ := slices.BinarySearchFunc(r.listed, p.Name, func(l protocol.Prompt, name string) int { return strings.Compare(l.Name, name) })
	r.listed = slices.Insert(slices.Clone(r.listed), i, p.Prompt)
	return nil
}

func (r *PromptRegistry) get(name string) *Prompt {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}

// list returns the prompts sorted by name; the caller must not modify it.
func (r *PromptRegistry) list() []protocol.Prompt {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.listed
}

func (r *PromptRegistry) len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.listed)
}
