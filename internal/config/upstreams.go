package config

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// EnvAdminToken sets admin.token. A Kubernetes Deployment takes it from a
// Secret; it is never printed.
const EnvAdminToken = "MCP_ADMIN_TOKEN"

// EnvAuthMode sets auth.mode (none, apikey or oauth).
const EnvAuthMode = "MCP_AUTH_MODE"

// Admin configures the admin REST API (/admin/*).
type Admin struct {
	// Token is the bearer token the API requires. Empty disables the API:
	// it registers URLs the server then fetches, so it is never open by
	// default.
	Token string `yaml:"token"`
}

// Federation tunes how upstream MCP servers are watched.
type Federation struct {
	// HealthIntervalMs is how often connected servers are pinged and failed
	// ones retried.
	HealthIntervalMs int64 `yaml:"healthIntervalMs"`
	// GracePeriodMs is how long a failing server's last known tools stay
	// offered before they are withdrawn.
	GracePeriodMs int64 `yaml:"gracePeriodMs"`
	// MaxBackoffMs caps the pause between attempts to reconnect a failed
	// server: one that comes back is in service again within about this
	// long.
	MaxBackoffMs int64 `yaml:"maxBackoffMs"`
	// SyncIntervalMs is how often a replica reloads the servers registered
	// through the admin API (possibly on another replica) from the store.
	SyncIntervalMs int64 `yaml:"syncIntervalMs"`
	// MaxToolsPerUpstream bounds one upstream's tool list; a server that
	// lists more is in error (its tools are not offered).
	MaxToolsPerUpstream int `yaml:"maxToolsPerUpstream"`
	// MaxToolListBytes bounds the bytes of one upstream's tool list, all
	// pages together, counted as they are read; and, each on its own, of
	// its prompt, resource and resource-template lists.
	MaxToolListBytes int64 `yaml:"maxToolListBytes"`
	// MaxPromptsPerUpstream bounds one upstream's prompt list, and
	// MaxResourcesPerUpstream each of its resource and resource-template
	// lists; a list over its bound is left out whole (the upstream's
	// tools and other lists stay) and reported in its status.
	MaxPromptsPerUpstream   int `yaml:"maxPromptsPerUpstream"`
	MaxResourcesPerUpstream int `yaml:"maxResourcesPerUpstream"`
	// DeploymentID names this deployment to the upstreams it federates,
	// so that a loop (this server as its own upstream, two deployments
	// federating each other) is recognised. Every replica of a deployment
	// must have the same. Empty: derived from redisURL and
	// redis.keyPrefix, which the replicas share, or random for a process
	// without Redis.
	DeploymentID string `yaml:"deploymentId"`
	// DeniedNetworks are the networks (CIDR prefixes or addresses) no
	// upstream connection may reach, whatever a URL or a redirect names.
	// Setting it replaces the default list.
	DeniedNetworks []string `yaml:"deniedNetworks"`
}

func defaultFederation() Federation {
	return Federation{HealthIntervalMs: 30_000, GracePeriodMs: 60_000, SyncIntervalMs: 10_000,
		MaxBackoffMs:        upstream.DefaultMaxBackoff.Milliseconds(),
		MaxToolsPerUpstream: upstream.DefaultMaxToolsPerServer, MaxToolListBytes: upstream.DefaultMaxToolListBytes,
		MaxPromptsPerUpstream: upstream.DefaultMaxPromptsPerServer, MaxResourcesPerUpstream: upstream.DefaultMaxResourcesPerServer,
		DeniedNetworks: upstream.DefaultDeniedNetworks()}
}

// maxDeniedNetworks bounds federation.deniedNetworks: every dial to an
// upstream checks the list.
const maxDeniedNetworks = 1024

