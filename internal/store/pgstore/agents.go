package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

const agentCols = `id, description, display_name, capabilities, tags, metadata, created_at, updated_at`

func scanAgent(row pgx.Row) (store.Agent, error) {
	var a store.Agent
	var metadata []byte
	err := row.Scan(&a.ID, &a.Description, &a.DisplayName, &a.Capabilities, &a.Tags, &metadata, &a.CreatedAt, &a.UpdatedAt)
	if err != nil {
		return store.Agent{}, err
	}
	a.Metadata = compactJSON(metadata)
	if a.Capabilities == nil {
		a.Capabilities = []string{}
	}
	if a.Tags == nil {
		a.Tags = []string{}
	}
	a.CreatedAt, a.UpdatedAt = utc(a.CreatedAt), utc(a.UpdatedAt)
	return a, nil
}

func checkAgentID(tenant, id string) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	return store.CheckName("agentId", id, store.MaxIDLen)
}

// RegisterAgent adds an agent to the registry; its timestamps are set
// here, whatever a carries.
func (s *Store) RegisterAgent(ctx context.Context, tenant string, a store.Agent) (store.Agent, error) {
	if err := checkAgentID(tenant, a.ID); err != nil {
		return store.Agent{}, err
	}
	a, err := store.NormalizeAgent(a, s.opts.JSONLimits())
	if err != nil {
		return store.Agent{}, err
	}
	now := s.opts.Now()
	out, err := scanAgent(s.pool.QueryRow(ctx, `
		INSERT INTO agents (tenant, id, description, display_name, capabilities, tags, metadata, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
		RETURNING `+agentCols,
		tenant, a.ID, a.Description, a.DisplayName, a.Capabilities, a.Tags, jsonValue(a.Metadata), now))
	if isUniqueViolation(err) {
		return store.Agent{}, store.AlreadyExistsf("agent %s", a.ID)
	}
	if err != nil {
		return store.Agent{}, fmt.Errorf("register agent: %w", classify(err))
	}
	return out, nil
}

// GetAgent returns one agent.
func (s *Store) GetAgent(ctx context.Context, tenant, id string) (store.Agent, error) {
	if err := checkAgentID(tenant, id); err != nil {
		return store.Agent{}, err
	}
	a, err := scanAgent(s.pool.QueryRow(ctx, `SELECT `+agentCols+` FROM agents WHERE tenant = $1 AND id = $2`, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Agent{}, store.NotFoundf("agent %s", id)
	}
	if err != nil {
		return store.Agent{}, fmt.Errorf("get agent: %w", classify(err))
	}
	return a, nil
}

// ListAgents lists agents in id byte order.
func (s *Store) ListAgents(ctx context.Context, tenant string, q store.ListAgents) (store.Page[store.Agent], error) {
	var page store.Page[store.Agent]
	if err := checkTenant(tenant); err != nil {
		return page, err
	}
	if q.Tag != "" {
		if err := store.CheckName("tag", q.Tag, store.MaxTagLen); err != nil {
			return page, err
		}
	}
	if q.Capability != "" {
		if err := store.CheckName("capability", q.Capability, store.MaxTagLen); err != nil {
			return page, err
		}
	}
	limit, err := store.CheckLimit(q.Limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return page, err
	}
	b := builder{}
	b.where("tenant = %s", tenant)
	// Containment (rather than = ANY) so the GIN indexes apply.
	if q.Tag != "" {
		b.where("tags @> %s", []string{q.Tag})
	}
	if q.Capability != "" {
		b.where("capabilities @> %s", []string{q.Capability})
	}
	if q.Cursor != "" {
		_, id, _, err := store.DecodeCursor("agents", q.Cursor)
		if err != nil {
			return page, err
		}
		b.where("id > %s", id)
	}
	sql := `SELECT ` + agentCols + ` FROM agents` + b.clause() + ` ORDER BY id COLLATE "C" LIMIT ` + b.arg(limit+1)
	items, err := collect(ctx, s.pool, sql, b.args, scanAgent)
	if err != nil {
		return page, fmt.Errorf("list agents: %w", classify(err))
	}
	if len(items) > limit {
		items = items[:limit]
		page.NextCursor = store.EncodeCursor("agents", time.Time{}, items[limit-1].ID, "")
	}
	page.Items = items
	return page, nil
}

// RemoveAgent deletes an agent from the registry.
func (s *Store) RemoveAgent(ctx context.Context, tenant, id string) error {
	if err := checkAgentID(tenant, id); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM agents WHERE tenant = $1 AND id = $2`, tenant, id)
	if err != nil {
		return fmt.Errorf("remove agent: %w", classify(err))
	}
	if tag.RowsAffected() == 0 {
		return store.NotFoundf("agent %s", id)
	}
	return nil
}

// RecentAgents lists agents most recently updated first.
func (s *Store) RecentAgents(ctx context.Context, tenant string, after *store.Pos, limit int) ([]store.Agent, error) {
	if err := checkTenant(tenant); err != nil {
		return nil, err
	}
	limit, err := store.CheckLimit(limit, store.DefListLimit, store.MaxListLimit)
	if err != nil {
		return nil, err
	}
	b := builder{}
	b.where("tenant = %s", tenant)
	if after != nil {
		b.where("(updated_at, id) < (%s, %s)", after.UpdatedAt, after.ID)
	}
	sql := `SELECT ` + agentCols + ` FROM agents` + b.clause() +
		` ORDER BY updated_at DESC, id COLLATE "C" DESC LIMIT ` + b.arg(limit)
	items, err := collect(ctx, s.pool, sql, b.args, scanAgent)
	if err != nil {
		return nil, fmt.Errorf("recent agents: %w", classify(err))
	}
	return items, nil
}
