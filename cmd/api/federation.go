package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/federation"
	"github.com/mcp-runtime/mcp-runtime/internal/guarded"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
	"github.com/mcp-runtime/mcp-runtime/internal/telemetry"
	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// newFederation builds the federation from cfg, its manager persisting to
// persist; surf, the upstreams' prompts and resources, gets its callbacks
// in the manager's options and the manager itself.
func newFederation(cfg config.Config, persist upstream.Persistence, pipe *guarded.Pipeline, tools *handlers.ToolRegistry,
	notify func() (int, error), metrics prometheus.Registerer, surf *federation.Surface, held federation.HeldRoute, tel *telemetry.Telemetry, log zerolog.Logger) (*federation.Federation, error) {
	o := upstream.Options{
		Declared:              cfg.Upstreams,
		Store:                 persist,
		HealthInterval:        cfg.Federation.HealthInterval(),
		GracePeriod:           cfg.Federation.GracePeriod(),
		MaxBackoff:            cfg.Federation.MaxBackoff(),
		SyncInterval:          cfg.Federation.SyncInterval(),
		ClientName:            "mcp-runtime",
		ClientVersion:         version,
		DeploymentID:          deploymentID(cfg),
		MaxToolsPerServer:     cfg.Federation.MaxToolsPerUpstream,
		MaxToolListBytes:      cfg.Federation.MaxToolListBytes,
		MaxPromptsPerServer:   cfg.Federation.MaxPromptsPerUpstream,
		MaxResourcesPerServer: cfg.Federation.MaxResourcesPerUpstream,
		DeniedNetworks:        cfg.Federation.DeniedPrefixes(),
		Metrics:               metrics,
		Log:                   log,
	}
	if tel.Enabled() {
		o.Tracer = tel.Tracer() // and so the calls' trace context goes upstream
		o.ObserveCall = func(ctx context.Context, _, tool string, d time.Duration, errType string) {
			tel.RecordClientCall(ctx, protocol.MethodToolsCall, tool, d, errType)
		}
	}
	surf.Configure(&o)
	fed, err := federation.New(o, federation.Options{
		Tools: tools, Pipeline: pipe, ToolsChanged: notify,
		Timeouts: cfg.Timeouts.TimeoutConfig(), Separator: cfg.ToolNameSeparator, HeldRoute: held, Log: log,
	})
	if err != nil {
		return nil, err
	}
	surf.Attach(fed.Manager())
	return fed, nil
}

// deploymentID names this deployment to its upstreams (see
// upstream.HeaderVia): federation.deploymentId when set; otherwise a hash
// of what every replica of one deployment shares and no other deployment
// does — the Redis its client sessions live in (redisconn.Endpoint), and
// redis.keyPrefix, which deployments sharing a Redis must set apart. The
// hash keeps the address and the key prefix out of the headers; the URL's
// credentials and options are not part of it. Without Redis a process is
// a deployment of its own, and a random id serves.
func deploymentID(cfg config.Config) string {
	if cfg.Federation.DeploymentID != "" {
		return cfg.Federation.DeploymentID
	}
	if cfg.RedisURL == "" {
		return upstream.RandomDeploymentID()
	}
	endpoint, err := redisconn.Endpoint(redisconn.Mode(cfg.Redis.Mode), cfg.RedisURL)
	if err != nil {
		// openState refuses such a URL before this runs.
		return upstream.RandomDeploymentID()
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{"mcp-runtime deployment", endpoint, cfg.Redis.KeyPrefix}, "\x00")))
	return hex.EncodeToString(sum[:16])
}
