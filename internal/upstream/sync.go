package upstream

import (
	"context"
	"time"
)

// syncServer connects s if needed and discovers its tools, making at most
// attempts attempts with backoff (INV-MCP-ECO-101). Without force, a
// connected server answers from its last discovery (INV-MCP-ECO-001).
// A disabled or removed server is never contacted (INV-MCP-ECO-201).
func (m *Manager) syncServer(ctx context.Context, s *server, force bool, attempts int) ServerResult {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	res := ServerResult{Server: s.cfg.ID}

	m.mu.Lock()
	if s.removed || !s.cfg.IsEnabled() || m.closed {
		res.State = StateDisabled
		if !s.removed && s.cfg.IsEnabled() {
			res.State = s.status.State
		}
		m.mu.Unlock()
		return res
	}
	c := s.conn
	if c != nil && !force && s.status.State == StateConnected {
		res.State, res.ToolCount, res.Cached = StateConnected, len(s.tools), true
		m.mu.Unlock()
		return res
	}
	if c == nil {
		m.setStateLocked(s, StateConnecting, "")
	}
	m.mu.Unlock()

	start := time.Now()
	var (
		tools     []Tool
		problems  []ToolProblem
		resources int
	)
	n, err := retry(ctx, attempts, m.backoff, func(ctx context.Context) error {
		if c == nil {
			nc, err := dial(ctx, s.cfg, m.dialParams(s))
			if err != nil {
				return err
			}
			c = nc
		}
		list, err := c.listTools(ctx)
		if err != nil {
			if broken(err) {
				// The next attempt starts from a new session.
				c.close()
				c = nil
			}
			return err
		}
		tools, problems = convertTools(s.cfg.ID, list)
		var rerr error
		if resources, rerr = c.countResources(ctx); rerr != nil {
			m.log.Warn().Str("server", s.cfg.ID).Err(rerr).Msg("counting upstream resources")
		}
		return nil
	})
	took := time.Since(start)

	// Sessions are closed after the lock is released (defers run last
	// first): closing may wait for the network.
	var toClose []*conn
	defer func() {
		for _, c := range toClose {
			c.close()
		}
	}()
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.removed || m.closed {
		// Deleted, disabled or reconfigured meanwhile: the result belongs
		// to nobody.
		if c != nil && c != s.conn {
			toClose = append(toClose, c)
		}
		res.State = StateDisabled
		return res
	}
	if old := s.conn; old != nil && old != c {
		toClose = append(toClose, old)
	}
	s.conn = c
	res.DurationMs = took.Milliseconds()
	if err != nil {
		m.failLocked(s, err)
		res.State, res.Error, res.err = s.status.State, err.Error(), err
		return res
	}
	now := time.Now()
	if n > 1 {
		m.log.Info().Str("server", s.cfg.ID).Int("attempts", n).Msg("upstream discovery succeeded after retries")
	}
	for _, p := range problems {
		m.log.Warn().Str("server", s.cfg.ID).Str("tool", p.Name).Str("reason", p.Reason).Msg("upstream tool left out")
	}
	s.tools = tools
	m.stopGraceLocked(s)
	st := &s.status
	// INV-MCP-ECO-200: a success clears the error and the failure count.
	st.LastError, st.ConsecutiveFailures, st.StaleToolsUntil = "", 0, nil
	st.LastSuccessAt, st.LastDiscoveryAt = &now, &now
	st.DiscoveryMs = took.Milliseconds()
	st.ToolCount, st.ResourceCount, st.InvalidTools = len(tools), resources, problems
	if c.init != nil {
		st.ProtocolVersion = c.init.ProtocolVersion
		if c.init.ServerInfo != nil {
			st.ServerName, st.ServerVersion = c.init.ServerInfo.Name, c.init.ServerInfo.Version
		}
	}
	s.nextTry = time.Time{}
	m.setStateLocked(s, StateConnected, "")
	m.recomputeLocked()
	res.State, res.ToolCount = StateConnected, len(tools)
	return res
}

func (m *Manager) dialParams(s *server) dialParams {
	return dialParams{
		base: m.opts.HTTPClient, clientName: m.opts.ClientName, clientVersion: m.opts.ClientVersion,
		onToolsChanged: func() { m.listChanged(s) },
	}
}

// listChanged handles a server's notifications/tools/list_changed: its
// tools are fetched again in the background (the SDK's notification
// handler must not block).
func (m *Manager) listChanged(s *server) {
	m.log.Debug().Str("server", s.cfg.ID).Msg("upstream tool list changed")
	m.goBackground(func() {
		m.syncServer(m.ctx, s, true, s.cfg.Retries()+1)
	})
}

// failLocked records a failure of s: state error, the message, one more
// consecutive failure, the next reconnect time (backoff), and — if its
// tools were offered — the start of their grace period.
func (m *Manager) failLocked(s *server, err error) {
	now := time.Now()
	st := &s.status
	st.LastError = err.Error()
	st.ConsecutiveFailures++
	s.nextTry = now.Add(m.reconnectDelay(st.ConsecutiveFailures))
	if len(s.tools) > 0 && st.StaleToolsUntil == nil && s.status.State == StateConnected {
		until := now.Add(m.opts.GracePeriod)
		st.StaleToolsUntil = &until
		m.startGraceLocked(s)
	}
	if st.StaleToolsUntil == nil {
		s.tools = nil
	}
	m.setStateLocked(s, StateError, st.LastError)
	m.recomputeLocked()
}

// reconnectDelay: the health loop retries a failed server after
// HealthInterval, doubling per consecutive failure up to 16 intervals,
// so a dead server is not hammered.
func (m *Manager) reconnectDelay(failures int) time.Duration {
	d := m.opts.HealthInterval
	for i := 1; i < failures && i < 5; i++ {
		d *= 2
	}
	return d
}

// startGraceLocked drops s's stale tools when its grace period ends,
// unless it has recovered by then.
func (m *Manager) startGraceLocked(s *server) {
	if m.closed {
		return
	}
	m.stopGraceLocked(s)
	m.wg.Add(1)
	s.grace = time.AfterFunc(m.opts.GracePeriod, func() {
		defer m.wg.Done()
		m.mu.Lock()
		defer m.mu.Unlock()
		if s.status.State == StateConnected || s.removed {
			return
		}
		s.status.StaleToolsUntil, s.tools, s.grace = nil, nil, nil
		m.log.Info().Str("server", s.cfg.ID).Msg("upstream grace period over; its tools are dropped")
		m.recomputeLocked()
	})
}

// dropConn takes a broken session out of use after a failed request.
func (m *Manager) dropConn(s *server, c *conn, err error) {
	if c == nil {
		return
	}
	m.mu.Lock()
	if s.conn == c {
		s.conn = nil
		if !s.removed {
			m.failLocked(s, err)
		}
	}
	m.mu.Unlock()
	c.close()
}
