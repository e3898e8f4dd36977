package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// State is a server's connection state (INV-MCP-ECO-200).
type State string

const (
	StateConnecting State = "connecting"
	StateConnected  State = "connected"
	StateError      State = "error"
	StateDisabled   State = "disabled"
)

// Source says where a server was declared: the YAML file (read-only
// through the admin API) or the admin API (persisted in the store).
type Source string

const (
	SourceConfig Source = "config"
	SourceAPI    Source = "api"
)

// Tool is one upstream tool as mcp-runtime offers it.
type Tool struct {
	// Server is the upstream's id; Name the tool's name there, sent as is
	// in tools/call.
	Server string
	Name   string
	// Canonical is serverId.toolName with each segment reduced to
	// [A-Za-z0-9_-] (see CanonicalName).
	Canonical   string
	Title       string
	Description string
	// InputSchema compiled without error (JSON Schema 2020-12 unless its
	// $schema says otherwise) and has type "object".
	InputSchema json.RawMessage
	// OutputSchema is the tool's own, compact; nil when it declares none.
	// A gateway lists it as it is, so the structuredContent it passes on
	// is what the tool declared.
	OutputSchema json.RawMessage
	Annotations  *protocol.ToolAnnotations
	// Category is the server's timeout category (Config.TimeoutCategory),
	// which the caller's guardrails time the tool's calls by.
	Category string
}

// ToolProblem is an upstream tool left out of the tool set, and why.
type ToolProblem struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Status is a server's configuration and condition, as the admin API
// shows it.
type Status struct {
	Config Config `json:"config"`
	Source Source `json:"source"`
	State  State  `json:"state"`
	// LastError is the last failure's message; empty after a success.
	LastError string `json:"lastError,omitempty"`
	// ConsecutiveFailures counts failures since the last success.
	ConsecutiveFailures int        `json:"consecutiveFailures"`
	LastSuccessAt       *time.Time `json:"lastSuccessAt,omitempty"`
	// LastDiscoveryAt and DiscoveryMs: when the tool list was last
	// fetched from the server and how long that took.
	LastDiscoveryAt *time.Time `json:"lastDiscoveryAt,omitempty"`
	DiscoveryMs     int64      `json:"discoveryMs"`
	ToolCount       int        `json:"toolCount"`
	// ResourceCount, ResourceTemplateCount and PromptCount count what the
	// server offers of each (see Surface), conflicts included.
	ResourceCount         int `json:"resourceCount"`
	ResourceTemplateCount int `json:"resourceTemplateCount"`
	PromptCount           int `json:"promptCount"`
	// InvalidTools were left out (an invalid inputSchema, say).
	InvalidTools []ToolProblem `json:"invalidTools,omitempty"`
	// SurfaceProblems are the prompts, resources and resource templates
	// left out, or lists left out whole (over a bound), and why; at most
	// 100.
	SurfaceProblems []SurfaceProblem `json:"surfaceProblems,omitempty"`
	// ResourceConflicts are resources and templates of this server that
	// a server whose id sorts first lists too, and offers; at most 100.
	ResourceConflicts []ResourceConflict `json:"resourceConflicts,omitempty"`
	ServerName        string             `json:"serverName,omitempty"`
	ServerVersion     string             `json:"serverVersion,omitempty"`
	ProtocolVersion   string             `json:"protocolVersion,omitempty"`
	// StaleToolsUntil is set while the server is failing and its last
	// known tools are still offered (the grace period).
	StaleToolsUntil *time.Time `json:"staleToolsUntil,omitempty"`
}

// DiscoverOptions tune Discover.
type DiscoverOptions struct {
	// ForceRefresh fetches every server's tool list again instead of
	// answering from the last discovery.
	ForceRefresh bool
	// IncludeDisabled also reports disabled servers (which are still
	// never contacted).
	IncludeDisabled bool
}

// ServerResult is one server's part of a discovery.
type ServerResult struct {
	Server     string `json:"server"`
	State      State  `json:"state"`
	ToolCount  int    `json:"toolCount"`
	Error      string `json:"error,omitempty"`
	DurationMs int64  `json:"durationMs"`
	// Cached is true when the tools came from the last discovery.
	Cached bool `json:"cached"`

	err error // the failure behind Error (an *Error)
}

// Discovery is the aggregated result of discovering every server: the
// tools of those that answered, and each server's outcome. When every
// server fails, Tools is empty and Servers says why (INV-MCP-ECO-002).
type Discovery struct {
	Tools   []Tool         `json:"-"`
	Servers []ServerResult `json:"servers"`
	At      time.Time      `json:"at"`
}

