package upstream

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// Discover discovers every enabled server's tools in parallel, each under
// its own timeouts, so a failed or slow server never delays or removes the
// others' tools (INV-MCP-ECO-002). Without ForceRefresh, connected servers
// answer from their last discovery (Cached); with it, every server is
// asked again, and an unchanged one yields identical tools
// (INV-MCP-ECO-001). Disabled servers are never contacted; they are
// reported only with IncludeDisabled (INV-MCP-ECO-201). When every server
// fails, Tools is empty and Servers carries each error.
func (m *Manager) Discover(ctx context.Context, o DiscoverOptions) (Discovery, error) {
	if err := ctx.Err(); err != nil {
		return Discovery{}, err
	}
	m.mu.Lock()
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.mu.Unlock()
	slices.SortFunc(servers, func(a, b *server) int { return strings.Compare(a.cfg.ID, b.cfg.ID) })

	results := make([]ServerResult, len(servers))
	keep := make([]bool, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		if !s.cfg.IsEnabled() {
			results[i], keep[i] = ServerResult{Server: s.cfg.ID, State: StateDisabled}, o.IncludeDisabled
			continue
		}
		keep[i] = true
		wg.Go(func() { results[i] = m.syncServer(ctx, s, o.ForceRefresh, s.cfg.Retries()+1) })
	}
	wg.Wait()
	d := Discovery{Tools: m.Tools(), At: time.Now(), Servers: []ServerResult{}}
	for i, r := range results {
		if keep[i] {
			d.Servers = append(d.Servers, r)
		}
	}
	if d.Tools == nil {
		d.Tools = []Tool{}
	}
	return d, nil
}
