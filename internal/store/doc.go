// Package store defines the durable state mcp-runtime keeps for agents —
// memory entries, multi-agent collaboration sessions, the agent registry
// and the trace of every tool call — and the contract every
// implementation honours.
//
// Two implementations exist: store/pgstore (PostgreSQL through pgxpool,
// used when DATABASE_URL is set) and store/memstore (the embedded default,
// a second implementation with the same semantics, not a mock). Both pass
// the one contract suite in store/storetest (DESIGN.md, Storage).
//
// Every method takes the tenant explicitly, and every row, query and cache
// key is scoped by it: a scoping field that one code path silently drops is
// how tenants leak into each other, and a parameter cannot be dropped
// without the call failing to compile
// (docs/adr/0007-stores-and-tenant-scoping.md). The tenant is the
// authenticated principal's, "default" while auth is off.
//
// Errors: methods return errors that match, with errors.Is, one of
// ErrNotFound, ErrConflict, ErrAlreadyExists or ErrUnavailable, or a
// *FieldError for bad input; anything else is an internal failure. The
// tool layer turns them into the envelope's codes.
package store
