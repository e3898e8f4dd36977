package statetools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/guarded"
	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/timeout"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// Schema fragments shared by the memory tools. The bounds repeat the
// store's so that a model sees them before it calls.
const (
	nsProp   = `"namespace":{"type":"string","minLength":1,"maxLength":128,"default":"default","description":"Namespace that scopes keys, e.g. a project or an agent team. Defaults to \"default\"."}`
	keyProp  = `"key":{"type":"string","minLength":1,"maxLength":512,"description":"Key of the entry within its namespace."}`
	tagsProp = `"tags":{"type":"array","maxItems":32,"items":{"type":"string","minLength":1,"maxLength":64},"description":"Labels; filters match entries carrying every listed tag."}`
)

type memoryKeyArgs struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
}

func orDefault(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

// storedEntry is what memory_store answers: where the value went and its
// new version, without echoing the value back.
type storedEntry struct {
	Namespace string     `json:"namespace"`
	Key       string     `json:"key"`
	Version   int64      `json:"version"`
	UpdatedAt time.Time  `json:"updatedAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

func (t *tools) memoryTools() []guarded.Tool {
	return []guarded.Tool{
		{
			Name:  "memory.store",
			Title: "Store a memory",
			Description: "Stores a JSON value under (namespace, key), replacing any previous value, and returns its new version. " +
				"Use ttlSeconds for data that goes stale. Pass ifVersion to update only the version you read (0: only if the key is new); " +
				"if someone else wrote in between you get CONFLICT and nothing changes — read it again and retry.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + nsProp + `,` + keyProp + `,` +
				`"value":{"description":"Any JSON value to store."},` + tagsProp + `,` +
				`"ttlSeconds":{"type":"integer","minimum":1,"maximum":315360000,"description":"Seconds until the entry expires; omit to keep it until deleted."},` +
				`"ifVersion":{"type":"integer","minimum":0,"description":"Only write if the entry's current version is this (0: only if it does not exist)."}` +
				`},"required":["key","value"],"additionalProperties":false}`),
			Annotations: destructive(false),
			Category:    timeout.Mutation,
			Run:         t.memoryStore,
		},
		{
			Name:        "memory.retrieve",
			Title:       "Retrieve a memory",
			Description: "Returns the entry stored under (namespace, key): its value, tags, version and timestamps. NOT_FOUND if there is none or it expired.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + nsProp + `,` + keyProp + `},"required":["key"],"additionalProperties":false}`),
			Annotations: readOnly(),
			Category:    timeout.Query,
			Run:         t.memoryRetrieve,
		},
		{
			Name:  "memory.search",
			Title: "Search memories",
			Description: "Full-text search over keys, string values and tags, best matches first. The query takes web-search syntax: " +
				`words (all must match), "quoted phrases", -excluded, and "or" between alternatives. Omit namespace to search all of them.`,
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"query":{"type":"string","minLength":1,"maxLength":1000,"description":"What to look for."},` +
				`"namespace":{"type":"string","minLength":1,"maxLength":128,"description":"Search only this namespace."},` + tagsProp + `,` +
				`"limit":{"type":"integer","minimum":1,"maximum":50,"default":10,"description":"At most this many results."}` +
				`},"required":["query"],"additionalProperties":false}`),
			Annotations: readOnly(),
			Category:    timeout.Query,
			Run:         t.memorySearch,
		},
		{
			Name:  "memory.list",
			Title: "List memories",
			Description: "Lists entries in (namespace, key) order, optionally only keys with a prefix or carrying every given tag. " +
				"Pass the returned nextCursor to get the next page; no nextCursor means this was the last page. Omit namespace to list all of them.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"namespace":{"type":"string","minLength":1,"maxLength":128,"description":"List only this namespace."},` +
				`"prefix":{"type":"string","maxLength":512,"description":"Only keys starting with this."},` + tagsProp + `,` +
				`"cursor":{"type":"string","description":"nextCursor of the previous page."},` +
				`"limit":{"type":"integer","minimum":1,"maximum":100,"default":50}` +
				`},"additionalProperties":false}`),
			Annotations: readOnly(),
			Category:    timeout.Query,
			Run:         t.memoryList,
		},
		{
			Name:        "memory.delete",
			Title:       "Delete a memory",
			Description: "Deletes the entry under (namespace, key). NOT_FOUND if there is none.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + nsProp + `,` + keyProp + `},"required":["key"],"additionalProperties":false}`),
			Annotations: destructive(true),
			Category:    timeout.Mutation,
			Run:         t.memoryDelete,
		},
		{
			Name:  "memory.bulk_delete",
			Title: "Delete many memories",
			Description: "Deletes, all at once or not at all, either the listed keys (up to 1000; missing ones are skipped) or every key with a prefix, " +
				"in one namespace. Returns the keys it deleted.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + nsProp + `,` +
				`"keys":{"type":"array","minItems":1,"maxItems":1000,"items":{"type":"string","minLength":1,"maxLength":512},"description":"Keys to delete."},` +
				`"prefix":{"type":"string","minLength":1,"maxLength":512,"description":"Delete every key starting with this."}` +
				`},"oneOf":[{"required":["keys"],"not":{"required":["prefix"]}},{"required":["prefix"],"not":{"required":["keys"]}}],"additionalProperties":false}`),
			Annotations: destructive(true),
			Category:    timeout.Mutation,
			Run:         t.memoryBulkDelete,
		},
	}
}

