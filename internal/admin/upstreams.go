package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// MaxBodyBytes bounds a request body. Real configurations are a few KiB;
// the bound keeps one request from costing much memory, and is checked
// while reading, before anything is decoded.
const MaxBodyBytes = 64 << 10

// Redacted replaces every header value in a Status the API returns: header
// values are credentials for the upstream, and the API is not a way to read
// them back. An update that sends it back keeps the stored value.
const Redacted = upstream.RedactedValue

// toolView is one tool of a server, as GET /admin/upstreams/{id} shows it.
type toolView struct {
	// Name is the canonical name (serverId.toolName) clients call it by.
	Name         string `json:"name"`
	UpstreamName string `json:"upstreamName"`
	Description  string `json:"description"`
}

// statusWithTools is a Status plus the server's tools.
type statusWithTools struct {
	upstream.Status
	Tools []toolView `json:"tools"`
}

// discoveryView is a Discovery with the tools' canonical names, which
// Discovery itself does not encode.
type discoveryView struct {
	At      time.Time               `json:"at"`
	Servers []upstream.ServerResult `json:"servers"`
	Tools   []string                `json:"tools"`
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	all, err := a.u.List(r.Context())
	if err != nil {
		a.fail(w, r, "", fmt.Errorf("list upstreams: %w", err))
		return
	}
	out := make([]upstream.Status, len(all)) // [] rather than null when empty
	for i, s := range all {
		out[i] = redact(s)
	}
	a.json(w, r, http.StatusOK, struct {
		Upstreams []upstream.Status `json:"upstreams"`
	}{out})
}

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	c, err := decodeConfig(w, r)
	if err != nil {
		a.fail(w, r, "", err)
		return
	}
	if err := c.Validate(); err != nil {
		a.fail(w, r, c.ID, err)
		return
	}
	s, err := a.u.Create(r.Context(), c)
	if err != nil {
		a.fail(w, r, c.ID, fmt.Errorf("create upstream %s: %w", c.ID, err))
		return
	}
	id := s.Config.ID
	if id == "" {
		id = c.ID
	}
	a.log.Info().Str("upstream", id).Str("url", upstream.RedactURL(c.URL)).Str("remote", r.RemoteAddr).Msg("admin: upstream created")
	w.Header().Set("Location", "/admin/upstreams/"+url.PathEscape(id))
	a.json(w, r, http.StatusCreated, redact(s))
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	s, err := a.u.Get(r.Context(), id)
	if err != nil {
		a.fail(w, r, id, fmt.Errorf("get upstream %s: %w", id, err))
		return
	}
	tools := []toolView{}
	for _, t := range a.u.Tools() {
		if t.Server == id {
			tools = append(tools, toolView{Name: t.Canonical, UpstreamName: t.Name, Description: t.Description})
		}
	}
	a.json(w, r, http.StatusOK, statusWithTools{Status: redact(s), Tools: tools})
}

func (a *API) update(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	c, err := decodeConfig(w, r)
	if err != nil {
		a.fail(w, r, id, err)
		return
	}
	// The path names the server; a body may omit the id but not contradict
	// it, since renaming would change every tool's canonical name.
	switch c.ID {
	case "":
		c.ID = id
	case id:
	default:
		a.fail(w, r, id, badRequest("id", "is %q but the path names %q; an upstream cannot be renamed", c.ID, id))
		return
	}
	if err := c.Validate(); err != nil {
		a.fail(w, r, id, err)
		return
	}
	s, err := a.u.Update(r.Context(), id, c)
	if err != nil {
		a.fail(w, r, id, fmt.Errorf("update upstream %s: %w", id, err))
		return
	}
	a.log.Info().Str("upstream", id).Str("url", upstream.RedactURL(c.URL)).Str("remote", r.RemoteAddr).Msg("admin: upstream updated")
	a.json(w, r, http.StatusOK, redact(s))
}

func (a *API) delete(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if err := a.u.Delete(r.Context(), id); err != nil {
		a.fail(w, r, id, fmt.Errorf("delete upstream %s: %w", id, err))
		return
	}
	a.log.Info().Str("upstream", id).Str("remote", r.RemoteAddr).Msg("admin: upstream deleted")
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) setEnabled(enabled bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		s, err := a.u.SetEnabled(r.Context(), id, enabled)
		if err != nil {
			a.fail(w, r, id, fmt.Errorf("set upstream %s enabled=%t: %w", id, enabled, err))
			return
		}
		a.log.Info().Str("upstream", id).Bool("enabled", enabled).Str("remote", r.RemoteAddr).Msg("admin: upstream enabled state set")
		a.json(w, r, http.StatusOK, redact(s))
	}
}

