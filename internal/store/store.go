package store

import (
	"context"
	"encoding/json"
	"time"
)

// Bounds shared by both implementations and checked by the contract suite.
const (
	MaxNamespaceLen = 128     // bytes
	MaxKeyLen       = 512     // bytes
	MaxTags         = 32      // per entry or agent
	MaxTagLen       = 64      // bytes
	MaxSearchLimit  = 50      // memory search results
	DefSearchLimit  = 10      // when the caller gives none
	MaxListLimit    = 100     // any list page
	DefListLimit    = 50      // when the caller gives none
	MaxBulkKeys     = 1000    // memory bulk delete by keys
	MaxTextLen      = 4096    // task, description, summary, error message (bytes)
	MaxIDLen        = 128     // agent and session ids (bytes)
	TopErrorCodes   = 5       // per tool in AnalyzeTraces
	DefaultMaxValue = 1 << 20 // default MaxValueBytes
	// DefaultMaxTracesInMemory is the default MaxTracesInMemory. A held
	// trace costs about 100 bytes of heap in records the garbage
	// collector does not scan (memstore's TestTraceFootprint), so
	// 100,000 are about 10 MB: well
	// inside the Helm chart's default 512 MiB limit, next to the 100 MB
	// in-process cache, and still some minutes of a busy server's calls.
	DefaultMaxTracesInMemory = 100_000
	// DefaultMaxValueDepth is the default MaxValueDepth: far deeper than
	// the tool arguments' own limit (limits.maxObjectDepth, 10), far
	// shallower than what PostgreSQL's parser recurses through.
	DefaultMaxValueDepth = 64
	// DefaultMaxNumberLength is the default MaxNumberLength: every
	// float64, written out in full, fits (5e-324 takes 326 characters).
	DefaultMaxNumberLength = 400
)

// Options are the settings both implementations take. Zero fields take
// their defaults.
type Options struct {
	// MaxValueBytes bounds a memory value's JSON and a metadata object's,
	// both as received and as stored (canonical form; see canonical.go).
	MaxValueBytes int
	// MaxValueDepth bounds the nesting of objects and arrays in every
	// JSON document the store keeps.
	MaxValueDepth int
	// MaxNumberLength bounds the characters of a number as it is stored
	// (its decimal form) and the magnitude of its exponent.
	MaxNumberLength int
	// MaxTracesInMemory bounds the traces the embedded store holds, of
	// all tenants together: beyond it the earliest written is dropped
	// (DefaultMaxTracesInMemory when 0). PostgreSQL ignores it; its
	// table is bounded by retention and sampling.
	MaxTracesInMemory int
	// Clock is what the store reads the time from: for the stamps it
	// writes (createdAt, updatedAt, expiresAt, revokedAt…) and for the
	// instant it judges expiry against. Nil means the wall clock. Tests
	// set it so that which of two writes is the more recent, and whether
	// an entry has expired, do not depend on how fast the machine runs.
	Clock func() time.Time
}

// Now reads the store's clock (Clock, or the wall clock when it is nil)
// the way both stores stamp rows: UTC, truncated to the microsecond
// PostgreSQL keeps.
func (o Options) Now() time.Time {
	if o.Clock == nil {
		return Now()
	}
	return o.Clock().UTC().Truncate(time.Microsecond)
}

// TraceLimit returns MaxTracesInMemory or its default.
func (o Options) TraceLimit() int {
	if o.MaxTracesInMemory > 0 {
		return o.MaxTracesInMemory
	}
	return DefaultMaxTracesInMemory
}

// ValueLimit returns MaxValueBytes or its default.
func (o Options) ValueLimit() int {
	if o.MaxValueBytes > 0 {
		return o.MaxValueBytes
	}
	return DefaultMaxValue
}

// JSONLimits returns the limits of a memory value or a metadata object.
func (o Options) JSONLimits() JSONLimits {
	return o.jsonLimits(o.ValueLimit())
}

// jsonLimits returns the limits of a document of at most maxBytes.
func (o Options) jsonLimits(maxBytes int) JSONLimits {
	l := JSONLimits{MaxBytes: maxBytes, MaxDepth: o.MaxValueDepth, MaxNumberLength: o.MaxNumberLength}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxValueDepth
	}
	if l.MaxNumberLength <= 0 {
		l.MaxNumberLength = DefaultMaxNumberLength
	}
	return l
}

// Store is the contract both implementations satisfy; storetest checks it.
// Methods are safe for concurrent use. The tenant is never empty.
type Store interface {
	MemoryStore
	SessionStore
	AgentStore
	TraceStore
	UpstreamStore
	APIKeyStore
	// Ping reports whether the backing database answers.
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close()
}