func (t *tools) memoryStore(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		Namespace  string          `json:"namespace"`
		Key        string          `json:"key"`
		Value      json.RawMessage `json:"value"`
		Tags       []string        `json:"tags"`
		TTLSeconds int64           `json:"ttlSeconds"`
		IfVersion  *int64          `json:"ifVersion"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	e, err := t.b.PutMemory(ctx, tenant.From(ctx), store.PutMemory{
		Namespace: orDefault(a.Namespace), Key: a.Key, Value: a.Value, Tags: a.Tags,
		TTL: time.Duration(a.TTLSeconds) * time.Second, IfVersion: a.IfVersion,
	})
	if err != nil {
		return nil, t.storeError(err)
	}
	t.changed(ctx, memoryURI(e.Namespace, e.Key))
	if e.Version == 1 {
		t.listed(ctx)
	}
	return storedEntry{Namespace: e.Namespace, Key: e.Key, Version: e.Version, UpdatedAt: e.UpdatedAt, ExpiresAt: e.ExpiresAt}, nil
}

func (t *tools) memoryRetrieve(ctx context.Context, call *handlers.ToolCall) (any, error) {
	a, err := decodeKey(call)
	if err != nil {
		return nil, err
	}
	e, cached, err := t.b.LookupMemory(ctx, tenant.From(ctx), orDefault(a.Namespace), a.Key)
	if err != nil {
		return nil, t.storeError(err)
	}
	return pipeline.Result{Data: entryJSON{&e}, Cached: cached}, nil
}

func (t *tools) memorySearch(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		Query     string   `json:"query"`
		Namespace string   `json:"namespace"`
		Tags      []string `json:"tags"`
		Limit     int      `json:"limit"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	hits, err := t.b.SearchMemory(ctx, tenant.From(ctx), store.SearchMemory{Query: a.Query, Namespace: a.Namespace, Tags: a.Tags, Limit: a.Limit})
	if err != nil {
		return nil, t.storeError(err)
	}
	if hits == nil {
		hits = []store.SearchHit{}
	}
	return struct {
		Hits  []store.SearchHit `json:"hits"`
		Count int               `json:"count"`
	}{hits, len(hits)}, nil
}

func (t *tools) memoryList(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		Namespace string   `json:"namespace"`
		Prefix    string   `json:"prefix"`
		Tags      []string `json:"tags"`
		Cursor    string   `json:"cursor"`
		Limit     int      `json:"limit"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	page, err := t.b.ListMemory(ctx, tenant.From(ctx), store.ListMemory{Namespace: a.Namespace, Prefix: a.Prefix, Tags: a.Tags, Cursor: a.Cursor, Limit: a.Limit})
	if err != nil {
		return nil, t.storeError(err)
	}
	if page.Items == nil {
		page.Items = []store.MemoryEntry{}
	}
	return page, nil
}

func (t *tools) memoryDelete(ctx context.Context, call *handlers.ToolCall) (any, error) {
	a, err := decodeKey(call)
	if err != nil {
		return nil, err
	}
	ns := orDefault(a.Namespace)
	if err := t.b.DeleteMemory(ctx, tenant.From(ctx), ns, a.Key); err != nil {
		return nil, t.storeError(err)
	}
	t.changed(ctx, memoryURI(ns, a.Key))
	t.listed(ctx)
	return map[string]any{"deleted": true, "namespace": ns, "key": a.Key}, nil
}

func (t *tools) memoryBulkDelete(ctx context.Context, call *handlers.ToolCall) (any, error) {
	var a struct {
		Namespace string   `json:"namespace"`
		Keys      []string `json:"keys"`
		Prefix    string   `json:"prefix"`
	}
	if err := decode(call, &a); err != nil {
		return nil, err
	}
	ns := orDefault(a.Namespace)
	keys, err := t.b.BulkDeleteMemory(ctx, tenant.From(ctx), ns, a.Keys, a.Prefix)
	if err != nil {
		return nil, t.storeError(err)
	}
	if keys == nil {
		keys = []string{}
	}
	for _, k := range keys {
		t.changed(ctx, memoryURI(ns, k))
	}
	if len(keys) > 0 {
		t.listed(ctx)
	}
	return map[string]any{"namespace": ns, "deleted": len(keys), "keys": keys}, nil
}
