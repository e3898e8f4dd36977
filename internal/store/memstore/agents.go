package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// copyAgent returns a copy of a that shares nothing with the store.
func copyAgent(a *store.Agent) store.Agent {
	out := *a
	out.Capabilities = slices.Clone(a.Capabilities)
	out.Tags = slices.Clone(a.Tags)
	out.Metadata = slices.Clone(a.Metadata)
	return out
}

// RegisterAgent adds an agent whose id is not taken.
func (s *Store) RegisterAgent(ctx context.Context, tenant string, a store.Agent) (store.Agent, error) {
	if err := begin(ctx, tenant); err != nil {
		return store.Agent{}, err
	}
	if err := checkAgentID(a.ID); err != nil {
		return store.Agent{}, err
	}
	a, err := store.NormalizeAgent(a, s.opts.JSONLimits())
	if err != nil {
		return store.Agent{}, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	td := s.write(tenant)
	if td.agents[a.ID] != nil {
		return store.Agent{}, store.AlreadyExistsf("agent %s is already registered", a.ID)
	}
	now := s.opts.Now()
	stored := &store.Agent{
		ID: a.ID, Description: a.Description, DisplayName: a.DisplayName,
		Capabilities: a.Capabilities, Tags: a.Tags, Metadata: a.Metadata,
		CreatedAt: now, UpdatedAt: now,
	}
	td.agents[a.ID] = stored
	return copyAgent(stored), nil
}

// GetAgent returns one agent.
func (s *Store) GetAgent(ctx context.Context, tenant, id string) (store.Agent, error) {
	if err := begin(ctx, tenant); err != nil {
		return store.Agent{}, err
	}
	if err := checkAgentID(id); err != nil {
		return store.Agent{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if td := s.read(tenant); td != nil {
		if a := td.agents[id]; a != nil {
			return copyAgent(a), nil
		}
	}
	return store.Agent{}, store.NotFoundf("agent %s", id)
}

// ListAgents lists agents in id order, optionally only those with a tag
// and a capability.
func (s *Store) ListAgents(ctx context.Context, tenant string, q store.ListAgents) (store.Page[store.Agent], error) {
	var none store.Page[store.Agent]
	if err := begin(ctx, tenant); err != nil {
		return none, err
	}
	if err := checkOptionalName("tag", q.Tag, store.MaxTagLen); err != nil {
		return none, err
	}
	if err := checkOptionalName("capability", q.Capability, store.MaxTagLen); err != nil {
		return none, err
	}
	limit, err := store.CheckLimit(q.Limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return none, err
	}
	var afterID string
	if q.Cursor != "" {
		if _, afterID, _, err = store.DecodeCursor("agents", q.Cursor); err != nil {
			return none, err
		}
	}

	s.mu.RLock()
	defer s.mu.RUnlock()
	var match []*store.Agent
	if td := s.read(tenant); td != nil {
		for _, a := range td.agents {
			if (q.Tag == "" || slices.Contains(a.Tags, q.Tag)) &&
				(q.Capability == "" || slices.Contains(a.Capabilities, q.Capability)) &&
				(q.Cursor == "" || a.ID > afterID) {
				match = append(match, a)
			}
		}
	}
	slices.SortFunc(match, func(a, b *store.Agent) int { return strings.Compare(a.ID, b.ID) })
	if len(match) > limit+1 {
		match = match[:limit+1]
	}
	out := make([]store.Agent, len(match))
	for i, a := range match {
		out[i] = copyAgent(a)
	}
	return paginate(out, limit, func(a store.Agent) string {
		return store.EncodeCursor("agents", time.Time{}, a.ID, "")
	}), nil
}

// RemoveAgent deletes an agent.
func (s *Store) RemoveAgent(ctx context.Context, tenant, id string) error {
	if err := begin(ctx, tenant); err != nil {
		return err
	}
	if err := checkAgentID(id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	td := s.read(tenant)
	if td == nil || td.agents[id] == nil {
		return store.NotFoundf("agent %s", id)
	}
	delete(td.agents, id)
	return nil
}

// RecentAgents lists agents most recently updated first.
func (s *Store) RecentAgents(ctx context.Context, tenant string, after *store.Pos, limit int) ([]store.Agent, error) {
	if err := begin(ctx, tenant); err != nil {
		return nil, err
	}
	limit, err := store.CheckLimit(limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var all []*store.Agent
	if td := s.read(tenant); td != nil {
		for _, a := range td.agents {
			all = append(all, a)
		}
	}
	page := recent(all, func(a *store.Agent) store.Pos {
		return store.Pos{UpdatedAt: a.UpdatedAt, ID: a.ID}
	}, after, limit)
	out := make([]store.Agent, len(page))
	for i, a := range page {
		out[i] = copyAgent(a)
	}
	return out, nil
}
