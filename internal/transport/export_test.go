package transport

import (
	"context"
	"time"
)

// NewMemorySessions is the in-memory session store with the caps
// perPrincipal and perTenant, for the tests of package transport_test,
// which drive it with package sessiontest's steps.
func NewMemorySessions(ctx context.Context, idle time.Duration, limit, perPrincipal, perTenant int) SessionStore {
	return newMemorySessions(ctx, idle, limit, sessionCaps{perPrincipal: perPrincipal, perTenant: perTenant}, time.Now, nil, nil)
}
