package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcp-runtime/mcp-runtime/internal/logging"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// noLoader refuses every external $ref: an upstream's schema must never
// make mcp-runtime fetch a URL or read a file.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %s is not allowed", url)
}

// checkInputSchema compiles a tool's inputSchema (JSON Schema 2020-12
// unless its $schema says otherwise) and checks it describes an object.
// A tool that fails is left out, never the whole server: one upstream's
// bad schema must not break the client for the whole gateway.
func checkInputSchema(raw json.RawMessage) error { return checkSchema("inputSchema", raw) }

// checkOutputSchema checks a tool's outputSchema the same way: the MCP
// specification (server/tools, "Output Schema") says it describes the
// object structuredContent holds.
func checkOutputSchema(raw json.RawMessage) error { return checkSchema("outputSchema", raw) }

func checkSchema(name string, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return fmt.Errorf("%s is missing", name)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("%s is not valid JSON: %w", name, err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return fmt.Errorf("%s is not a JSON object", name)
	}
	if obj["type"] != "object" {
		return fmt.Errorf(`%s type is %v, not "object"`, name, obj["type"])
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	loc := "urn:mcp-runtime:upstream-tool-" + name
	if err := c.AddResource(loc, doc); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if _, err := c.Compile(loc); err != nil {
		return fmt.Errorf("%s does not compile: %s", name, firstLine(err.Error()))
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// convertTools turns a server's tool list into Tools, sorted by
// Canonical, leaving out (and reporting) tools that are invalid or whose
// name or canonical name repeats an earlier one.
func convertTools(cfg Config, in []*mcp.Tool) ([]Tool, []ToolProblem) {
	var (
		out      []Tool
		problems []ToolProblem
		names    = map[string]bool{}
		canon    = map[string]bool{}
	)
	for _, t := range in {
		if t == nil {
			continue
		}
		tool, err := convertTool(cfg, t)
		switch {
		case err != nil:
		case names[t.Name]:
			err = errors.New("the server lists this name more than once")
		case canon[tool.Canonical]:
			err = fmt.Errorf("canonical name %s is taken by another tool", tool.Canonical)
		}
		if err != nil {
			// The name is the server's to choose: kept and shown bounded.
			problems = append(problems, ToolProblem{Name: logging.Field(t.Name), Reason: err.Error()})
			continue
		}
		names[t.Name], canon[tool.Canonical] = true, true
		out = append(out, tool)
	}
	slices.SortFunc(out, func(a, b Tool) int { return strings.Compare(a.Canonical, b.Canonical) })
	return out, problems
}

// MaxToolNameBytes is the longest tool name taken from an upstream: the
// MCP specification (server/tools, "Tool names") says names SHOULD be 1 to
// 128 characters, and a longer one is a server's mistake or an attempt to
// make every tools/list, log line and trace larger.
const MaxToolNameBytes = 128

func convertTool(cfg Config, t *mcp.Tool) (Tool, error) {
	if t.Name == "" {
		return Tool{}, errors.New("the tool has no name")
	}
	if len(t.Name) > MaxToolNameBytes {
		return Tool{}, fmt.Errorf("the name is %d bytes, more than the %d a tool name may have", len(t.Name), MaxToolNameBytes)
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return Tool{}, fmt.Errorf("inputSchema: %w", err)
	}
	if err := checkInputSchema(schema); err != nil {
		return Tool{}, err
	}
	var output json.RawMessage
	if t.OutputSchema != nil {
		b, err := json.Marshal(t.OutputSchema)
		if err != nil {
			return Tool{}, fmt.Errorf("outputSchema: %w", err)
		}
		if err := checkOutputSchema(b); err != nil {
			return Tool{}, err
		}
		output = compact(b)
	}
	out := Tool{
		OutputSchema: output,
		Server:       cfg.ID,
		Name:         t.Name,
		Canonical:    CanonicalName(cfg.ID, t.Name),
		Category:     cfg.TimeoutCategory(),
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  compact(schema),
	}
	if t.Annotations != nil {
		// Through JSON: the SDK's and our annotation types share the wire
		// format, not the Go types.
		b, err := json.Marshal(t.Annotations)
		if err != nil {
			return Tool{}, fmt.Errorf("annotations: %w", err)
		}
		var a protocol.ToolAnnotations
		if err := json.Unmarshal(b, &a); err != nil {
			return Tool{}, fmt.Errorf("annotations: %w", err)
		}
		out.Annotations = &a
	}
	return out, nil
}

// withCategory is tools (shared, never modified) with Category set to
// category: a server's category changed and its session was kept.
func withCategory(tools []Tool, category string) []Tool {
	out := slices.Clone(tools)
	for i := range out {
		out[i].Category = category
	}
	return out
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// fingerprint identifies a tool set by everything a client sees of it
// (names, descriptions, schemas, annotations) and the category its calls
// are timed by, so OnToolsChanged fires only on a change the registry must
// take in.
func fingerprint(tools []Tool) string {
	b, err := json.Marshal(tools)
	if err != nil {
		// Cannot happen for these types; an unequal value makes the
		// caller notify rather than miss a change.
		return fmt.Sprintf("unencodable:%p", &tools)
	}
	return string(b)
}
