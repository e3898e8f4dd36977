package transport

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Errors of a SessionStore.
var (
	ErrSessionNotFound = errors.New("client session not found")
	ErrTooManySessions = errors.New("too many client sessions")
	// ErrPrincipalSessions: the principal holds its share of sessions
	// already (docs/adr/0027-session-caps.md); it should end one (DELETE)
	// or wait.
	ErrPrincipalSessions = errors.New("too many client sessions for this principal")
	// ErrTenantSessions: the principal's tenant, all its principals
	// together, holds its share already.
	ErrTenantSessions = errors.New("too many client sessions for this tenant")
	ErrClosed         = errors.New("session store closed")
	// ErrSessionPending: the store cannot tell yet whether the session
	// lives (a shared store that lost its data may be about to get it
	// back). The client is told to retry (503 with Retry-After), never
	// that the session is gone; since anyone may name such a session, it
	// is no error of the server's.
	ErrSessionPending = errors.New("the client session may still be written back")
)

// sessionCaps are the shares of client sessions one principal and one
// tenant may hold; 0 means no cap.
type sessionCaps struct{ perPrincipal, perTenant int }

func capsOf(o Options) sessionCaps {
	return sessionCaps{perPrincipal: o.MaxSessionsPerPrincipal, perTenant: o.MaxSessionsPerTenant}
}

// SessionStore finds client sessions by id. The in-memory store is the
// default; a Sharing gives a shared one (Options.Share).
type SessionStore interface {
	Create(ctx context.Context, in SessionInit) (*ClientSession, error)
	// Get returns ErrSessionNotFound for an unknown or ended session.
	Get(ctx context.Context, id string) (*ClientSession, error)
	// Delete ends the session; ErrSessionNotFound if there is none.
	Delete(ctx context.Context, id string) error
	// Each calls fn for every live session until fn returns false.
	Each(fn func(*ClientSession) bool)
	Len() int
	// Close ends every session and stops background work.
	Close()
}

// memorySessions keeps client sessions in this process and ends those idle
// longer than the idle timeout.
type memorySessions struct {
	parent  context.Context
	expired func(*ClientSession) // see newMemorySessions
	idle    time.Duration
	limit   int
	caps    sessionCaps
	now     func() time.Time
	// index is the subscription index of the sessions made here, unless
	// SessionInit names one.
	index *subscriptions

	mu       sync.RWMutex
	byID     map[string]*ClientSession
	owned    map[string]int // sessions per principal id
	byTenant map[string]int // sessions per tenant
	closed   bool

	stop chan struct{}
	done chan struct{}
	// sweeps counts the sweeper's finished rounds: what a test waits for
	// instead of a sleep.
	sweeps atomic.Int64
}

// expired, when not nil, is told of every session the idle sweep ends.
func newMemorySessions(parent context.Context, idle time.Duration, limit int, caps sessionCaps, now func() time.Time, index *subscriptions, expired func(*ClientSession)) *memorySessions {
	m := &memorySessions{
		parent: parent, idle: idle, limit: limit, caps: caps, now: now, index: index, expired: expired,
		byID: map[string]*ClientSession{}, owned: map[string]int{}, byTenant: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go m.sweep(min(max(idle/4, 10*time.Millisecond), time.Minute))
	return m
}

// NewSessionID returns a new client session id: 128 random bits as
// unpadded base64url (22 characters), visible ASCII only, as
// basic/transports requires of Mcp-Session-Id.
func NewSessionID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate client session id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func (m *memorySessions) Create(_ context.Context, in SessionInit) (*ClientSession, error) {
	id, err := NewSessionID()
	if err != nil {
		return nil, err
	}
	if in.index == nil {
		in.index = m.index
	}
	s := NewClientSession(m.parent, id, in, m.now())
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		// The idle sweeper has stopped; nothing would ever reap it.
		s.Terminate()
		return nil, ErrClosed
	}
	if len(m.byID) >= m.limit {
		s.Terminate()
		return nil, ErrTooManySessions
	}
	if m.caps.perPrincipal > 0 && m.owned[s.principal] >= m.caps.perPrincipal {
		s.Terminate()
		return nil, ErrPrincipalSessions
	}
	if m.caps.perTenant > 0 && m.byTenant[s.tenant] >= m.caps.perTenant {
		s.Terminate()
		return nil, ErrTenantSessions
	}
	m.byID[id] = s
	m.owned[s.principal]++
	m.byTenant[s.tenant]++
	return s, nil
}

func (m *memorySessions) Get(_ context.Context, id string) (*ClientSession, error) {
	m.mu.RLock()
	s := m.byID[id]
	m.mu.RUnlock()
	if s == nil {
		return nil, ErrSessionNotFound
	}
	return s, nil
}

func (m *memorySessions) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	s := m.byID[id]
	if s != nil {
		delete(m.byID, id)
		uncount(m.owned, s.principal)
		uncount(m.byTenant, s.tenant)
	}
	m.mu.Unlock()
	if s == nil {
		return ErrSessionNotFound
	}
	s.Terminate()
	return nil
}

// uncount takes one session off key's count, forgetting a key with none.
func uncount(counts map[string]int, key string) {
	if counts[key]--; counts[key] <= 0 {
		delete(counts, key)
	}
}

func (m *memorySessions) Each(fn func(*ClientSession) bool) { eachSession(&m.mu, m.byID, fn) }

// eachSession calls fn for a snapshot of byID, taken under mu and walked
// without it, so fn may call back into the store.
func eachSession(mu *sync.RWMutex, byID map[string]*ClientSession, fn func(*ClientSession) bool) {
	mu.RLock()
	all := make([]*ClientSession, 0, len(byID))
	for _, s := range byID {
		all = append(all, s)
	}
	mu.RUnlock()
	for _, s := range all {
		if !fn(s) {
			return
		}
	}
}

func (m *memorySessions) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.byID)
}

func (m *memorySessions) Close() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
	m.mu.Lock()
	all := m.byID
	m.byID, m.owned, m.byTenant = map[string]*ClientSession{}, map[string]int{}, map[string]int{}
	m.closed = true
	m.mu.Unlock()
	for _, s := range all {
		s.Terminate()
	}
}

// sweep ends idle sessions: a client that vanished without DELETE must
// not keep its goroutines and logs forever, or abandoned sessions would
// grow the process without bound (docs/adr/0032-input-bounds.md).
func (m *memorySessions) sweep(every time.Duration) {
	defer close(m.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			cutoff := m.now().Add(-m.idle)
			var idle []*ClientSession
			m.Each(func(s *ClientSession) bool {
				if s.IdleSince(cutoff) {
					idle = append(idle, s)
				}
				return true
			})
			for _, s := range idle {
				// Gone already (a DELETE came first) is fine, and counted
				// there.
				if m.Delete(context.Background(), s.id) == nil && m.expired != nil {
					m.expired(s)
				}
			}
			m.sweeps.Add(1)
		}
	}
}
