package config

import "github.com/mcp-runtime/mcp-runtime/internal/ratelimit"

// RateLimits are per-principal token buckets (issue 8, point 4), shared
// by the replicas through Redis when REDIS_URL is set. A perSecond of 0
// turns a limit off, which is the default: with auth.mode none every
// caller is one principal, and a limit would throttle them all together.
type RateLimits struct {
	// ToolCalls bounds tools/call per principal; over it a call answers
	// RATE_LIMITED with retryAfterMs.
	ToolCalls ratelimit.Rate `yaml:"toolCalls"`
	// Requests bounds every HTTP request to /mcp per principal; over it
	// the request gets 429 with Retry-After.
	Requests ratelimit.Rate `yaml:"requests"`
}

func (c Config) validateRateLimits() []error {
	var errs []error
	for _, l := range []struct {
		key  string
		rate ratelimit.Rate
	}{{"rateLimits.toolCalls", c.RateLimits.ToolCalls}, {"rateLimits.requests", c.RateLimits.Requests}} {
		if err := l.rate.Validate(l.key); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
