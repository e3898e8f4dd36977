package tiered

import (
	"slices"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// The store.Store contract says returned values are the caller's to
// modify (storetest: "returned entries are copies"), so the Get methods
// deep-copy what the Lookup methods share. slices.Clone keeps nil as nil
// and empty as empty, so the copy is indistinguishable from the original.

func cloneMemory(e store.MemoryEntry) store.MemoryEntry {
	e.Value = slices.Clone(e.Value)
	e.Tags = slices.Clone(e.Tags)
	e.ExpiresAt = clonePtr(e.ExpiresAt)
	return e
}

func cloneSession(s store.Session) store.Session {
	s.Metadata = slices.Clone(s.Metadata)
	s.Participants = slices.Clone(s.Participants)
	s.Error = clonePtr(s.Error)
	s.EndedAt = clonePtr(s.EndedAt)
	return s
}

func cloneAgent(a store.Agent) store.Agent {
	a.Capabilities = slices.Clone(a.Capabilities)
	a.Tags = slices.Clone(a.Tags)
	a.Metadata = slices.Clone(a.Metadata)
	return a
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
