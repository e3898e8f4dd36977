package protocol

import "encoding/json"

// Method names (schema/2025-11-25/schema.ts).
const (
	MethodInitialize             = "initialize"
	MethodPing                   = "ping"
	MethodToolsList              = "tools/list"
	MethodToolsCall              = "tools/call"
	MethodResourcesList          = "resources/list"
	MethodResourcesRead          = "resources/read"
	MethodResourcesTemplatesList = "resources/templates/list"
	MethodResourcesSubscribe     = "resources/subscribe"
	MethodResourcesUnsubscribe   = "resources/unsubscribe"
	MethodPromptsList            = "prompts/list"
	MethodPromptsGet             = "prompts/get"
	MethodLoggingSetLevel        = "logging/setLevel"
	MethodCompletionComplete     = "completion/complete"

	MethodSamplingCreateMessage = "sampling/createMessage"
	MethodElicitationCreate     = "elicitation/create"
	MethodRootsList             = "roots/list"

	NotificationInitialized         = "notifications/initialized"
	NotificationCancelled           = "notifications/cancelled"
	NotificationProgress            = "notifications/progress"
	NotificationMessage             = "notifications/message"
	NotificationResourcesUpdated    = "notifications/resources/updated"
	NotificationResourcesListChange = "notifications/resources/list_changed"
	NotificationToolsListChanged    = "notifications/tools/list_changed"
	NotificationPromptsListChanged  = "notifications/prompts/list_changed"
	NotificationRootsListChanged    = "notifications/roots/list_changed"
)

// Implementation names a client or server.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// ClientCapabilities is kept raw apart from the members the server acts on.
type ClientCapabilities struct {
	Roots       *RootsCapability `json:"roots,omitempty"`
	Sampling    json.RawMessage  `json:"sampling,omitempty"`
	Elicitation json.RawMessage  `json:"elicitation,omitempty"`
}

type RootsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// InitializeParams are the params of initialize.
type InitializeParams struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ClientCapabilities `json:"capabilities"`
	ClientInfo      Implementation     `json:"clientInfo"`
}

// ServerCapabilities lists only what the server implements: a capability
// advertised but not honoured is worse than one not advertised.
type ServerCapabilities struct {
	Tools       *ToolsCapability     `json:"tools,omitempty"`
	Resources   *ResourcesCapability `json:"resources,omitempty"`
	Prompts     *PromptsCapability   `json:"prompts,omitempty"`
	Logging     *struct{}            `json:"logging,omitempty"`
	Completions *struct{}            `json:"completions,omitempty"`
}

type ToolsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

type PromptsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// InitializeResult answers initialize.
type InitializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// CancelledParams are the params of notifications/cancelled.
type CancelledParams struct {
	RequestID ID     `json:"requestId"`
	Reason    string `json:"reason,omitempty"`
}

// ProgressParams are the params of notifications/progress. The token is kept
// raw so it is echoed with the JSON type the client used.
type ProgressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         *float64        `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

// RequestMeta is the _meta member of request params that the server reads.
type RequestMeta struct {
	ProgressToken json.RawMessage `json:"progressToken,omitempty"`
}

// PaginatedParams are the params of every list method.
type PaginatedParams struct {
	Cursor *string `json:"cursor,omitempty"`
}
