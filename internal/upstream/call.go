package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Call calls a tool of a server. Arguments are not validated here: the
// caller validated them against the tool's inputSchema already
// (INV-MCP-ECO-300). An upstream isError answer is a CallResult with
// IsError set, not an error (INV-MCP-ECO-301). Errors are *Error
// (ErrConnectionTimeout, ErrInvocationFailed, ErrUnavailable), or wrap
// ErrNotFound (no such server, or a tool it did not list) or ErrDisabled.
//
// The call has one deadline: the server's requestTimeoutMs, or ctx's if
// sooner. A request that may have reached the server — it timed out, or
// its answer was lost — is never sent again, whatever the tool's
// annotations say: the server may have done the work, and a retry could
// do it twice. Failures before the request left (no connection, a
// refused dial) are retried within the deadline, up to maxRetries
// (INV-MCP-ECO-101). While the server is down (its last connection
// attempt failed and the next is not due yet), the call fails at once
// with ErrUnavailable and when to try again.
func (m *Manager) Call(ctx context.Context, serverID, toolName string, args json.RawMessage) (CallResult, error) {
	return m.CallRelayed(ctx, serverID, toolName, args, nil)
}

// CallRelayed is Call with what the server sends during the call — its
// progress, its log messages, its requests for sampling, elicitation or
// roots — passed to relay (see Relay).
func (m *Manager) CallRelayed(ctx context.Context, serverID, toolName string, args json.RawMessage, relay Relay) (CallResult, error) {
	return m.CallRound(ctx, serverID, toolName, args, Round{}, relay)
}

// CallRound is CallRelayed for one round of a multi-round-trip call
// (basic/patterns/mrtr): a server of the modern era may answer with
// CallResult.Input, and the client's retry comes back here with its
// answers and the server's state in round.
func (m *Manager) CallRound(ctx context.Context, serverID, toolName string, args json.RawMessage, round Round, relay Relay) (CallResult, error) {
	s, _, err := m.callTarget(serverID, toolName)
	if err != nil {
		return CallResult{}, err
	}
	if err := m.unavailable(s, "tools/call "+toolName); err != nil {
		return CallResult{}, err
	}
	start := time.Now()
	ctx, span := m.startCall(ctx, serverID, toolName)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout())
	defer cancel()
	out, err := m.callRound(ctx, s, serverID, toolName, args, round, relay)
	if span != nil || m.opts.ObserveCall != nil {
		errType, failed := callErrType(out, err)
		endCall(span, errType, failed)
		if m.opts.ObserveCall != nil {
			m.opts.ObserveCall(ctx, serverID, toolName, time.Since(start), errType)
		}
	}
	return out, err
}

// callRound is CallRound's call to s, within ctx's deadline.
func (m *Manager) callRound(ctx context.Context, s *server, serverID, toolName string, args json.RawMessage, round Round, relay Relay) (CallResult, error) {
	var out CallResult
	n, err := retry(ctx, s.cfg.Retries()+1, m.backoff, func(ctx context.Context) error {
		c, err := m.connFor(ctx, s)
		if err != nil {
			return err
		}
		res, err := c.callStream(ctx, toolName, args, round, relay)
		if err != nil {
			// A call the caller gave up on says nothing about the server.
			if broken(err) && ctx.Err() == nil {
				m.dropConn(s, c, err)
			}
			if mayHaveArrived(err) {
				return permanent(err)
			}
			return err
		}
		out = res
		return nil
	})
	if err != nil {
		// Not connected, and the server is down now: say so, and when to
		// try again, as to every call until it is back. A handshake that
		// timed out stays ErrConnectionTimeout (INV-MCP-ECO-100).
		if !mayHaveArrived(err) && !errors.Is(err, ErrConnectionTimeout) {
			if u := m.unavailable(s, "tools/call "+toolName); u != nil {
				return CallResult{}, withAttempts(u, n)
			}
		}
		return CallResult{}, err
	}
	if n > 1 {
		m.log.Info().Str("server", serverID).Str("tool", toolName).Int("attempts", n).Msg("upstream call succeeded after retries")
	}
	out.Attempts = n
	return out, nil
}

// unavailable is the ErrUnavailable of a call to s while s is down, or
// nil.
func (m *Manager) unavailable(s *server, op string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	wait := time.Until(s.nextTry)
	if s.conn != nil || !s.down || wait <= 0 {
		return nil
	}
	return &Error{Kind: ErrUnavailable, Server: s.cfg.ID, Op: op, RetryAfter: wait, url: s.cfg.URL,
		Err: failed(s.downReason, nil)}
}

// mayHaveArrived reports whether a failed call's request may have
// reached the server.
func mayHaveArrived(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.sent
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
// tools may still be offered during the grace period): one connect
// attempt per call attempt, since Call retries what fails before the
// request is sent.
func (m *Manager) connFor(ctx context.Context, s *server) (*conn, error) {
	m.mu.Lock()
	c, closed := s.conn, m.closed
	m.mu.Unlock()
	if closed {
		return nil, &Error{Kind: ErrInvocationFailed, Server: s.cfg.ID, Op: "connect", Err: errors.New("the manager is closed")}
	}
	if c != nil {
		return c, nil
	}
	res := m.syncServer(ctx, s, false, 1)
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

// Modern reports whether serverID's session is of the modern era, whose
// server asks for the client's input in rounds (CallResult.Input) and
// never with requests on a call's stream; false while it has no session.
func (m *Manager) Modern(serverID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.servers[serverID]
	return s != nil && s.conn != nil && s.conn.modern()
}
