package response

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

// envelopeSchema is the envelope's JSON Schema; the verbs are the error
// codes and the retryable ones, filled in from Codes and Code.Retryable.
//
// It has no "$schema": MCP 2025-11-25 makes 2020-12 the default dialect, and
// it uses only keywords that mean the same in draft-07 (if/then/else, const,
// enum, not), so clients on either dialect read it alike.
const envelopeSchema = `{
  "type": "object",
  "title": "Tool response envelope",
  "description": "Every tool result (INV-MCP-RESP-001): success with data, or failure with a structured error; metadata always.",
  "required": ["success", "metadata"],
  "properties": {
    "success": {"type": "boolean"},
    "data": {
      "description": "The result (success only). Arrays longer than the response limit appear as {items, total, limit, offset, hasMore}; cut strings end with the truncation suffix."
    },
    "error": {
      "type": "object",
      "required": ["code", "message", "retryable"],
      "properties": {
        "code": {"enum": [%s]},
        "message": {"type": "string", "minLength": 1, "maxLength": 1000},
        "context": {"type": "object"},
        "retryable": {"type": "boolean"},
        "retryAfterMs": {"type": "integer", "minimum": 1}
      },
      "additionalProperties": false,
      "if": {"properties": {"code": {"enum": [%s]}}},
      "then": {"properties": {"retryable": {"const": true}}},
      "else": {"properties": {"retryable": {"const": false}}, "not": {"required": ["retryAfterMs"]}}
    },
    "metadata": {
      "type": "object",
      "required": ["durationMs", "cached", "truncated"],
      "properties": {
        "durationMs": {"type": "integer", "minimum": 0},
        "cached": {"type": "boolean"},
        "truncated": {"type": "boolean", "description": "True exactly when something in the response was cut to fit the limits."}
      },
      "additionalProperties": false
    }
  },
  "additionalProperties": false,
  "if": {"properties": {"success": {"const": true}}},
  "then": {"required": ["data"], "not": {"required": ["error"]}},
  "else": {"required": ["error"], "not": {"required": ["data"]}}
}`

// EnvelopeSchema returns the JSON Schema (2020-12, draft-07 compatible) of
// the envelope, for every built-in tool's outputSchema. Success and failure
// envelopes both validate against it; error.code is an enum of Codes(), and
// retryable must equal Code.Retryable() (INV-MCP-RESP-002, -006). Each call
// returns a fresh compact copy.
func EnvelopeSchema() json.RawMessage {
	var all, retryable []byte
	for _, c := range Codes() {
		all = appendEnum(all, c)
		if c.Retryable() {
			retryable = appendEnum(retryable, c)
		}
	}
	var out bytes.Buffer
	if err := json.Compact(&out, fmt.Appendf(nil, envelopeSchema, all, retryable)); err != nil {
		panic("response: envelope schema: " + err.Error()) // a constant: caught by the tests
	}
	return out.Bytes()
}

func appendEnum(dst []byte, c Code) []byte {
	if len(dst) > 0 {
		dst = append(dst, ',')
	}
	return protocol.AppendString(dst, string(c))
}
