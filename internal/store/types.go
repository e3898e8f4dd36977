package store

import (
	"encoding/json"
	"time"
)

// MemoryEntry is one value an agent stored under (namespace, key).
type MemoryEntry struct {
	Namespace string          `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Tags      []string        `json:"tags"` // never nil; sorted, no duplicates
	// Version is 1 for a new entry and grows by one with every write; it is
	// what ifVersion compares against (optimistic concurrency).
	Version   int64      `json:"version"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// PutMemory is a memory write.
type PutMemory struct {
	Namespace string
	Key       string
	Value     json.RawMessage // any JSON value
	Tags      []string
	// TTL > 0 makes the entry expire after it; 0 means it never expires.
	TTL time.Duration
	// IfVersion, when set, makes the write conditional: 0 means "only if
	// the entry does not exist", n > 0 "only if its version is n".
	// A mismatch is ErrConflict and changes nothing.
	IfVersion *int64
}

// SearchMemory is a full-text query over key, value text and tags.
type SearchMemory struct {
	// Query uses web-search syntax: words (all must match), "quoted
	// phrases", -excluded words, "or" between alternatives.
	Query string
	// Namespace "" searches every namespace of the tenant.
	Namespace string
	// Tags, if any, must all be present on a hit.
	Tags  []string
	Limit int // 1..MaxSearchLimit
}

// SearchHit is a search result with its relevance; higher ranks first.
type SearchHit struct {
	Entry MemoryEntry `json:"entry"`
	Score float64     `json:"score"`
}

// ListMemory lists entries in (namespace, key) order.
type ListMemory struct {
	Namespace string // "" lists every namespace of the tenant
	Prefix    string // keys starting with it
	Tags      []string
	Cursor    string // from a previous Page.NextCursor
	Limit     int    // 1..MaxListLimit
}

// SessionStatus is the state of a collaboration session. It moves
// active → completed or active → failed; both are terminal.
type SessionStatus string

const (
	SessionActive    SessionStatus = "active"
	SessionCompleted SessionStatus = "completed"
	SessionFailed    SessionStatus = "failed"
)

// Participant roles. The initiator joins as RoleInitiator when the
// session is created.
const (
	RoleInitiator    = "initiator"
	RoleCollaborator = "collaborator"
	RoleDelegate     = "delegate"
)

// Session is a multi-agent collaboration session (not the MCP client
// session of the transport).
type Session struct {
	ID           string          `json:"id"`
	Task         string          `json:"task"`
	Initiator    string          `json:"initiator"`
	Status       SessionStatus   `json:"status"`
	Metadata     json.RawMessage `json:"metadata,omitempty"` // a JSON object or absent
	Participants []Participant   `json:"participants"`       // in join order, initiator first
	Summary      string          `json:"summary,omitempty"`  // set by Complete
	Error        *SessionError   `json:"error,omitempty"`    // set by Fail
	Version      int64           `json:"version"`
	CreatedAt    time.Time       `json:"createdAt"`
	UpdatedAt    time.Time       `json:"updatedAt"`
	EndedAt      *time.Time      `json:"endedAt,omitempty"`
}

// Participant is an agent taking part in a session.
type Participant struct {
	AgentID  string    `json:"agentId"`
	Role     string    `json:"role"`
	JoinedAt time.Time `json:"joinedAt"`
}

// SessionError is why a session failed.
type SessionError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// NewSession creates a session.
type NewSession struct {
	Task      string
	Initiator string
	Metadata  json.RawMessage // a JSON object, or empty
}

// ListSessions lists sessions newest first (createdAt, then id).
type ListSessions struct {
	Status    SessionStatus // "" for any
	Initiator string        // "" for any
	Cursor    string
	Limit     int
}

// Agent is an entry of the agent registry.
type Agent struct {
	ID           string          `json:"id"`
	Description  string          `json:"description"`
	DisplayName  string          `json:"displayName,omitempty"`
	Capabilities []string        `json:"capabilities"` // never nil; sorted, no duplicates
	Tags         []string        `json:"tags"`         // never nil; sorted, no duplicates
	Metadata     json.RawMessage `json:"metadata,omitempty"`
	CreatedAt    time.Time       `json:"createdAt"`
	UpdatedAt    time.Time       `json:"updatedAt"`
}

// ListAgents lists agents in id order.
type ListAgents struct {
	Tag        string // "" for any
	Capability string // "" for any
	Cursor     string
	Limit      int
}

// Trace status values.
const (
	TraceOK    = "ok"
	TraceError = "error"
)

// Trace records one tools/call: what was called, by which client session,
// how it ended and how big it was — never the arguments themselves.
type Trace struct {
	ID     string `json:"id"`
	Tenant string `json:"-"`
	Tool   string `json:"tool"`
	// ClientSession is given as the client session's id and stored, and
	// so read back, as its ClientSessionHandle: the id is a credential.
	ClientSession string    `json:"clientSession,omitempty"`
	Status        string    `json:"status"`              // TraceOK or TraceError
	ErrorCode     string    `json:"errorCode,omitempty"` // the envelope's error.code
	DurationMs    float64   `json:"durationMs"`
	ArgBytes      int64     `json:"argBytes"`
	ResultBytes   int64     `json:"resultBytes"`
	StartedAt     time.Time `json:"startedAt"`
	// OtelTraceID is the OpenTelemetry trace the call was part of, 32 hex
	// digits, when that trace was sampled; "" otherwise
	// (docs/adr/0046-opentelemetry.md).
	OtelTraceID string `json:"otelTraceId,omitempty"`
}

// ListTraces lists traces newest first (startedAt, then id).
type ListTraces struct {
	Tool   string    // "" for any
	Status string    // "" for any
	Since  time.Time // zero for any
	Cursor string
	Limit  int
}

// AnalyzeTraces selects the traces to summarize.
type AnalyzeTraces struct {
	Tool  string    // "" for every tool
	Since time.Time // zero for all retained traces
}

// ToolStats summarizes the traces of one tool. Percentiles are
// nearest-rank (PostgreSQL's percentile_disc): the smallest duration d
// such that at least p of the calls took d or less.
type ToolStats struct {
	Tool      string      `json:"tool"`
	Calls     int64       `json:"calls"`
	Errors    int64       `json:"errors"`
	ErrorRate float64     `json:"errorRate"` // Errors / Calls
	P50Ms     float64     `json:"p50DurationMs"`
	P95Ms     float64     `json:"p95DurationMs"`
	P99Ms     float64     `json:"p99DurationMs"`
	TopErrors []CodeCount `json:"topErrors"` // at most TopErrorCodes, most frequent first, then by code
}

// CodeCount is how often an error code occurred.
type CodeCount struct {
	Code  string `json:"code"`
	Count int64  `json:"count"`
}

// Page is one page of a keyset-paginated list.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"` // "" on the last page
}

// Pos is a position in a most-recently-updated-first listing: items come
// in (UpdatedAt, ID) descending order, and a listing "after" Pos returns
// only items strictly below it. For memory entries ID is
// MemoryID(namespace, key).
type Pos struct {
	UpdatedAt time.Time
	ID        string
}

// UpstreamRecord is an upstream MCP server registered through the admin
// API. Upstreams belong to the deployment, not to a tenant. The store
// keeps Config as an opaque JSON object; package upstream owns its fields
// and their validation.
type UpstreamRecord struct {
	ID        string          `json:"id"`
	Config    json.RawMessage `json:"config"`
	Version   int64           `json:"version"` // 1 when created, +1 per update
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
}
