package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/statesync"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// wireStateSync installs State Sync on srv and returns its notifier, which
// always runs: a client that subscribes to memory://team/plan hears of its
// changes whether or not the policy layer is on (resources/subscribe is
// plain MCP). With the layer off, nothing is installed on the tools/list
// or tools/call path.
func wireStateSync(cfg config.StateSync, engine *statesync.Engine, srv *handlers.Server, d statesync.Deliverer, tracer trace.Tracer, log zerolog.Logger) (*statesync.Notifier, error) {
	if engine == nil {
		return statesync.NewNotifier(d, nil, log, tracer), nil
	}
	sc := cfg.SyncConfig()
	for _, o := range statesync.DetectOverlaps(sc.Policies) {
		log.Warn().Int("shadowingIndex", o.ShadowingIndex).Int("shadowedIndex", o.ShadowedIndex).
			Stringer("kind", o.Kind).Msg("stateSync: " + o.Message)
	}
	layer := statesync.NewLayer(engine, func(ev statesync.InvalidationEvent) {
		log.Debug().Str("causedBy", ev.CausedBy).Strs("patterns", ev.Patterns).Msg("stateSync: cache invalidated")
	})
	n := statesync.NewNotifier(d, layer, log, tracer)
	srv.Tools().SetDecorator(engine.DecorateDescription)
	srv.SetAfterCall(func(ctx context.Context, call *handlers.ToolCall, res *protocol.CallToolResult) *protocol.CallToolResult {
		return n.AfterCall(ctx, call.Name, res)
	})
	return n, nil
}

// newSyncEngine builds State Sync's policy engine; nil when State Sync
// is off.
func newSyncEngine(cfg config.StateSync) (*statesync.Engine, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	engine, err := statesync.NewEngine(cfg.SyncConfig())
	if err != nil {
		return nil, fmt.Errorf("stateSync: %w", err)
	}
	return engine, nil
}

// cacheHints give the results of the 2026-07-28 era their cache hints
// (docs/adr/0053-cache-hints-from-policies.md): a resource as the
// policies of its scheme's domain say, private (it is a tenant's data);
// the lists of tools, prompts and templates and server/discover public
// (the same for every caller) for at most the federation's sync
// interval, within which a change of an upstream's offer reaches every
// replica; resources/list, a tenant's entities, which change, never.
// The tool list holds the upstreams' tools too, so it is kept no longer
// than a modern upstream lets its own list be kept, and privately if
// one says so.
type cacheHints struct {
	sync  *statesync.Hints
	lists time.Duration
	// upstreams is set once, before the server serves: nil without a
	// federation.
	upstreams toolListHinter
}

// toolListHinter says how long, and for whom, the upstreams let their
// tool lists be cached; ok is false when none said.
type toolListHinter interface {
	ToolListHint() (hint upstream.ListHint, ok bool)
}

func (h *cacheHints) Hint(method string, params json.RawMessage) protocol.CacheHint {
	switch method {
	case protocol.MethodResourcesRead:
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(params, &p) // the handler answered it: it decodes
		return protocol.CacheHint{TTL: h.sync.ResourceTTL(p.URI)}
	case protocol.MethodToolsList:
		hint := protocol.CacheHint{TTL: h.lists, Public: true}
		if h.upstreams != nil {
			if up, ok := h.upstreams.ToolListHint(); ok {
				hint = protocol.CacheHint{TTL: min(hint.TTL, up.TTL), Public: !up.Private}
			}
		}
		return hint
	case protocol.MethodPromptsList, protocol.MethodResourcesTemplatesList, protocol.MethodServerDiscover:
		return protocol.CacheHint{TTL: h.lists, Public: true}
	}
	return protocol.CacheHint{}
}
