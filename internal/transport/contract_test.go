package transport_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	"github.com/mcp-runtime/mcp-runtime/internal/transport/sessiontest"
	"github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// The in-memory store keeps the contract of every session store
// (package sessiontest).
func TestSessionStoreContract(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T, mods ...func(*transport.Options)) (*transport.Transport, *transporttest.Harness) {
		o := sessiontest.Options()
		for _, m := range mods {
			m(&o)
		}
		return sessiontest.Serve(t, o)
	})
}

// One principal cannot hold more than its share of client sessions
// (docs/adr/0027-session-caps.md), nor one tenant, all its principals
// together; other principals and tenants are unaffected, and ending a
// session frees its place.
func TestMemorySessions_PerPrincipalAndTenantCaps(t *testing.T) {
	m := transport.NewMemorySessions(context.Background(), time.Minute, 100, 2, 3)
	defer m.Close()
	sessiontest.CapSteps(t, m)
}