// DeniedPrefixes is DeniedNetworks parsed; entries that do not parse
// (Validate reports them) are left out.
func (f Federation) DeniedPrefixes() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(f.DeniedNetworks))
	for _, s := range f.DeniedNetworks {
		if p, err := upstream.ParseNetwork(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// HealthInterval, GracePeriod, MaxBackoff and SyncInterval are the settings as durations.
func (f Federation) HealthInterval() time.Duration {
	return time.Duration(f.HealthIntervalMs) * time.Millisecond
}
func (f Federation) GracePeriod() time.Duration {
	return time.Duration(f.GracePeriodMs) * time.Millisecond
}
func (f Federation) MaxBackoff() time.Duration {
	return time.Duration(f.MaxBackoffMs) * time.Millisecond
}
func (f Federation) SyncInterval() time.Duration {
	return time.Duration(f.SyncIntervalMs) * time.Millisecond
}

// validateFederation checks the upstreams list and the federation settings.
func (c Config) validateFederation(bad func(key string, value any, want string), intRange func(key string, v, lo, hi int64, want string)) {
	f := c.Federation
	intRange("federation.healthIntervalMs", f.HealthIntervalMs, 1000, maxDurationMs, fmt.Sprintf("1000 to %d milliseconds", maxDurationMs))
	intRange("federation.gracePeriodMs", f.GracePeriodMs, 0, maxDurationMs, fmt.Sprintf("0 to %d milliseconds", maxDurationMs))
	intRange("federation.maxBackoffMs", f.MaxBackoffMs, 100, maxDurationMs, fmt.Sprintf("100 to %d milliseconds", maxDurationMs))
	intRange("federation.syncIntervalMs", f.SyncIntervalMs, 1000, maxDurationMs, fmt.Sprintf("1000 to %d milliseconds", maxDurationMs))
	intRange("federation.maxToolsPerUpstream", int64(f.MaxToolsPerUpstream), 1, 100_000, "1 to 100000")
	intRange("federation.maxToolListBytes", f.MaxToolListBytes, 1024, 1<<30, "1024 to 1073741824 (1 GiB)")
	intRange("federation.maxPromptsPerUpstream", int64(f.MaxPromptsPerUpstream), 1, 100_000, "1 to 100000")
	intRange("federation.maxResourcesPerUpstream", int64(f.MaxResourcesPerUpstream), 1, 1_000_000, "1 to 1000000")
	if f.DeploymentID != "" && !upstream.ValidDeploymentID(f.DeploymentID) {
		bad("federation.deploymentId", f.DeploymentID, "1 to 64 characters of [A-Za-z0-9._-], or empty to derive it")
	}
	if len(f.DeniedNetworks) > maxDeniedNetworks {
		bad("federation.deniedNetworks", len(f.DeniedNetworks), fmt.Sprintf("at most %d entries", maxDeniedNetworks))
	}
	for i, s := range f.DeniedNetworks {
		if _, err := upstream.ParseNetwork(s); err != nil {
			bad(fmt.Sprintf("federation.deniedNetworks[%d]", i), nil, err.Error())
		}
	}
	denied := f.DeniedPrefixes()
	seen := map[string]int{}
	for i, u := range c.Upstreams {
		if err := u.Validate(); err != nil {
			var fe *upstream.FieldError
			if !errors.As(err, &fe) {
				bad(fmt.Sprintf("upstreams[%d]", i), nil, err.Error())
				continue
			}
			// The reason names the value where it is safe to; header
			// values are credentials and are never echoed.
			bad(fmt.Sprintf("upstreams[%d].%s", i, fe.Field), nil, fe.Reason)
			continue
		}
		if err := u.CheckNetworks(denied); err != nil {
			var fe *upstream.FieldError
			if errors.As(err, &fe) {
				bad(fmt.Sprintf("upstreams[%d].%s", i, fe.Field), nil, fe.Reason)
			}
		}
		if j, dup := seen[u.ID]; dup {
			bad(fmt.Sprintf("upstreams[%d].id", i), u.ID, fmt.Sprintf("an id no other upstream has (upstreams[%d] has it)", j))
		}
		seen[u.ID] = i
	}
}
