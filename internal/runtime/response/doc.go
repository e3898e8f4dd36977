// Package response builds tool results: the response envelope, the error
// codes, retryability and truncation to the response limits
// (INV-MCP-RESP-001..006).
//
// # The envelope
//
// Every tools/call result carries one envelope (INV-MCP-RESP-001):
//
//	{"success":true,  "data":DATA,    "metadata":{"durationMs":N,"cached":B,"truncated":B}}
//	{"success":false, "error":ERROR,  "metadata":{"durationMs":N,"cached":B,"truncated":B}}
//	ERROR = {"code":CODE,"message":TEXT,"context":{...}?,"retryable":B,"retryAfterMs":N?}
//
// It is the result's structuredContent and, byte for byte, the text of its
// first content block, so clients that read only text see the same JSON
// (DESIGN.md, "Wire conventions"); isError is true exactly for failures.
// EnvelopeSchema is its JSON Schema, every built-in tool's outputSchema.
// Metadata is always present with all three members: durationMs is never
// negative (INV-MCP-RESP-005, INV-MCP-TIMEOUT-005).
//
// # Errors
//
// error.code is one of Codes(): the fourteen of the response contract and
// AMBIGUOUS_TOOL, CONNECTION_TIMEOUT and INVOCATION_FAILED for upstream
// servers. An Error with an empty or unknown code is encoded as
// INTERNAL_ERROR, keeping its message, so no failure goes out without a
// valid code (INV-MCP-RESP-002). error.message is 1 to 1000 characters: an
// empty message becomes the code's default text, a longer one is clipped.
// error.retryable is Code.Retryable() — TOOL_TIMEOUT, RATE_LIMITED,
// MEMORY_PRESSURE and SERVICE_UNAVAILABLE, the one retryable set — and
// nothing else: callers cannot set it (INV-MCP-RESP-006). retryAfterMs
// appears only when given and the code is retryable. FromError maps other
// errors, without exposing their text (see FromError).
//
// # Truncation
//
// Success and Failure enforce Limits; metadata.truncated is true exactly
// when they cut something (INV-MCP-RESP-004), and the encoded result — the
// CallToolResult as protocol.AppendToolResult writes it, whose text block
// holds the envelope a second time, quoted — never exceeds MaxResponseBytes
// (INV-MCP-RESP-003). The JSON-RPC framing around the result is the
// transport's, outside that budget. The rules, in order:
//
//  1. Lists. Any JSON array in the data (at any depth, the data itself
//     included) longer than MaxListItems becomes the list object
//     {"items":[first MaxListItems],"total":N,"limit":MaxListItems,"offset":0,"hasMore":true}.
//  2. Strings. Any JSON string value (member names excepted) longer than
//     MaxStringLength characters (runes) keeps its first MaxStringLength
//     minus len(TruncationSuffix) characters and ends with the suffix,
//     MaxStringLength characters in all. Cuts fall between characters,
//     never inside a UTF-8 sequence or an escape.
//  3. Size. If the result is still too large, both caps are lowered
//     together, step by step to three quarters (lists to one item at least,
//     strings to one character plus the suffix), and a binary search picks
//     the mildest step that fits. A cap only touches lists and strings
//     longer than it, so the largest are cut first and short ones are left
//     alone. Lists keep reporting their real total and the cap applied.
//  4. Depth. Data may nest at most 512 levels, list objects included:
//     deeper JSON breaks common client decoders (Python's recursion limit;
//     encoding/json stops at 10,000) and no tool result needs it.
//  5. Last resort. If nothing fits (say, an object with very many members)
//     or the data nests too deep, data becomes
//     {"truncated":true,"reason":REASON,"originalBytes":N}, N the size of
//     the data's JSON and REASON "response exceeds maxResponseBytes" or
//     "data nests deeper than 512 levels".
//
// A failure's context is capped by rules 1 to 4; if it cannot fit it is
// left out, and then the message is shortened, down to one character.
// Limits.Validate requires MaxResponseBytes >= 1024, which is enough for
// any such failure and for the last-resort success.
//
// The data is written exactly once per pass, straight from its JSON into
// the envelope: small data with nothing to cut (every call, nearly) costs
// json.Marshal (or the data's own JSONAppender), one scan and copy, and
// the result's allocations — never a decode and re-encode. The result is
// marked StructuredCompact, so the transport copies the envelope as is. Strings are normalised on the way (no HTML escapes,
// invalid UTF-8 replaced), so the size on the wire is computed, not guessed.
//
// The package keeps no state: no package-level variables, no init.
package response
