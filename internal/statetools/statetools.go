// Package statetools exposes the durable state to agents: the memory,
// session, agent and trace tools, and every entity as an MCP resource
// (memory://, session://, agent://, trace://). The tools run through the
// guardrail pipeline; this package only decodes arguments, calls the
// store with the request's tenant and maps the store's errors onto the
// envelope's codes.
package statetools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/guarded"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/response"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// Backend is the store as the tools use it: the contract plus cached
// reads that say whether they came from a cache tier (store/tiered).
// Values returned by the Lookup methods are shared with the cache and must
// not be modified.
type Backend interface {
	store.Store
	LookupMemory(ctx context.Context, tenant, namespace, key string) (store.MemoryEntry, bool, error)
	LookupSession(ctx context.Context, tenant, id string) (store.Session, bool, error)
	LookupAgent(ctx context.Context, tenant, id string) (store.Agent, bool, error)
}

// Options tune the tools.
type Options struct {
	// ParticipantLimit caps a session's participants (store.participantLimit).
	ParticipantLimit int
	// RetryAfter is the retryAfterMs hint of SERVICE_UNAVAILABLE.
	RetryAfter time.Duration
	// Changed, if set, is told the URI of every entity a successful call
	// changed (memory://ns/key, session://id, agent://id), with the call's
	// context (and so its tenant): State Sync turns it into
	// notifications/resources/updated for the subscribers. It must not
	// block.
	Changed func(ctx context.Context, uri string)
	// Listed, if set, is told when a successful call created or deleted
	// an entity, with the call's context: the tenant's resources/list
	// gained or lost an entry (notifications/resources/list_changed to
	// its listen streams). It must not block.
	Listed func(ctx context.Context)
	// TraceSampleRate is the share of successful calls traced
	// (traces.sampleRate); trace_analyze says its figures are over
	// sampled traces and estimates the calls made. nil: every call is
	// traced.
	TraceSampleRate *float64
	Log             zerolog.Logger
}

// Register adds every tool through p and every resource template and the
// resource lister to srv.
func Register(srv *handlers.Server, p *guarded.Pipeline, b Backend, opts Options) error {
	if opts.ParticipantLimit <= 0 {
		opts.ParticipantLimit = 10
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = time.Second
	}
	t := &tools{b: b, opts: opts,
		unavailable: opts.Log.Sample(&zerolog.BurstSampler{Burst: 1, Period: 10 * time.Second})}
	var all []guarded.Tool
	all = append(all, t.memoryTools()...)
	all = append(all, t.sessionTools()...)
	all = append(all, t.agentTools()...)
	all = append(all, t.traceTools()...)
	if err := guarded.Register(srv.Tools(), p, all...); err != nil {
		return err
	}
	for _, rt := range t.templates() {
		if err := srv.AddResourceTemplate(rt); err != nil {
			return fmt.Errorf("register resource templates: %w", err)
		}
	}
	srv.SetResourceLister(&lister{b: b})
	return nil
}

type tools struct {
	b           Backend
	opts        Options
	unavailable zerolog.Logger // sampled: one line per 10 s
}

// storeError maps a store error onto the envelope's codes. The store's
// messages are written for clients ("session 0193… is completed"); an
// unclassified error is returned as is, for the pipeline to log and
// answer INTERNAL_ERROR without its text.
func (t *tools) storeError(err error) error {
	var fe *store.FieldError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return response.NewError(response.CodeInvalidInput, "%s", fe.Error()).WithContext("field", fe.Field)
	case errors.Is(err, store.ErrNotFound):
		return response.NewError(response.CodeNotFound, "%s", err.Error())
	case errors.Is(err, store.ErrConflict):
		return response.NewError(response.CodeConflict, "%s", err.Error())
	case errors.Is(err, store.ErrAlreadyExists):
		return response.NewError(response.CodeAlreadyExists, "%s", err.Error())
	case errors.Is(err, store.ErrUnavailable):
		// The cause may name a host; it goes to the operator's log (at
		// most one line per interval while the outage lasts), the client
		// gets a fixed message and when to retry.
		t.unavailable.Warn().Err(err).Msg("store unavailable; answering SERVICE_UNAVAILABLE")
		return response.NewError(response.CodeServiceUnavailable, "the database is unavailable; retry shortly").
			WithRetryAfter(t.opts.RetryAfter)
	}
	return err
}

// changed reports entities a successful call changed.
func (t *tools) changed(ctx context.Context, uris ...string) {
	if t.opts.Changed == nil {
		return
	}
	for _, u := range uris {
		t.opts.Changed(ctx, u)
	}
}

// listed reports that a successful call created or deleted an entity.
func (t *tools) listed(ctx context.Context) {
	if t.opts.Listed != nil {
		t.opts.Listed(ctx)
	}
}

// decode unmarshals validated arguments. The schema has already been
// checked, so a failure here is a value the schema cannot express (an
// integer overflowing int64, say).
func decode(call *handlers.ToolCall, v any) error {
	if len(call.Arguments) == 0 {
		return nil
	}
	if err := json.Unmarshal(call.Arguments, v); err != nil {
		return pipeline.ErrInvalid("arguments: %v", err)
	}
	return nil
}

// decodeKey reads the validated arguments {namespace?, key} of the
// single-entry memory tools without reflection: memory_retrieve answers
// from the cache in microseconds, and json.Unmarshal would be a tenth of
// that. The schema has checked that both are strings when present.
func decodeKey(call *handlers.ToolCall) (memoryKeyArgs, error) {
	var a memoryKeyArgs
	if len(call.Arguments) == 0 {
		return a, nil
	}
	keys := [2]string{"namespace", "key"}
	var raw [2]json.RawMessage
	if err := protocol.LookupMembers(call.Arguments, keys[:], raw[:]); err != nil {
		return a, pipeline.ErrInvalid("arguments: %v", err)
	}
	var err error
	if a.Namespace, err = stringArg(keys[0], raw[0]); err != nil {
		return a, err
	}
	a.Key, err = stringArg(keys[1], raw[1])
	return a, err
}

// stringArg returns the JSON string raw ("" when absent), copied.
func stringArg(name string, raw json.RawMessage) (string, error) {
	switch {
	case raw == nil:
		return "", nil
	case len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0:
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", pipeline.ErrInvalid("%s: must be a string", name)
	}
	return s, nil
}

// parseSince reads an optional RFC 3339 timestamp argument.
func parseSince(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, response.NewError(response.CodeInvalidInput, "since: %q is not an RFC 3339 timestamp such as 2026-01-02T15:04:05Z", s).WithContext("field", "since")
	}
	return ts, nil
}

func ptr[T any](v T) *T { return &v }

// The annotation sets (server/tools, "Tool annotations"). None of these
// tools reaches outside this server, so openWorldHint is false.
func readOnly() *protocol.ToolAnnotations {
	return &protocol.ToolAnnotations{ReadOnlyHint: ptr(true), DestructiveHint: ptr(false), IdempotentHint: ptr(true), OpenWorldHint: ptr(false)}
}

func additive(idempotent bool) *protocol.ToolAnnotations {
	return &protocol.ToolAnnotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(false), IdempotentHint: ptr(idempotent), OpenWorldHint: ptr(false)}
}

func destructive(idempotent bool) *protocol.ToolAnnotations {
	return &protocol.ToolAnnotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(true), IdempotentHint: ptr(idempotent), OpenWorldHint: ptr(false)}
}