func (a *API) refresh(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	s, err := a.u.Refresh(r.Context(), id)
	if err != nil {
		a.fail(w, r, id, fmt.Errorf("refresh upstream %s: %w", id, err))
		return
	}
	a.json(w, r, http.StatusOK, redact(s))
}

func (a *API) discover(w http.ResponseWriter, r *http.Request) {
	var o upstream.DiscoverOptions
	var err error
	q := r.URL.Query()
	if o.IncludeDisabled, err = boolParam(q, "includeDisabled"); err != nil {
		a.fail(w, r, "", err)
		return
	}
	if o.ForceRefresh, err = boolParam(q, "forceRefresh"); err != nil {
		a.fail(w, r, "", err)
		return
	}
	d, err := a.u.Discover(r.Context(), o)
	if err != nil {
		a.fail(w, r, "", fmt.Errorf("discover upstreams: %w", err))
		return
	}
	v := discoveryView{At: d.At, Servers: d.Servers, Tools: make([]string, len(d.Tools))}
	if v.Servers == nil {
		v.Servers = []upstream.ServerResult{}
	}
	for i, t := range d.Tools {
		v.Tools[i] = t.Canonical
	}
	a.json(w, r, http.StatusOK, v)
}

// boolParam reads an optional true/false query parameter; absent is false.
func boolParam(q url.Values, name string) (bool, error) {
	raw := q.Get(name)
	if raw == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(raw)
	if err != nil {
		return false, badRequest(name, "%q is not a boolean; use true or false", raw)
	}
	return b, nil
}

// decodeConfig reads a Config body (see decodeBody).
func decodeConfig(w http.ResponseWriter, r *http.Request) (upstream.Config, error) {
	var c upstream.Config
	return c, decodeBody(w, r, &c)
}

// decodeBody reads a JSON body into v: one object, no unknown fields (a
// misspelt field must not silently fall back to a default), at most
// MaxBodyBytes.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return &requestError{status: http.StatusUnsupportedMediaType,
				detail: fmt.Sprintf("Content-Type %q is not supported; send application/json", ct)}
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return decodeError(err)
		}
		return badRequest("", "the body must hold a single JSON object and nothing after it")
	}
	return nil
}

// decodeError turns a JSON decoding failure into a 400 naming the field
// where there is one. Details quote field names and offsets, never values.
func decodeError(err error) error {
	var (
		tooLarge *http.MaxBytesError
		syntax   *json.SyntaxError
		typ      *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooLarge):
		return badRequest("", "the body exceeds the limit of %d bytes", MaxBodyBytes)
	case errors.Is(err, io.EOF):
		return badRequest("", "the body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "the body is truncated JSON")
	case errors.As(err, &syntax):
		return badRequest("", "the body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badRequest("", "the body must be a JSON object, not %s", typ.Value)
		}
		return badRequest(typ.Field, "%s: expected %s, got JSON %s", typ.Field, jsonKind(typ.Type.String()), typ.Value)
	}
	// encoding/json has no type for an unknown field, only this message.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if unq, uerr := strconv.Unquote(name); uerr == nil {
			name = unq
		}
		return badRequest(name, "%s: unknown field", name)
	}
	return badRequest("", "the body could not be decoded: %v", err)
}

// jsonKind names a Go field type the way a JSON client thinks of it.
func jsonKind(goType string) string {
	switch strings.TrimPrefix(goType, "*") {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64":
		return "an integer"
	case "map[string]string":
		return "an object of strings"
	}
	return goType
}

// redact returns s with every header value replaced; the names stay, so an
// operator can see which credentials are configured. The map is copied:
// s shares it with the Upstreams.
func redact(s upstream.Status) upstream.Status {
	if len(s.Config.Headers) == 0 {
		return s
	}
	h := make(map[string]string, len(s.Config.Headers))
	for name := range s.Config.Headers {
		h[name] = Redacted
	}
	s.Config.Headers = h
	return s
}

// json writes v as a JSON response. It encodes before writing anything, so
// that a failure can still become a 500.
func (a *API) json(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		a.fail(w, r, "", fmt.Errorf("encode response: %w", err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client may be gone; nothing to do about it
}
