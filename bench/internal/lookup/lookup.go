// Package lookup is the cached read every benchmark server offers as its
// memory_retrieve tool: one entry in an in-memory map behind a read lock,
// shaped like mcp-runtime's memory entry, encoded afresh on every call as
// a real server would. It lets the cached-read comparison
// (bench/cached_read.sh) ask each server for the same work.
package lookup

import (
	"sync"
	"time"
)

// Tool is the name every benchmark server gives the lookup.
const Tool = "memory_retrieve"

// Key is the entry the cache is seeded with.
const Key = "bench"

// Description and Schema are what tools/list says of the tool.
const (
	Description = "Returns the memory entry stored under key."
	Schema      = `{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`
)

// Args are the tool's arguments.
type Args struct {
	Key string `json:"key"`
}

// Entry is a memory entry, the fields mcp-runtime returns for one.
type Entry struct {
	Namespace string         `json:"namespace"`
	Key       string         `json:"key"`
	Value     map[string]any `json:"value"`
	Tags      []string       `json:"tags"`
	Version   int64          `json:"version"`
	CreatedAt time.Time      `json:"createdAt"`
	UpdatedAt time.Time      `json:"updatedAt"`
}

// Cache holds entries by key.
type Cache struct {
	mu      sync.RWMutex
	entries map[string]Entry
}

// NewCache returns a cache holding one entry under Key, the value
// mcp-runtime's benchmark stores: {"text":"hello","n":1}, tag "bench".
func NewCache() *Cache {
	at := time.Date(2026, 11, 29, 1, 43, 40, 531010000, time.UTC)
	return &Cache{entries: map[string]Entry{Key: {
		Namespace: "default", Key: Key, Value: map[string]any{"n": 1, "text": "hello"},
		Tags: []string{"bench"}, Version: 1, CreatedAt: at, UpdatedAt: at,
	}}}
}

// Get returns the entry under key.
func (c *Cache) Get(key string) (Entry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.entries[key]
	return e, ok
}
