// Package protocol holds the JSON-RPC 2.0 and MCP wire types: message
// decoding and classification, error codes, result encoding and protocol
// version negotiation. It does no I/O, so the transport, the handlers and the
// fuzz tests share one definition of what a well-formed message is.
//
// Decoding is deliberately strict about the envelope (jsonrpc "2.0", id type,
// method type, params shape) and lazy about the payload: params and results
// stay json.RawMessage until the method that owns them decodes them.
package protocol
