// Package handlers implements the MCP methods (initialize, ping, tools/*,
// resources/*, prompts/*, logging/setLevel, completion/complete) over
// registries of tools, resources and prompts.
//
// It knows nothing of HTTP. What a handler needs from the connection that
// carries its request (send a notification, report progress, ask the client
// something) reaches it through the Session and Peer interfaces declared
// here and implemented by package transport (DESIGN.md, Layout).
package handlers
