package transport

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
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
)

// sessionCaps are the shares of client sessions one principal and one
// tenant may hold; 0 means no cap.
type sessionCaps struct{ perPrincipal, perTenant int }

func capsOf(o Options) sessionCaps {
	return sessionCaps{perPrincipal: o.MaxSessionsPerPrincipal, perTenant: o.MaxSessionsPerTenant}
}

// SessionStore finds client sessions by id. The in-memory store is the
// default; the scale-out work adds a shared one behind the same interface.
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
	parent context.Context
	idle   time.Duration
	limit  int
	caps   sessionCaps
	now    func() time.Time

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

func newMemorySessions(parent context.Context, idle time.Duration, limit int, caps sessionCaps, now func() time.Time) *memorySessions {
	m := &memorySessions{
		parent: parent, idle: idle, limit: limit, caps: caps, now: now,
		byID: map[string]*ClientSession{}, owned: map[string]int{}, byTenant: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go m.sweep(min(max(idle/4, 10*time.Millisecond), time.Minute))
	return m
}

// newSessionID returns 128 random bits as unpadded base64url: visible ASCII
// only, as basic/transports requires of Mcp-Session-Id.
func newSessionID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate client session id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// sessionIDLen is the length of the ids newSessionID makes.
const sessionIDLen = 22

// offlineSessionIDLen is the length of the ids newOfflineSessionID makes:
// 24 bytes, the first four the second it was made.
const offlineSessionIDLen = 32

// newOfflineSessionID returns the id of a shared client session created
// while Redis could not be reached (docs/adr/0047-sessions-created-in-an-outage.md):
// its length tells the other replicas that Redis may not hold it yet, and
// since when, so that they answer 503 rather than 404 until it is written
// back. 160 random bits keep it as unguessable as newSessionID's 128.
func newOfflineSessionID(now time.Time) (string, error) {
	var b [24]byte
	binary.BigEndian.PutUint32(b[:4], uint32(now.Unix()))
	if _, err := rand.Read(b[4:]); err != nil {
		return "", fmt.Errorf("generate client session id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// offlineSince returns when an id of newOfflineSessionID was made; false
// for any other id.
func offlineSince(id string) (time.Time, bool) {
	if len(id) != offlineSessionIDLen {
		return time.Time{}, false
	}
	var b [24]byte
	if n, err := base64.RawURLEncoding.Strict().Decode(b[:], []byte(id)); err != nil || n != len(b) {
		return time.Time{}, false
	}
	return time.Unix(int64(binary.BigEndian.Uint32(b[:4])), 0), true
}

// possibleSessionID reports whether id could have been made by
// newSessionID (16 bytes in unpadded base64url) or newOfflineSessionID.
// Any other id names no session of ours, in any store, so the shared
// store answers it 404 without a Redis lookup: a flood of made-up ids
// costs nothing and cannot make Redis look unavailable to every client
// (docs/adr/0023-get-needs-redis-position.md).
func possibleSessionID(id string) bool {
	if _, ok := offlineSince(id); ok {
		return true
	}
	if len(id) != sessionIDLen {
		return false
	}
	var b [16]byte
	n, err := base64.RawURLEncoding.Strict().Decode(b[:], []byte(id))
	return err == nil && n == len(b)
}

func (m *memorySessions) Create(_ context.Context, in SessionInit) (*ClientSession, error) {
	id, err := newSessionID()
	if err != nil {
		return nil, err
	}
	s := newClientSession(m.parent, id, in, m.now())
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		// The idle sweeper has stopped; nothing would ever reap it.
		s.terminate()
		return nil, ErrClosed
	}
	if len(m.byID) >= m.limit {
		s.terminate()
		return nil, ErrTooManySessions
	}
	if m.caps.perPrincipal > 0 && m.owned[s.principal] >= m.caps.perPrincipal {
		s.terminate()
		return nil, ErrPrincipalSessions
	}
	if m.caps.perTenant > 0 && m.byTenant[s.tenant] >= m.caps.perTenant {
		s.terminate()
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
	s.terminate()
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
		s.terminate()
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
			var idle []string
			m.Each(func(s *ClientSession) bool {
				if s.idleSince(cutoff) {
					idle = append(idle, s.id)
				}
				return true
			})
			for _, id := range idle {
				_ = m.Delete(context.Background(), id) // gone already is fine
			}
			m.sweeps.Add(1)
		}
	}
}
