package main

import (
	"context"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/ratelimit"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
)

// limits applies rateLimits: per principal, in Redis when the replicas
// share one (docs/adr/0022-rate-limits.md).
type limits struct {
	cfg     config.RateLimits
	limiter *ratelimit.Limiter
	stop    context.CancelFunc
}

func newLimits(cfg config.Config, st *state, log zerolog.Logger) *limits {
	l := ratelimit.New(st.redis, log)
	ctx, stop := context.WithCancel(context.Background())
	go l.Run(ctx, time.Minute)
	return &limits{cfg: cfg.RateLimits, limiter: l, stop: stop}
}

func (l *limits) close() { l.stop() }

// bucket is the principal's key: the tenant is part of it, so two
// tenants' principals never share a budget, and its length too, so a
// tenant with ':' in its name cannot pose as another's (tenant, id) pair.
func bucket(kind string, p auth.Principal) string {
	return kind + ":" + strconv.Itoa(len(p.Tenant)) + ":" + p.Tenant + ":" + p.ID
}

// request is the transport's HTTP request budget.
func (l *limits) request(ctx context.Context, p auth.Principal) (bool, time.Duration) {
	if l.cfg.Requests.Off() {
		return true, 0
	}
	d := l.limiter.Allow(ctx, bucket("req", p), l.cfg.Requests)
	return d.Allowed, d.RetryAfter
}

// toolCall is the pipeline's admission: RATE_LIMITED with retryAfterMs.
func (l *limits) toolCall(ctx context.Context, tool string) *response.Error {
	if l.cfg.ToolCalls.Off() {
		return nil
	}
	p, ok := auth.FromContext(ctx)
	if !ok {
		p = auth.Anonymous
	}
	d := l.limiter.Allow(ctx, bucket("call", p), l.cfg.ToolCalls)
	if d.Allowed {
		return nil
	}
	return response.NewError(response.CodeRateLimited, "too many tool calls: at most %g per second (burst %d); %s may be called again in %d ms",
		l.cfg.ToolCalls.PerSecond, l.cfg.ToolCalls.Burst, tool, d.RetryAfter.Milliseconds()).WithRetryAfter(d.RetryAfter)
}
