package transport

// The transport's tests drive it through the harness of package
// transporttest. They are white-box (package transport) only so that they
// can wait for server-side state that is otherwise invisible to a client —
// "the server has noticed that this SSE connection is gone" — instead of
// sleeping.

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

type harnessConfig struct {
	th.Config
	opts Options
}

func defaultOptions() Options {
	return Options{
		MaxBodyBytes:       th.MaxBodyBytes,
		SessionIdleTimeout: th.SessionIdleTimeout,
		KeepAliveInterval:  th.KeepAliveInterval,
		EventLogSize:       th.EventLogSize,
		MaxSessions:        th.MaxSessions,
		Logger:             th.Logger(),
	}
}

// harness is a transport under test, served, and a client of it.
type harness struct {
	*th.Harness
	tr *Transport
}

func newHarness(tb testing.TB, mods ...func(*harnessConfig)) *harness {
	tb.Helper()
	cfg := harnessConfig{opts: defaultOptions()}
	for _, m := range mods {
		m(&cfg)
	}
	h := &harness{}
	h.Harness = th.New(tb, cfg.Config, func(srv *handlers.Server) (th.Transport, error) {
		tr, err := New(srv, cfg.opts)
		h.tr = tr
		return tr, err
	})
	return h
}

func withOpts(f func(*Options)) func(*harnessConfig) {
	return func(c *harnessConfig) { f(&c.opts) }
}

// waitSweeps waits until the in-memory store's sweeper has run n whole
// rounds that began after the call: whatever they evict is done. (A
// round under way when it is called does not count.)
func (h *harness) waitSweeps(t testing.TB, n int) {
	t.Helper()
	m, ok := h.tr.sessions.(*memorySessions)
	if !ok {
		t.Fatalf("no sweeper to wait for in %T", h.tr.sessions)
	}
	target := m.sweeps.Load() + int64(n) + 1
	testutil.Eventually(t, th.WaitLong, fmt.Sprintf("%d sweeps", n), func() bool { return m.sweeps.Load() >= target })
}

func (h *harness) session(t testing.TB, sid string) *ClientSession {
	t.Helper()
	s, err := h.tr.Sessions().Get(context.Background(), sid)
	if err != nil {
		t.Fatalf("session %s: %v", sid, err)
	}
	return s
}
