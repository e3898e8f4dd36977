// Package transport serves MCP over Streamable HTTP (basic/transports,
// revisions 2025-03-26, 2025-06-18 and 2025-11-25) on a chi router.
//
// # Design
//
// One endpoint, /mcp. POST carries exactly one JSON-RPC message. A request
// is answered with application/json unless its handler sends a message
// first (progress, a log message, a server-to-client request) and the
// client accepts text/event-stream; then the response becomes an SSE stream
// that carries those messages and ends with the response. GET opens the
// client session's standalone stream for server-initiated messages; DELETE
// ends the client session.
//
// Every SSE stream — the standalone GET stream and each streamed POST
// response — is a bounded log of events plus at most one attached
// connection. Senders only append to the log and wake the connection; the
// connection's writer walks the log from its own cursor. Live delivery and
// replay are therefore the same code path: a client that reconnects with
// Last-Event-ID gets a writer whose cursor is that id, so it receives every
// retained event after it exactly once and nothing from another stream.
// Event ids are "<stream>-<seq>", unique across the streams of a session as
// the specification requires.
//
// Handlers never see HTTP. A request reaches package handlers with a Session
// (the ClientSession) and a Peer (the exchange of that request), both
// interfaces declared by handlers. A client disconnect does not cancel a
// handler (the specification: disconnection SHOULD NOT be read as
// cancellation); notifications/cancelled, the end of the client session and
// shutdown do.
//
// The state of a client session is owned by one type, ClientSession, and
// sessions are found through the SessionStore interface so that a shared
// store can replace the in-memory one (DESIGN.md, Scale-out).
//
// # Session sharing
//
// The core (ClientSession, Stream, the handlers of POST, GET and DELETE)
// does not know whether other replicas serve its sessions. It talks to
// three interfaces it declares, each with an in-memory implementation
// that does nothing or keeps everything here:
//
//   - Replicator (replica.go), one per session: write-through of the
//     client's changes, the mailboxes of server-to-client requests,
//     forwarding of answers and cancellations, the home claim when a GET
//     stream opens, broadcasts, and the mirror and resumption of POST
//     streams; localReplica in memory.
//   - EventLog (stream.go), one per stream: where its events live beside
//     or instead of the ring; localLog in memory.
//   - Fanout (replica.go), one per transport: resource updates and their
//     subscribers; localFanout, the subscription index, in memory.
//
// A Sharing (Options.Share) replaces them: the transport opens a
// SharedStore there, a SessionStore whose sessions are copies other
// replicas serve too, each linked to them by its own Replicator
// (ClientSession.Share), and a Fanout that reaches the sessions of every
// replica. Implementations live in packages of their own under this one;
// package sessiontest is the contract they and the in-memory store keep,
// and package transporttest the harness their tests and the transport's
// share.
package transport
