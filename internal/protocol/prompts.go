package protocol

import "encoding/json"

type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	// Raw, when set, is the prompt as another server wrote it, under
	// the name this server lists it by (see relayed.go).
	Raw json.RawMessage `json:"-"`
}

type ListPromptsResult struct {
	Prompts    []Prompt `json:"prompts"`
	NextCursor string   `json:"nextCursor,omitempty"`
}

type GetPromptParams struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
}

type PromptMessage struct {
	Role    string  `json:"role"` // "user" or "assistant"
	Content Content `json:"content"`
}

type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
}

// Completion references (completion/complete).
const (
	RefPrompt   = "ref/prompt"
	RefResource = "ref/resource"
)

type CompleteParams struct {
	Ref struct {
		Type string `json:"type"`
		Name string `json:"name,omitempty"` // ref/prompt
		URI  string `json:"uri,omitempty"`  // ref/resource
	} `json:"ref"`
	Argument struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"argument"`
	Context *struct {
		Arguments map[string]string `json:"arguments,omitempty"`
	} `json:"context,omitempty"`
}

// Completion is at most 100 values (server/utilities/completion).
type Completion struct {
	Values  []string `json:"values"`
	Total   *int     `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

type CompleteResult struct {
	Completion Completion `json:"completion"`
}
