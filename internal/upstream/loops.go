package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// debounceLoop calls OnToolsChanged, OnPromptsChanged and
// OnResourcesChanged after the merged set of their kind changed, at most
// once per Debounce, and only when the set differs from the one last
// announced: a change that was undone within the window is not announced
// (no spurious list_changed), and a change of one kind announces only
// that kind.
func (m *Manager) debounceLoop() {
	// What was announced at first is nothing, whatever the servers that
	// connected before this loop started have changed since.
	tools, prompts, resources := fingerprint(nil), promptsFingerprint(nil), resourcesFingerprint(nil, nil)
	announce := func(announced *string, now string, fn func()) {
		if now == *announced {
			return
		}
		*announced = now
		if fn != nil {
			fn()
		}
	}
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.changed:
		}
		t := time.NewTimer(m.opts.Debounce)
		select {
		case <-m.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		m.mu.Lock()
		toolsFP, promptsFP, resourcesFP := m.toolsFP, m.promptsFP, m.resourcesFP
		m.mu.Unlock()
		announce(&tools, toolsFP, m.opts.OnToolsChanged)
		announce(&prompts, promptsFP, m.opts.OnPromptsChanged)
		announce(&resources, resourcesFP, m.opts.OnResourcesChanged)
	}
}

// healthLoop pings connected servers (and re-lists their tools) and
// reconnects failed ones once their backoff has passed.
func (m *Manager) healthLoop() { m.every(m.opts.HealthInterval, m.checkAll) }

// every calls fn every d until the manager closes.
func (m *Manager) every(d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		fn()
	}
}

func (m *Manager) checkAll() {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.servers {
		if s.removed || !s.cfg.IsEnabled() {
			continue
		}
		if s.conn == nil && now.Before(s.nextTry) {
			continue
		}
		if !s.busy.CompareAndSwap(false, true) {
			continue // the last check of this server is still running
		}
		if !m.goBackgroundLocked(func() {
			defer s.busy.Store(false)
			m.check(m.ctx, s)
		}) {
			s.busy.Store(false)
		}
	}
}

// check pings a connected server, then re-lists its tools (a server that
// does not send list_changed still gets its changes picked up); a server
// without a session is reconnected.
func (m *Manager) check(ctx context.Context, s *server) {
	m.mu.Lock()
	c := s.conn
	m.mu.Unlock()
	if c != nil {
		_, err := retry(ctx, s.cfg.Retries()+1, m.backoff, func(ctx context.Context) error { return c.ping(ctx) })
		if err != nil {
			if ctx.Err() != nil {
				return // shutting down: not the server's fault
			}
			m.dropConn(s, c, err)
			return
		}
	}
	m.syncServer(ctx, s, true, s.cfg.Retries()+1)
}

// storeLoop reloads the API-managed servers every SyncInterval: other
// replicas create, change and delete them.
func (m *Manager) storeLoop() {
	m.every(m.opts.SyncInterval, func() {
		if err := m.syncStore(m.ctx); err != nil && m.ctx.Err() == nil {
			m.log.Warn().Err(err).Msg("reloading upstreams from the store")
		}
	})
}

// syncStore applies the store's records: new ones are added (and
// connected once started), changed versions replace the server, missing
// ones are removed. Declared servers are never touched.
//
// A list read before this replica created, changed or deleted a server
// through the API is stale for that server: applying it would bring a
// deleted server back until the next reload. Such a list is dropped (the
// change counter moved while it was read) and read again.
func (m *Manager) syncStore(ctx context.Context) error {
	var toClose []*conn
	defer func() {
		for _, c := range toClose {
			c.close()
		}
	}()
	var recs []store.UpstreamRecord
	for attempt := 0; ; attempt++ {
		m.mu.Lock()
		before := m.changes
		m.mu.Unlock()
		var err error
		recs, err = m.opts.Store.ListUpstreams(ctx)
		if err != nil {
			return fmt.Errorf("upstream: listing upstreams from the store: %w", err)
		}
		m.mu.Lock()
		if m.changes == before {
			break // applied under this lock: no API change can come between
		}
		m.mu.Unlock()
		if attempt == 2 {
			return nil // busy with API changes; the next reload catches up
		}
	}
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	seen := make(map[string]bool, len(recs))
	for _, rec := range recs {
		seen[rec.ID] = true
		cur := m.servers[rec.ID]
		if cur != nil && cur.source == SourceConfig {
			m.log.Warn().Str("server", rec.ID).Msg("stored upstream ignored: the configuration file declares this id")
			continue
		}
		if cur != nil && cur.version >= rec.Version {
			continue
		}
		cfg, err := decodeRecord(rec)
		if err != nil {
			m.log.Error().Str("server", rec.ID).Err(err).Msg("stored upstream ignored")
			continue
		}
		if c := m.replaceLocked(cur, newServer(cfg, SourceAPI, rec.Version)); c != nil {
			toClose = append(toClose, c)
		}
	}
	for id, s := range m.servers {
		if s.source == SourceAPI && !seen[id] {
			if c := m.removeLocked(s); c != nil {
				toClose = append(toClose, c)
			}
			delete(m.servers, id)
			m.metrics.forget(id)
		}
	}
	m.recomputeLocked()
	return nil
}

func decodeRecord(rec store.UpstreamRecord) (Config, error) {
	var c Config
	if err := json.Unmarshal(rec.Config, &c); err != nil {
		return Config{}, fmt.Errorf("decoding its config: %w", err)
	}
	if c.ID == "" {
		c.ID = rec.ID
	}
	if c.ID != rec.ID {
		return Config{}, fmt.Errorf("its config names id %q", c.ID)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// addLocked puts s in service, connecting it if enabled and the manager
// has started (Start connects the initial set itself).
func (m *Manager) addLocked(s *server) {
	m.servers[s.cfg.ID] = s
	if !m.started {
		return
	}
	m.metrics.setState(s.cfg.ID, s.status.State, true)
	if s.cfg.IsEnabled() {
		m.connectLocked(s)
	}
}
