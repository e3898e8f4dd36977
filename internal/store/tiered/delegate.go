package tiered

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// The methods below are not cached: listings, searches and traces change
// with every write anywhere in a tenant, so invalidating them would cost
// more than it saves. They go straight to the wrapped store.

func (s *Store) SearchMemory(ctx context.Context, tenant string, q store.SearchMemory) ([]store.SearchHit, error) {
	return s.next.SearchMemory(ctx, tenant, q)
}

func (s *Store) ListMemory(ctx context.Context, tenant string, q store.ListMemory) (store.Page[store.MemoryEntry], error) {
	return s.next.ListMemory(ctx, tenant, q)
}

func (s *Store) RecentMemory(ctx context.Context, tenant string, after *store.Pos, limit int) ([]store.MemoryEntry, error) {
	return s.next.RecentMemory(ctx, tenant, after, limit)
}

// PurgeExpiredMemory needs no invalidation: no tier serves an expired
// entry, and each tier's copy lives no longer than the entry.
func (s *Store) PurgeExpiredMemory(ctx context.Context) (int64, error) {
	return s.next.PurgeExpiredMemory(ctx)
}

func (s *Store) ListSessions(ctx context.Context, tenant string, q store.ListSessions) (store.Page[store.Session], error) {
	return s.next.ListSessions(ctx, tenant, q)
}

func (s *Store) RecentSessions(ctx context.Context, tenant string, after *store.Pos, limit int) ([]store.Session, error) {
	return s.next.RecentSessions(ctx, tenant, after, limit)
}

func (s *Store) ListAgents(ctx context.Context, tenant string, q store.ListAgents) (store.Page[store.Agent], error) {
	return s.next.ListAgents(ctx, tenant, q)
}

func (s *Store) RecentAgents(ctx context.Context, tenant string, after *store.Pos, limit int) ([]store.Agent, error) {
	return s.next.RecentAgents(ctx, tenant, after, limit)
}

func (s *Store) InsertTraces(ctx context.Context, batch []store.Trace) error {
	return s.next.InsertTraces(ctx, batch)
}

func (s *Store) GetTrace(ctx context.Context, tenant, id string) (store.Trace, error) {
	return s.next.GetTrace(ctx, tenant, id)
}

func (s *Store) ListTraces(ctx context.Context, tenant string, q store.ListTraces) (store.Page[store.Trace], error) {
	return s.next.ListTraces(ctx, tenant, q)
}

func (s *Store) AnalyzeTraces(ctx context.Context, tenant string, q store.AnalyzeTraces) ([]store.ToolStats, error) {
	return s.next.AnalyzeTraces(ctx, tenant, q)
}

func (s *Store) PurgeTraces(ctx context.Context, cutoff time.Time) (int64, error) {
	return s.next.PurgeTraces(ctx, cutoff)
}

// Ping checks the wrapped store only: Redis is optional, and its health
// is in Stats.
func (s *Store) Ping(ctx context.Context) error { return s.next.Ping(ctx) }

// Upstreams are deployment-wide admin data, not per-call state: they are
// not cached either.

func (s *Store) ListUpstreams(ctx context.Context) ([]store.UpstreamRecord, error) {
	return s.next.ListUpstreams(ctx)
}

func (s *Store) GetUpstream(ctx context.Context, id string) (store.UpstreamRecord, error) {
	return s.next.GetUpstream(ctx, id)
}

func (s *Store) CreateUpstream(ctx context.Context, id string, config json.RawMessage) (store.UpstreamRecord, error) {
	return s.next.CreateUpstream(ctx, id, config)
}

func (s *Store) UpdateUpstream(ctx context.Context, id string, config json.RawMessage, ifVersion *int64) (store.UpstreamRecord, error) {
	return s.next.UpdateUpstream(ctx, id, config, ifVersion)
}

func (s *Store) DeleteUpstream(ctx context.Context, id string) error {
	return s.next.DeleteUpstream(ctx, id)
}

// API keys are deployment-wide admin data, read once per unknown key by
// the authenticator (which caches them itself): no cache tier here.
func (s *Store) ListAPIKeys(ctx context.Context) ([]store.APIKeyRecord, error) {
	return s.next.ListAPIKeys(ctx)
}

func (s *Store) CreateAPIKey(ctx context.Context, k store.APIKeyRecord) (store.APIKeyRecord, error) {
	return s.next.CreateAPIKey(ctx, k)
}

func (s *Store) RevokeAPIKey(ctx context.Context, id string) (store.APIKeyRecord, error) {
	return s.next.RevokeAPIKey(ctx, id)
}

func (s *Store) APIKeyByHash(ctx context.Context, hash string) (store.APIKeyRecord, error) {
	return s.next.APIKeyByHash(ctx, hash)
}