// Failure kinds of a call to an upstream, mapped to the envelope's codes by
// the caller (CONNECTION_TIMEOUT, INVOCATION_FAILED).
var (
	// ErrConnectionTimeout: connecting or initializing took longer than
	// connectionTimeoutMs (INV-MCP-ECO-100).
	ErrConnectionTimeout = errors.New("connection timeout")
	// ErrInvocationFailed: the request could not be completed — refused,
	// dropped, timed out after requestTimeoutMs, or answered with a
	// protocol error (INV-MCP-ECO-301).
	ErrInvocationFailed = errors.New("invocation failed")
	// ErrNotFound: no such server; ErrExists: the id is taken;
	// ErrReadOnly: the server is declared in the configuration file and
	// cannot be changed through the API.
	ErrNotFound = errors.New("upstream not found")
	ErrExists   = errors.New("upstream already exists")
	ErrReadOnly = errors.New("upstream is declared in the configuration file")
	// ErrDisabled: the server is disabled and was not contacted.
	ErrDisabled = errors.New("upstream is disabled")
	// ErrUnavailable: the server's last connection attempt failed and the
	// next is scheduled (Error.RetryAfter): the call failed fast, without
	// contacting it.
	ErrUnavailable = errors.New("upstream is unavailable")
	// ErrConflict: the server was changed by someone else meanwhile.
	ErrConflict = errors.New("upstream was changed concurrently")
)

// Error is a failed operation on one server. Kind is ErrConnectionTimeout
// or ErrInvocationFailed; the message names the server, the operation and,
// after retries, how many attempts were made (INV-MCP-ECO-100, -101).
type Error struct {
	Kind     error
	Server   string
	Op       string // "connect", "initialize", "tools/list", "tools/call search", ...
	Attempts int
	Timeout  bool // the operation's deadline expired
	Err      error
	// RetryAfter, with ErrUnavailable, is when the next connection attempt
	// is due.
	RetryAfter time.Duration

	// sent reports that a call's request may have reached the server: it
	// is never sent again (a retry could repeat its effect).
	sent bool
	// callOnly reports a failure of one call's own answer, which says
	// nothing against the session other calls share.
	callOnly bool

	// url is the server's URL, cut out of the message: HTTP client errors
	// quote the URL, and a query string or user info may carry a
	// credential that must reach neither a client, nor lastError, nor the
	// log.
	url string
}

func (e *Error) Error() string {
	return scrubURL(e.message(), e.url)
}

func (e *Error) message() string {
	if e.Kind == ErrUnavailable {
		return fmt.Sprintf("upstream %s is unavailable: its last connection attempt failed (%v); the next is due in %v",
			e.Server, e.Err, e.RetryAfter.Round(time.Millisecond))
	}
	msg := fmt.Sprintf("upstream %s: %s", e.Server, e.Op)
	if e.Timeout {
		msg += " timed out"
	} else {
		msg += " failed"
	}
	if e.Attempts > 1 {
		msg += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() []error { return []error{e.Kind, e.Err} }

// CallResult is an upstream tools/call result. An upstream isError answer
// is a CallResult with IsError true, its content kept (partial results
// included), not a Go error (INV-MCP-ECO-301).
type CallResult struct {
	// Content is the result's content blocks, each as compact JSON in the
	// form the server sent it; never nil.
	Content []json.RawMessage
	// StructuredContent is nil when the result has none.
	StructuredContent json.RawMessage
	// Meta is the result's _meta object; nil when it has none.
	Meta    json.RawMessage
	IsError bool
	// Attempts is how many times the call was sent (1 unless a failure
	// before it reached the server was retried).
	Attempts int
	// Input is not nil when a server of the modern era answered that it
	// needs the client's input first (an InputRequiredResult); the other
	// fields are then empty.
	Input *InputRequired
}

// InputRequired is a modern server's InputRequiredResult
// (basic/patterns/mrtr): its requests of the client by key, and its
// state, opaque, for the client's retry to carry back.
type InputRequired struct {
	Requests map[string]protocol.InputRequest
	State    string
}

// Round is what one round of a multi-round-trip call carries to a modern
// server besides the tool's arguments: the capabilities of the client it
// may ask (the server must not ask for others), and on a retry the
// client's answers by key and the server's own state from the round
// before. The zero Round is a first round with the gateway's own
// capabilities.
type Round struct {
	// ClientCapabilities is the client's clientCapabilities object, sent
	// as the request's _meta["io.modelcontextprotocol/clientCapabilities"].
	ClientCapabilities json.RawMessage
	InputResponses     map[string]json.RawMessage
	RequestState       string
}

// ListHint is how long, and for whom, upstream servers of the modern era
// let their tool lists be cached (server/utilities/caching).
type ListHint struct {
	TTL     time.Duration
	Private bool
}

// merge is the hint that satisfies both h and o: the shorter TTL,
// private if either is; nil stands for no hint.
func (h *ListHint) merge(o *ListHint) *ListHint {
	switch {
	case h == nil:
		return o
	case o == nil:
		return h
	}
	return &ListHint{TTL: min(h.TTL, o.TTL), Private: h.Private || o.Private}
}