// MemoryStore keeps agents' memory entries. An expired entry is absent
// for every purpose: it is never returned, a write over it creates a new
// entry (version 1), and ifVersion 0 succeeds over it.
type MemoryStore interface {
	PutMemory(ctx context.Context, tenant string, in PutMemory) (MemoryEntry, error)
	GetMemory(ctx context.Context, tenant, namespace, key string) (MemoryEntry, error)
	// SearchMemory ranks by relevance: PostgreSQL's ts_rank over the
	// websearch_to_tsquery of Query; the in-memory store by how often the
	// query's terms occur, so simple cases order the same. Ties go to the
	// most recently updated, then to (namespace, key) order.
	SearchMemory(ctx context.Context, tenant string, q SearchMemory) ([]SearchHit, error)
	ListMemory(ctx context.Context, tenant string, q ListMemory) (Page[MemoryEntry], error)
	// DeleteMemory removes one entry; ErrNotFound if there is none.
	DeleteMemory(ctx context.Context, tenant, namespace, key string) error
	// BulkDeleteMemory removes, in one transaction, the listed keys or
	// every key with prefix (exactly one of the two), and returns the keys
	// it removed. Missing keys are skipped.
	BulkDeleteMemory(ctx context.Context, tenant, namespace string, keys []string, prefix string) ([]string, error)
	// RecentMemory lists entries most recently updated first, strictly
	// after pos when it is non-nil.
	RecentMemory(ctx context.Context, tenant string, after *Pos, limit int) ([]MemoryEntry, error)
	// PurgeExpiredMemory deletes expired entries of every tenant and
	// reports how many.
	PurgeExpiredMemory(ctx context.Context) (int64, error)
}

// SessionStore keeps collaboration sessions. Every change bumps Version;
// concurrent changes are decided by it (optimistic concurrency) and the
// loser sees the winner's state — never a lost update.
type SessionStore interface {
	CreateSession(ctx context.Context, tenant string, in NewSession) (Session, error)
	GetSession(ctx context.Context, tenant, id string) (Session, error)
	// JoinSession adds agentID with role (RoleCollaborator or
	// RoleDelegate). Joining twice is a no-op that returns the session.
	// ErrConflict when the session is not active or already has
	// maxParticipants participants (the initiator counts).
	JoinSession(ctx context.Context, tenant, id, agentID, role string, maxParticipants int) (Session, error)
	// LeaveSession removes agentID. ErrConflict for the initiator of an
	// active session or for a session that has ended; ErrNotFound when
	// agentID is not a participant.
	LeaveSession(ctx context.Context, tenant, id, agentID string) (Session, error)
	// CompleteSession and FailSession end an active session; ErrConflict
	// when it has already ended.
	CompleteSession(ctx context.Context, tenant, id, summary string) (Session, error)
	FailSession(ctx context.Context, tenant, id string, cause SessionError) (Session, error)
	ListSessions(ctx context.Context, tenant string, q ListSessions) (Page[Session], error)
	RecentSessions(ctx context.Context, tenant string, after *Pos, limit int) ([]Session, error)
}

// AgentStore keeps the agent registry.
type AgentStore interface {
	// RegisterAgent adds a; ErrAlreadyExists if the id is taken.
	RegisterAgent(ctx context.Context, tenant string, a Agent) (Agent, error)
	GetAgent(ctx context.Context, tenant, id string) (Agent, error)
	ListAgents(ctx context.Context, tenant string, q ListAgents) (Page[Agent], error)
	// RemoveAgent deletes the agent; ErrNotFound if there is none.
	RemoveAgent(ctx context.Context, tenant, id string) error
	RecentAgents(ctx context.Context, tenant string, after *Pos, limit int) ([]Agent, error)
}

// TraceStore keeps the trace of tool calls. Traces are written in
// batches, off the request path.
type TraceStore interface {
	// InsertTraces writes a batch (each trace carries its tenant and id).
	InsertTraces(ctx context.Context, batch []Trace) error
	GetTrace(ctx context.Context, tenant, id string) (Trace, error)
	ListTraces(ctx context.Context, tenant string, q ListTraces) (Page[Trace], error)
	// AnalyzeTraces summarizes per tool, in tool-name order.
	AnalyzeTraces(ctx context.Context, tenant string, q AnalyzeTraces) ([]ToolStats, error)
	// PurgeTraces deletes traces of every tenant started before cutoff
	// and reports how many.
	PurgeTraces(ctx context.Context, cutoff time.Time) (int64, error)
}

// UpstreamStore keeps the upstream MCP servers registered through the admin
// API. Upstreams belong to the deployment, not to a tenant.
type UpstreamStore interface {
	// ListUpstreams returns every record, ordered by ID (byte order).
	ListUpstreams(ctx context.Context) ([]UpstreamRecord, error)
	GetUpstream(ctx context.Context, id string) (UpstreamRecord, error) // ErrNotFound
	// CreateUpstream stores a new record (Version 1, both timestamps now); ErrAlreadyExists when the id is taken.
	CreateUpstream(ctx context.Context, id string, config json.RawMessage) (UpstreamRecord, error)
	// UpdateUpstream replaces the config of an existing record, Version+1, UpdatedAt now.
	// ifVersion, when non-nil, must equal the current version or ErrConflict. ErrNotFound when absent.
	UpdateUpstream(ctx context.Context, id string, config json.RawMessage, ifVersion *int64) (UpstreamRecord, error)
	DeleteUpstream(ctx context.Context, id string) error // ErrNotFound
}
