package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Call calls a tool of a server. Arguments are not validated here: the
// caller validated them against the tool's inputSchema already
// (INV-MCP-ECO-300). An upstream isError answer is a CallResult with
// IsError set, not an error (INV-MCP-ECO-301). Errors are *Error
// (ErrConnectionTimeout, ErrInvocationFailed), or wrap ErrNotFound (no such
// server, or a tool it did not list) or ErrDisabled.
//
// A failed call is sent again only for a tool whose annotations say it is
// read-only or idempotent: repeating any other call could repeat its
// effect (INV-MCP-ECO-101).
func (m *Manager) Call(ctx context.Context, serverID, toolName string, args json.RawMessage) (CallResult, error) {
	s, tool, err := m.callTarget(serverID, toolName)
	if err != nil {
		return CallResult{}, err
	}
	retrySafe := tool.RetrySafe()
	attempts := 1
	if retrySafe {
		attempts = s.cfg.Retries() + 1
	}
	var out CallResult
	n, err := retry(ctx, attempts, m.backoff, func(ctx context.Context) error {
		c, err := m.connFor(ctx, s, retrySafe)
		if err != nil {
			return err
		}
		res, err := c.call(ctx, toolName, args)
		if err != nil {
			// A call the caller gave up on says nothing about the server.
			if broken(err) && ctx.Err() == nil {
				m.dropConn(s, c, err)
			}
			return err
		}
		out = res
		return nil
	})
	if err != nil {
		return CallResult{}, err
	}
	if n > 1 {
		m.log.Info().Str("server", serverID).Str("tool", toolName).Int("attempts", n).Msg("upstream call succeeded after retries")
	}
	out.Attempts = n
	return out, nil
}

// callTarget finds the server and the tool among those it listed.
func (m *Manager) callTarget(serverID, toolName string) (*server, Tool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.servers[serverID]
	switch {
	case s == nil:
		return nil, Tool{}, fmt.Errorf("upstream %q: %w", serverID, ErrNotFound)
	case !s.cfg.IsEnabled():
		return nil, Tool{}, fmt.Errorf("upstream %q: %w", serverID, ErrDisabled)
	}
	for _, t := range s.tools {
		if t.Name == toolName {
			return s, t, nil
		}
	}
	return nil, Tool{}, fmt.Errorf("upstream %q has no tool %q: %w", serverID, toolName, ErrNotFound)
}

// connFor returns s's session, connecting first if it has none (its
// tools may still be offered during the grace period). When the call
// itself will be retried (retrySafe), one connect attempt is made per
// call attempt; otherwise connecting gets its own retries: the call has
// not been sent yet, so retrying the connection is safe.
func (m *Manager) connFor(ctx context.Context, s *server, retrySafe bool) (*conn, error) {
	m.mu.Lock()
	c, closed := s.conn, m.closed
	m.mu.Unlock()
	if closed {
		return nil, &Error{Kind: ErrInvocationFailed, Server: s.cfg.ID, Op: "connect", Err: errors.New("the manager is closed")}
	}
	if c != nil {
		return c, nil
	}
	attempts := s.cfg.Retries() + 1
	if retrySafe {
		attempts = 1
	}
	res := m.syncServer(ctx, s, false, attempts)
	if res.err != nil {
		return nil, res.err
	}
	m.mu.Lock()
	c = s.conn
	m.mu.Unlock()
	if c == nil {
		return nil, &Error{Kind: ErrInvocationFailed, Server: s.cfg.ID, Op: "connect", Err: errors.New("the server is no longer in service")}
	}
	return c, nil
}
