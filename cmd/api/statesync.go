package main

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/statesync"
)

// wireStateSync installs State Sync on srv and returns its notifier, which
// always runs: a client that subscribes to memory://team/plan hears of its
// changes whether or not the policy layer is on (resources/subscribe is
// plain MCP). With the layer off, nothing is installed on the tools/list
// or tools/call path.
func wireStateSync(cfg config.StateSync, srv *handlers.Server, d statesync.Deliverer, log zerolog.Logger) (*statesync.Notifier, error) {
	if !cfg.Enabled {
		return statesync.NewNotifier(d, nil, log), nil
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
	layer := statesync.NewLayer(engine, func(ev statesync.InvalidationEvent) {
		log.Debug().Str("causedBy", ev.CausedBy).Strs("patterns", ev.Patterns).Msg("stateSync: cache invalidated")
	})
	n := statesync.NewNotifier(d, layer, log)
	srv.Tools().SetDecorator(engine.DecorateDescription)
	srv.SetAfterCall(func(ctx context.Context, call *handlers.ToolCall, res *protocol.CallToolResult) *protocol.CallToolResult {
		return n.AfterCall(ctx, call.Name, res)
	})
	return n, nil
}
