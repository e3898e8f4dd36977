package memstore

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// copyUpstream returns a copy of u that shares nothing with the store.
func copyUpstream(u *store.UpstreamRecord) store.UpstreamRecord {
	out := *u
	out.Config = bytes.Clone(u.Config)
	return out
}

// ListUpstreams returns every upstream in id order.
func (s *Store) ListUpstreams(ctx context.Context) ([]store.UpstreamRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]store.UpstreamRecord, 0, len(s.upstreams))
	for _, u := range s.upstreams {
		out = append(out, copyUpstream(u))
	}
	slices.SortFunc(out, func(a, b store.UpstreamRecord) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// GetUpstream returns one upstream.
func (s *Store) GetUpstream(ctx context.Context, id string) (store.UpstreamRecord, error) {
	if err := ctx.Err(); err != nil {
		return store.UpstreamRecord{}, err
	}
	if err := store.CheckUpstreamID(id); err != nil {
		return store.UpstreamRecord{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if u := s.upstreams[id]; u != nil {
		return copyUpstream(u), nil
	}
	return store.UpstreamRecord{}, store.NotFoundf("upstream %s", id)
}

// CreateUpstream adds an upstream whose id is not taken.
func (s *Store) CreateUpstream(ctx context.Context, id string, config json.RawMessage) (store.UpstreamRecord, error) {
	config, err := s.checkUpstream(ctx, id, config)
	if err != nil {
		return store.UpstreamRecord{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.upstreams[id] != nil {
		return store.UpstreamRecord{}, store.AlreadyExistsf("upstream %s", id)
	}
	if s.upstreams == nil {
		s.upstreams = make(map[string]*store.UpstreamRecord)
	}
	now := s.opts.Now()
	u := &store.UpstreamRecord{ID: id, Config: config, Version: 1, CreatedAt: now, UpdatedAt: now}
	s.upstreams[id] = u
	return copyUpstream(u), nil
}

// UpdateUpstream replaces an upstream's config.
func (s *Store) UpdateUpstream(ctx context.Context, id string, config json.RawMessage, ifVersion *int64) (store.UpstreamRecord, error) {
	config, err := s.checkUpstream(ctx, id, config)
	if err != nil {
		return store.UpstreamRecord{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.upstreams[id]
	switch {
	case u == nil:
		return store.UpstreamRecord{}, store.NotFoundf("upstream %s", id)
	case ifVersion != nil && *ifVersion != u.Version:
		return store.UpstreamRecord{}, store.Conflictf("upstream %s is at version %d, not %d", id, u.Version, *ifVersion)
	}
	u.Config, u.Version, u.UpdatedAt = config, u.Version+1, s.opts.Now()
	return copyUpstream(u), nil
}

// DeleteUpstream removes an upstream.
func (s *Store) DeleteUpstream(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := store.CheckUpstreamID(id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.upstreams[id] == nil {
		return store.NotFoundf("upstream %s", id)
	}
	delete(s.upstreams, id)
	return nil
}

// checkUpstream validates a write and returns the config as a private
// copy in its canonical form, as PostgreSQL's jsonb reads back.
func (s *Store) checkUpstream(ctx context.Context, id string, config json.RawMessage) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.CheckUpstreamID(id); err != nil {
		return nil, err
	}
	return store.CheckUpstreamConfig(config, s.opts)
}
