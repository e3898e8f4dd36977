package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/statesync"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// stateSync is the State Sync wiring: the bus that carries resource
// updates to subscribers, and, when enabled, the policy layer.
type stateSync struct {
	bus           *statesync.LocalBus
	layer         *statesync.Layer // nil when stateSync.enabled is false
	invalidations atomic.Int64     // the default metrics observer's counter
}

// wireStateSync installs State Sync on srv. The bus always runs: a client
// that subscribes to memory://team/plan hears of its changes whether or
// not the policy layer is on (resources/subscribe is plain MCP). With the
// layer off, nothing is installed on the tools/list or tools/call path.
//
// The bus is local to this process with or without Redis: with REDIS_URL
// the transport's ResourceUpdated, called here on the replica where the
// mutation happened, writes the notification into the Redis log of every
// subscribed session, wherever its GET stream is (issue 7, point 2), so no
// other replica needs to hear of the update (DESIGN.md, Decisions).
func wireStateSync(cfg config.StateSync, srv *handlers.Server, d statesync.Deliverer, log zerolog.Logger) (*stateSync, error) {
	s := &stateSync{bus: statesync.NewLocalBus(d, log)}
	if !cfg.Enabled {
		return s, nil
	}
	sc := cfg.SyncConfig()
	engine, err := statesync.NewEngine(sc)
	if err != nil {
		return nil, fmt.Errorf("stateSync: %w", err)
	}
	for _, o := range statesync.DetectOverlaps(sc.Policies) {
		log.Warn().Int("shadowingIndex", o.ShadowingIndex).Int("shadowedIndex", o.ShadowedIndex).
			Stringer("kind", o.Kind).Msg("stateSync: " + o.Message)
	}
	s.layer = statesync.NewLayer(engine,
		func(statesync.InvalidationEvent) { s.invalidations.Add(1) },
		func(ev statesync.InvalidationEvent) {
			log.Debug().Str("causedBy", ev.CausedBy).Strs("patterns", ev.Patterns).Msg("stateSync: cache invalidated")
		})
	srv.Tools().SetDecorator(engine.DecorateDescription)
	srv.SetAfterCall(s.afterCall)
	return s, nil
}

// afterCall prepends the invalidation block to a successful mutation's
// result and tells the subscribers of each invalidated pattern
// (stale://<pattern>).
func (s *stateSync) afterCall(ctx context.Context, call *handlers.ToolCall, res *protocol.CallToolResult) *protocol.CallToolResult {
	ev := s.layer.AfterCall(call.Name, res)
	if ev == nil {
		return res
	}
	tn := tenant.From(ctx)
	for _, p := range ev.Patterns {
		s.bus.Publish(ctx, tn, statesync.StaleURI(p))
	}
	return res
}

// changed is statetools' hook: the entity's own URI is updated.
func (s *stateSync) changed(ctx context.Context, uri string) {
	s.bus.Publish(ctx, tenant.From(ctx), uri)
}
