package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// syncServer connects s if needed and discovers its tools, making at most
// attempts attempts with backoff (INV-MCP-ECO-101). Without force, a
// connected server answers from its last discovery (INV-MCP-ECO-001).
// A disabled or removed server is never contacted (INV-MCP-ECO-201).
//
// The work runs under the manager's context, not ctx: the session and
// tool list it yields are shared by every caller, so one caller giving up
// (a cancelled tools/call, an admin client hanging up) must neither abort
// it halfway nor have the server recorded as failed. ctx only bounds how
// long this caller waits for it.
func (m *Manager) syncServer(ctx context.Context, s *server, force bool, attempts int) ServerResult {
	if ctx == m.ctx {
		return m.syncNow(s, force, attempts)
	}
	done := make(chan ServerResult, 1)
	if !m.goBackground(func() { done <- m.syncNow(s, force, attempts) }) {
		return ServerResult{Server: s.cfg.ID, State: StateDisabled}
	}
	select {
	case r := <-done:
		return r
	case <-ctx.Done():
		m.mu.Lock()
		state := s.status.State
		m.mu.Unlock()
		err := &Error{Kind: ErrInvocationFailed, Server: s.cfg.ID, Op: "connect",
			Timeout: errors.Is(ctx.Err(), context.DeadlineExceeded),
			Err:     fmt.Errorf("stopped waiting for the server: %w", ctx.Err())}
		return ServerResult{Server: s.cfg.ID, State: state, Error: err.Error(), err: err}
	}
}

