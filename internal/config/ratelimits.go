package config

import (
	"fmt"

	"github.com/mcp-runtime/mcp-runtime/internal/ratelimit"
)

// RateLimits are per-principal token buckets
// (docs/adr/0022-rate-limits.md), shared by the replicas through Redis when
// REDIS_URL is set, and the budget of failed authentications per remote
// address. A perSecond of 0 turns a limit off, which is the default of the
// per-principal ones: with auth.mode none every caller is one principal,
// and a limit would throttle them all together.
type RateLimits struct {
	// ToolCalls bounds tools/call per principal; over it a call answers
	// RATE_LIMITED with retryAfterMs.
	ToolCalls ratelimit.Rate `yaml:"toolCalls"`
	// Requests bounds every HTTP request to /mcp per principal; over it
	// the request gets 429 with Retry-After.
	Requests ratelimit.Rate `yaml:"requests"`
	// Unauthenticated bounds the failed authentications (401) per remote
	// address (its IP; IPv6 by /64), in process on each replica. Once it
	// is spent, credentials that cost a lookup or a signature check are
	// not checked and failures get 429 with Retry-After; valid
	// credentials known in memory still work. On by default: an honest
	// client fails rarely (its first request, an expired token).
	Unauthenticated ratelimit.Rate `yaml:"unauthenticated"`
	// TrustedProxies are the reverse proxies (IP addresses or CIDR
	// prefixes) whose X-Forwarded-For names the client for
	// Unauthenticated. Empty, the default, trusts none: behind a proxy
	// every client then shares the proxy's budget.
	TrustedProxies []string `yaml:"trustedProxies"`
}

// defaultRateLimits are off per principal, on per address.
func defaultRateLimits() RateLimits {
	return RateLimits{Unauthenticated: ratelimit.Rate{PerSecond: 2, Burst: 30}}
}

func (c Config) validateRateLimits() []error {
	var errs []error
	for _, l := range []struct {
		key  string
		rate ratelimit.Rate
	}{
		{"rateLimits.toolCalls", c.RateLimits.ToolCalls},
		{"rateLimits.requests", c.RateLimits.Requests},
		{"rateLimits.unauthenticated", c.RateLimits.Unauthenticated},
	} {
		if err := l.rate.Validate(l.key); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := ratelimit.ParseProxies(c.RateLimits.TrustedProxies); err != nil {
		errs = append(errs, fmt.Errorf("rateLimits.trustedProxies%w", err))
	}
	return errs
}
