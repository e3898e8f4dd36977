package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// emptyObjectSchema is the inputSchema of a tool that takes no arguments:
// MCP requires an object schema, never null (server/tools).
const emptyObjectSchema = `{"type":"object","additionalProperties":false}`

// argSchema validates tool arguments. It is compiled once, at registration.
type argSchema struct {
	schema *jsonschema.Schema
	// memo, when set (an inputSchema in a registry), skips arguments
	// that passed before.
	memo *validMemo
}

// compileSchema compiles the inputSchema or outputSchema (which) of a tool.
// Both must be object schemas (server/tools); a schema that does not
// compile is refused at registration, never discovered by a client.
func compileSchema(name, which string, raw json.RawMessage) (*argSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse %s of %s: %w", which, name, err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s of %s: must be a JSON object", which, name)
	}
	if t, _ := obj["type"].(string); t != "object" {
		return nil, fmt.Errorf(`%s of %s: "type" must be "object"`, which, name)
	}
	c := jsonschema.NewCompiler()
	// 2025-11-25 makes 2020-12 the default dialect for schemas without $schema.
	c.DefaultDraft(jsonschema.Draft2020)
	loc := "mcp:///tools/" + name + "/" + which
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("load %s of %s: %w", which, name, err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("compile %s of %s: %w", which, name, err)
	}
	return &argSchema{schema: s}, nil
}

// validate checks args (absent arguments are the empty object) and returns
// a message naming each offending field, or "" when the arguments are valid.
func (a *argSchema) validate(args json.RawMessage) string {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if a.memo.has(a, args) {
		return ""
	}
	// The instance aliases args; it is dropped before this returns.
	inst, err := protocol.DecodeAny(args)
	if err != nil {
		return "arguments are not valid JSON"
	}
	if _, ok := inst.(map[string]any); !ok {
		return "arguments must be a JSON object"
	}
	err = a.schema.Validate(inst)
	if err == nil {
		a.memo.add(a, args)
		return ""
	}
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err.Error()
	}
	return describe(verr)
}

// describe flattens a validation error into "field: problem" lines, the
// deepest causes only, in a stable order.
func describe(verr *jsonschema.ValidationError) string {
	printer := message.NewPrinter(language.English)
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			field := pointer(e.InstanceLocation)
			lines = append(lines, fmt.Sprintf("%s: %s", field, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(verr)
	sort.Strings(lines)
	return "invalid arguments: " + strings.Join(lines, "; ")
}

// pointer renders an instance location as a JSON Pointer (RFC 6901), the
// form the limits guard uses for paths too.
func pointer(loc []string) string {
	if len(loc) == 0 {
		return "(arguments)"
	}
	var b strings.Builder
	for _, seg := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(seg))
	}
	return b.String()
}