// syncNow is syncServer's work, under m.ctx.
func (m *Manager) syncNow(s *server, force bool, attempts int) ServerResult {
	ctx := m.ctx
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
	listed := c // the session this discovery started on, if any
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
		tools    []Tool
		problems []ToolProblem
		surface  surfaceListing
		hint     *ListHint
	)
	lim := listLimits{maxTools: m.opts.MaxToolsPerServer, maxBytes: m.opts.MaxToolListBytes}
	n, err := retry(ctx, attempts, m.backoff, func(ctx context.Context) error {
		if c == nil {
			nc, err := dial(ctx, s.cfg, m.dialParams(s))
			if err != nil {
				return err
			}
			c = nc
		}
		list, h, err := c.listTools(ctx, lim)
		if err != nil {
			if broken(err) {
				// The next attempt starts from a new session.
				m.detach(s, c)
				c.close()
				c = nil
			}
			return err
		}
		tools, problems = convertTools(s.cfg, list)
		hint = h
		surface = c.listSurface(ctx, m.surfaceLimits())
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
	if c != nil && c == listed && s.conn != c {
		// A failed ping or call dropped the session while this listed its
		// tools: a closed session must not be put back in service.
		err, c = &Error{Kind: ErrInvocationFailed, Server: s.cfg.ID, Op: "tools/list", url: s.cfg.URL,
			Err: failed("the session was dropped while its tools were listed", nil)}, nil
	}
	if old := s.conn; old != nil && old != c {
		toClose = append(toClose, old)
	}
	if c != nil && c != s.conn {
		m.watchLocked(s.cfg.ID, c)
		id, nc := s.cfg.ID, c
		m.goBackgroundLocked(func() { m.resubscribe(id, nc) })
	}
	s.conn = c
	res.DurationMs = took.Milliseconds()
	if err != nil {
		// No session: the server is down until an attempt succeeds, and
		// calls fail fast meanwhile. A failed discovery on a live session
		// leaves it in service for calls.
		s.down = c == nil
		s.downReason = reasonOf(err)
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
	s.tools, s.deployments, s.listHint = tools, c.probe.ids(), hint
	m.applySurfaceLocked(s, surface)
	m.stopGraceLocked(s)
	st := &s.status
	// INV-MCP-ECO-200: a success clears the error and the failure count.
	st.LastError, st.ConsecutiveFailures, st.StaleToolsUntil = "", 0, nil
	st.LastSuccessAt, st.LastDiscoveryAt = &now, &now
	st.DiscoveryMs = took.Milliseconds()
	st.ToolCount, st.InvalidTools = len(tools), problems
	if c.init != nil {
		st.ProtocolVersion = c.init.ProtocolVersion
		if c.init.ServerInfo != nil {
			st.ServerName, st.ServerVersion = c.init.ServerInfo.Name, c.init.ServerInfo.Version
		}
	}
	s.nextTry, s.down, s.downReason = time.Time{}, false, ""
	stopReconnectLocked(s)
	m.setStateLocked(s, StateConnected, "")
	m.recomputeLocked()
	res.State, res.ToolCount = StateConnected, len(tools)
	return res
}

func (m *Manager) dialParams(s *server) dialParams {
	id := s.cfg.ID
	return dialParams{
		base: m.client, maxBody: m.opts.maxResponseBytes,
		clientName: m.opts.ClientName, clientVersion: m.opts.ClientVersion,
		deployment: m.opts.DeploymentID, denied: m.opts.DeniedNetworks,
		propagate: m.opts.Tracer != nil,
		// By id: an update that keeps the session (replaceLocked) puts it
		// under a new *server.
		onToolsChanged:    func() { m.listChanged(id) },
		onResourceUpdated: func(uri string) { m.resourceUpdated(id, uri) },
		onStreamLost:      func(pr *probe) { m.streamLost(id, pr) },
	}
}

// streamLost drops the session whose probe is pr, if it is still s's: its
// event stream could not reach the server, so the server is taken as
// gone now, and reconnect takes over with its own, shorter backoff. The
// drop runs in the background: this is called from inside the session's
// transport, which closing the session waits for.
func (m *Manager) streamLost(id string, pr *probe) {
	m.mu.Lock()
	s := m.servers[id]
	if s == nil || s.conn == nil || s.conn.probe != pr {
		m.mu.Unlock()
		return
	}
	c := s.conn
	m.goBackgroundLocked(func() {
		m.dropConn(s, c, &Error{Kind: ErrInvocationFailed, Server: id, Op: "session", url: c.cfg.URL, Err: c.probe.connectionLost()})
	})
	m.mu.Unlock()
}

// listChanged handles a server's notifications/tools/list_changed: its
// tools are fetched again in the background (the SDK's notification
// handler must not block). Notifications that arrive while a re-list runs
// are folded into one more re-list after it, so a server that sends them
// in a burst costs at most two, never one goroutine and one tools/list
// each, and re-lists start at least relistGap apart.
func (m *Manager) listChanged(id string) {
	m.mu.Lock()
	s := m.servers[id]
	m.mu.Unlock()
	if s == nil {
		return
	}
	m.log.Debug().Str("server", id).Msg("upstream tool list changed")
	s.relist.Store(true)
	if !s.relisting.CompareAndSwap(false, true) {
		return // the running re-list will go round once more
	}
	started := m.goBackground(func() {
		for {
			for s.relist.Swap(false) {
				if !m.waitRelistGap(s) {
					s.relisting.Store(false)
					return // closing
				}
				m.syncNow(s, true, s.cfg.Retries()+1)
			}
			s.relisting.Store(false)
			// A notification that came between the last Swap and the
			// Store found relisting set and left its flag for us.
			if !s.relist.Load() || !s.relisting.CompareAndSwap(false, true) {
				return
			}
		}
	})
	if !started {
		s.relisting.Store(false)
	}
}

// waitRelistGap waits until relistGap has passed since s's last
// re-list started, and marks the start of the next one. It reports false
// if the manager closed meanwhile.
func (m *Manager) waitRelistGap(s *server) bool {
	if sleepCtx(m.ctx, m.opts.relistGap-time.Since(s.lastRelist)) != nil {
		return false
	}
	s.lastRelist = time.Now()
	return true
}

// watchLocked drops c when its session ends by itself — the SDK gave up
// on the server's event stream, the server went away — so that the next
// call or health check reconnects instead of failing on a dead session.
// Sessions the manager closes itself are ignored.
func (m *Manager) watchLocked(id string, c *conn) {
	m.goBackgroundLocked(func() {
		// Wait's error is the SDK's, which quotes the peer and the
		// socket: the session's probe says why in words of ours.
		_ = c.session.Wait()
		if c.closed.Load() {
			return
		}
		m.mu.Lock()
		s := m.servers[id]
		m.mu.Unlock()
		if s == nil {
			return
		}
		m.dropConn(s, c, &Error{Kind: ErrInvocationFailed, Server: id, Op: "session", url: c.cfg.URL,
			Err: c.probe.connectionLost()})
	})
}

// detach takes c out of s without recording a failure: the caller
// replaces it (and records the outcome) itself.
func (m *Manager) detach(s *server, c *conn) {
	m.mu.Lock()
	if s.conn != nil && s.conn.session == c.session {
		s.conn = nil
	}
	m.mu.Unlock()
}

// failLocked records a failure of s: state error, the message, one more
// consecutive failure, the next reconnect time (backoff), and — if its
// tools were offered — the start of their grace period.
func (m *Manager) failLocked(s *server, err error) {
	now := time.Now()
	st := &s.status
	st.LastError = err.Error()
	st.ConsecutiveFailures++
	delay := m.reconnectDelay(st.ConsecutiveFailures)
	var f *failure
	if errors.As(err, &f) && f.final() {
		// A loop, a denied address or a tool list over its bounds does not
		// go away by trying again soon: such a server is retried on the
		// health interval's slower schedule.
		delay = m.finalFailureDelay(st.ConsecutiveFailures)
	}
	s.nextTry = now.Add(delay)
	m.scheduleReconnectLocked(s, delay)
	if errors.Is(err, errLoop) {
		// Tools that come back through this deployment are not kept for
		// a grace period: offering them is what feeds the loop.
		m.stopGraceLocked(s)
		st.StaleToolsUntil = nil
	} else if (len(s.tools) > 0 || s.surface.offers()) && st.StaleToolsUntil == nil && s.status.State == StateConnected {
		until := now.Add(m.opts.GracePeriod)
		st.StaleToolsUntil = &until
		m.startGraceLocked(s)
	}
	if st.StaleToolsUntil == nil {
		s.tools, s.surface = nil, serverSurface{}
	}
	m.setStateLocked(s, StateError, st.LastError)
	m.recomputeLocked()
}

// reconnectDelay is the pause before the next attempt to reconnect a
// server after its failures-th consecutive failure: exponential from
// 100 ms, with jitter, capped by Options.MaxBackoff.
func (m *Manager) reconnectDelay(failures int) time.Duration {
	if m.opts.reconnectDelay != nil {
		return m.opts.reconnectDelay(failures)
	}
	return equalJitter(failures, m.opts.MaxBackoff)
}

// finalFailureDelay is the pause before reconnecting a server whose
// failure repeating would only repeat: HealthInterval, doubling per
// consecutive failure up to 16 intervals.
func (m *Manager) finalFailureDelay(failures int) time.Duration {
	d := m.opts.HealthInterval
	for i := 1; i < failures && i < 5; i++ {
		d *= 2
	}
	return d
}

// scheduleReconnectLocked makes reconnect run for s after delay,
// replacing an attempt already scheduled.
func (m *Manager) scheduleReconnectLocked(s *server, delay time.Duration) {
	if m.closed || s.removed {
		return
	}
	if s.reconnect != nil {
		s.reconnect.Stop()
	}
	s.reconnect = time.AfterFunc(delay, func() { m.reconnect(s) })
}

// reconnect makes one attempt to connect s, unless it is connected,
// gone, or a health check of it is running already. A failed attempt
// schedules the next (failLocked), so a server that comes back is in
// service again within Options.MaxBackoff, whatever HealthInterval is.
func (m *Manager) reconnect(s *server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || s.removed || s.conn != nil || !s.cfg.IsEnabled() {
		return
	}
	if !s.busy.CompareAndSwap(false, true) {
		return // the running check reschedules if it fails
	}
	if !m.goBackgroundLocked(func() {
		defer s.busy.Store(false)
		m.syncNow(s, true, 1)
	}) {
		s.busy.Store(false)
	}
}

// stopReconnectLocked cancels a scheduled reconnect attempt of s.
func stopReconnectLocked(s *server) {
	if s.reconnect != nil {
		s.reconnect.Stop()
		s.reconnect = nil
	}
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
		s.status.StaleToolsUntil, s.tools, s.surface, s.grace = nil, nil, serverSurface{}, nil
		m.log.Info().Str("server", s.cfg.ID).Msg("upstream grace period over; its tools are dropped")
		m.recomputeLocked()
	})
}

// dropConn takes a broken session out of use after a failed request.
// Sessions are compared, not *conn values: withConfig copies share one.
func (m *Manager) dropConn(s *server, c *conn, err error) {
	if c == nil {
		return
	}
	m.mu.Lock()
	if s.conn != nil && s.conn.session == c.session {
		s.conn = nil
		if !s.removed {
			m.failLocked(s, err)
		}
	}
	m.mu.Unlock()
	c.close()
}
