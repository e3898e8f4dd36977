package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// List returns every server's status, by id.
func (m *Manager) List(ctx context.Context) ([]Status, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	out := make([]Status, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, statusLocked(s))
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Config.ID, b.Config.ID) })
	return out, nil
}

// Get returns one server's status; ErrNotFound when there is none.
func (m *Manager) Get(ctx context.Context, id string) (Status, error) {
	if err := ctx.Err(); err != nil {
		return Status{}, err
	}
	s, err := m.lookup(id)
	if err != nil {
		return Status{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return statusLocked(s), nil
}

// Create registers a server through the API: the config is validated
// (*FieldError), persisted in its Normalized form and, if enabled,
// connected in the background. ErrExists when the id is taken, by an API
// server or a declared one.
func (m *Manager) Create(ctx context.Context, c Config) (Status, error) {
	if err := c.Validate(); err != nil {
		return Status{}, err
	}
	if err := c.CheckNetworks(m.opts.DeniedNetworks); err != nil {
		return Status{}, err
	}
	c = c.Normalized()
	m.mu.Lock()
	_, taken := m.servers[c.ID]
	m.mu.Unlock()
	if taken {
		return Status{}, fmt.Errorf("upstream %q: %w", c.ID, ErrExists)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return Status{}, fmt.Errorf("upstream %q: encoding the config: %w", c.ID, err)
	}
	rec, err := m.opts.Store.CreateUpstream(ctx, c.ID, raw)
	if errors.Is(err, store.ErrAlreadyExists) {
		return Status{}, fmt.Errorf("upstream %q: %w", c.ID, ErrExists)
	}
	if err != nil {
		return Status{}, fmt.Errorf("upstream %q: storing: %w", c.ID, err)
	}
	return m.install(c, rec.Version), nil
}

// install puts a server with a just-stored config in service, replacing
// the one with its id unless the store sync already installed this (or a
// later) version.
func (m *Manager) install(c Config, version int64) Status {
	m.mu.Lock()
	cur := m.servers[c.ID]
	if cur != nil && cur.version >= version {
		st := statusLocked(cur)
		m.mu.Unlock()
		return st
	}
	m.changes++
	s := newServer(c, SourceAPI, version)
	old := m.replaceLocked(cur, s)
	m.recomputeLocked()
	st := statusLocked(s)
	m.mu.Unlock()
	if old != nil {
		old.close()
	}
	return st
}

// apiServer returns the API-managed server id: ErrNotFound, or
// ErrReadOnly for a declared one.
func (m *Manager) apiServer(id string) (*server, error) {
	s, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	if s.source == SourceConfig {
		return nil, fmt.Errorf("upstream %q: %w", id, ErrReadOnly)
	}
	return s, nil
}

// Update replaces an API server's config and reconnects it. c.ID must be
// empty or id. ErrReadOnly for a declared server.
//
// A header value equal to RedactedValue keeps the stored value of that
// header: the API never shows header values, so a client that reads a
// server, changes one field and writes it back must not replace its
// credentials with the placeholder. It does so only while the URL keeps
// its origin (see keepRedacted).
func (m *Manager) Update(ctx context.Context, id string, c Config) (Status, error) {
	s, err := m.apiServer(id)
	if err != nil {
		return Status{}, err
	}
	if c.ID == "" {
		c.ID = id
	}
	if c.ID != id {
		return Status{}, invalid("id", "%q differs from the server's id %q; an id cannot be changed", c.ID, id)
	}
	c.Headers, err = keepRedacted(c.Headers, s.cfg, c.URL)
	if err != nil {
		return Status{}, err
	}
	if err := c.Validate(); err != nil {
		return Status{}, err
	}
	if err := c.CheckNetworks(m.opts.DeniedNetworks); err != nil {
		return Status{}, err
	}
	return m.store(ctx, c.Normalized(), nil)
}

// keepRedacted returns in with every RedactedValue replaced by the value
// cur has for that header (names compared as HTTP does, case-insensitively).
//
// A stored value was given for the server at cur's origin (scheme, host
// and port). When newURL names another origin, the placeholder is refused,
// naming every header sent that way: keeping the value would send the
// credential to a server it was never meant for, on the say of whoever
// may change the URL. A new path on the same origin keeps them: it is the
// same server, which the credential is already sent to, and the same
// party answers whatever the path.
func keepRedacted(in map[string]string, cur Config, newURL string) (map[string]string, error) {
	var out map[string]string
	if from, to := origin(cur.URL), origin(newURL); from != to {
		var names []string
		for name, v := range in {
			if v == RedactedValue {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			field := "headers"
			if len(names) == 1 {
				field += "." + names[0]
			}
			return nil, invalid(field, "the url moves the server from %s to %s, and a stored header value is sent only to the origin it was given for; "+
				"send the value of %s again instead of %q", from, to, strings.Join(names, ", "), RedactedValue)
		}
	}
	for name, v := range in {
		if v != RedactedValue {
			continue
		}
		if out == nil {
			out = maps.Clone(in)
		}
		stored, ok := headerValue(cur.Headers, name)
		if !ok {
			return nil, invalid("headers."+name, "is %q, which stands for a stored value, and the server has no header %s; send the value itself", RedactedValue, name)
		}
		out[name] = stored
	}
	if out == nil {
		return in, nil
	}
	return out, nil
}

// origin is a URL's scheme://host:port, in lower case and with the
// scheme's default port made explicit, so http://h and http://H:80 are
// one origin (RFC 6454).
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

func headerValue(h map[string]string, name string) (string, bool) {
	if v, ok := h[name]; ok {
		return v, true
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// store persists an existing API server's new config and installs it.
// With ifVersion, the store refuses (ErrConflict) when the record has
// changed since that version.
func (m *Manager) store(ctx context.Context, c Config, ifVersion *int64) (Status, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return Status{}, fmt.Errorf("upstream %q: encoding the config: %w", c.ID, err)
	}
	rec, err := m.opts.Store.UpdateUpstream(ctx, c.ID, raw, ifVersion)
	if errors.Is(err, store.ErrNotFound) {
		return Status{}, fmt.Errorf("upstream %q: %w", c.ID, ErrNotFound)
	}
	if errors.Is(err, store.ErrConflict) {
		return Status{}, fmt.Errorf("upstream %q: %w", c.ID, ErrConflict)
	}
	if err != nil {
		return Status{}, fmt.Errorf("upstream %q: storing: %w", c.ID, err)
	}
	return m.install(c, rec.Version), nil
}

// Delete removes an API server: its session is closed and its tools
// dropped. ErrReadOnly for a declared server.
func (m *Manager) Delete(ctx context.Context, id string) error {
	if _, err := m.apiServer(id); err != nil {
		return err
	}
	err := m.opts.Store.DeleteUpstream(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("upstream %q: deleting: %w", id, err)
	}
	var old *conn
	m.mu.Lock()
	s := m.servers[id]
	if s != nil && s.source == SourceAPI {
		m.changes++
		old = m.removeLocked(s)
		delete(m.servers, id)
		m.metrics.forget(id)
		m.recomputeLocked()
	}
	m.mu.Unlock()
	if old != nil {
		old.close()
	}
	if err != nil {
		// Another replica deleted it first.
		return fmt.Errorf("upstream %q: %w", id, ErrNotFound)
	}
	return nil
}

// SetEnabled enables or disables an API server. Disabling closes its
// session (state disabled) and drops its tools; enabling connects it
// (INV-MCP-ECO-201). ErrReadOnly for a declared server. The change is
// written only over the version this replica has: when another replica
// changed the server meanwhile, the store is reloaded and the flag set on
// what it holds now, so that change is not lost.
func (m *Manager) SetEnabled(ctx context.Context, id string, enabled bool) (Status, error) {
	for range 3 {
		s, err := m.apiServer(id)
		if err != nil {
			return Status{}, err
		}
		m.mu.Lock()
		c, version := s.cfg, s.version
		m.mu.Unlock()
		if c.IsEnabled() == enabled {
			return m.Get(ctx, id)
		}
		c.Enabled = &enabled
		st, err := m.store(ctx, c, &version)
		if !errors.Is(err, ErrConflict) {
			return st, err
		}
		if err := m.syncStore(ctx); err != nil {
			return Status{}, err
		}
	}
	return Status{}, fmt.Errorf("upstream %q: changed by another request three times in a row; try again: %w", id, ErrConflict)
}

// Refresh fetches one server's tools again, now. The status is returned
// even when the server failed; the error is then the failure (*Error).
// ErrNotFound for no such server, ErrDisabled for a disabled one (which is
// not contacted).
func (m *Manager) Refresh(ctx context.Context, id string) (Status, error) {
	s, err := m.lookup(id)
	if err != nil {
		return Status{}, err
	}
	if !s.cfg.IsEnabled() {
		return Status{}, fmt.Errorf("upstream %q: %w", id, ErrDisabled)
	}
	res := m.syncServer(ctx, s, true, s.cfg.Retries()+1)
	st, gerr := m.Get(ctx, id)
	if gerr != nil {
		return st, gerr
	}
	if res.err != nil {
		return st, res.err
	}
	return st, nil
}
