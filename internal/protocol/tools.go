package protocol

import "encoding/json"

// ToolAnnotations are hints about a tool's behaviour (2025-03-26+).
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Tool is a tool as tools/list describes it.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
}

// ListToolsResult answers tools/list.
type ListToolsResult struct {
	Tools      []Tool `json:"tools"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// CallToolParams are the params of tools/call.
type CallToolParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      *RequestMeta    `json:"_meta,omitempty"`
}

// CallToolResult answers tools/call. Content is never null on the wire.
type CallToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	// StructuredCompact promises that StructuredContent is a compact,
	// valid JSON object, so AppendToolResult copies it without the pass
	// that otherwise compacts and validates it. Only the code that
	// produced the bytes may set it (package response, whose encoder
	// writes nothing else); it is never sent.
	StructuredCompact bool `json:"-"`
	// RawContent, when not nil, is written in place of Content: content
	// blocks as another server sent them (a gateway passes them on
	// unchanged, with fields this package does not model). Each must be
	// a compact, valid JSON object.
	RawContent []json.RawMessage `json:"-"`
	// Meta is the result's _meta object, compact and valid; nil for none.
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// ToolError returns an isError result with one text block: a tool failure
// the model can read and act on, not a protocol error (tools, "Error
// Handling").
func ToolError(message string) *CallToolResult {
	return &CallToolResult{Content: []Content{TextContent(message)}, IsError: true}
}
