package handlers

import (
	"context"
	"fmt"
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

// PromptRegistry holds prompts in registration order.
type PromptRegistry struct {
	mu      sync.RWMutex
	ordered []*Prompt
	byName  map[string]*Prompt
}

func newPromptRegistry() *PromptRegistry { return &PromptRegistry{byName: map[string]*Prompt{}} }

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
	r.ordered = append(r.ordered, &p)
	r.byName[p.Name] = &p
	return nil
}

func (r *PromptRegistry) get(name string) *Prompt {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}

func (r *PromptRegistry) list() []protocol.Prompt {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]protocol.Prompt, len(r.ordered))
	for i, p := range r.ordered {
		out[i] = p.Prompt
	}
	return out
}

func (r *PromptRegistry) len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.ordered)
}
