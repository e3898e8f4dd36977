package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

const (
	testToken = "s3cret-admin-token"
	// headerSecret is a credential for an upstream: it must never appear
	// in a response or in the log.
	headerSecret = "Bearer upstream-credential-xyz"
)

// fakeUpstreams is an in-memory Upstreams with the error semantics the
// API relies on: ErrNotFound, ErrExists, ErrReadOnly for SourceConfig.
type fakeUpstreams struct {
	mu       sync.Mutex
	servers  map[string]upstream.Status
	tools    []upstream.Tool
	fail     error // returned by every call when set
	panicked bool  // every call panics when set
	calls    []string
	discover upstream.DiscoverOptions
	refresh  error // returned by Refresh when set
}

func newFake() *fakeUpstreams {
	enabled := true
	return &fakeUpstreams{
		servers: map[string]upstream.Status{
			"github": {
				Config: upstream.Config{ID: "github", URL: "https://mcp.github.example/mcp", Enabled: &enabled,
					Headers: map[string]string{"Authorization": headerSecret, "X-Team": "platform"}},
				Source: upstream.SourceAPI, State: upstream.StateConnected, ToolCount: 2,
			},
			"files": {
				Config: upstream.Config{ID: "files", URL: "http://files.internal:9000/mcp", Enabled: &enabled},
				Source: upstream.SourceConfig, State: upstream.StateConnected, ToolCount: 1,
			},
		},
		tools: []upstream.Tool{
			{Server: "github", Name: "search-issues", Canonical: "github.search-issues", Description: "Search issues"},
			{Server: "files", Name: "read", Canonical: "files.read", Description: "Read a file"},
			{Server: "github", Name: "get_pr", Canonical: "github.get_pr"},
		},
	}
}

func (f *fakeUpstreams) enter(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, op)
	if f.panicked {
		panic("fake: " + op)
	}
	return f.fail
}

func (f *fakeUpstreams) called(op string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c == op {
			return true
		}
	}
	return false
}

func (f *fakeUpstreams) List(ctx context.Context) ([]upstream.Status, error) {
	if err := f.enter("List"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fake list: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []upstream.Status
	for _, s := range f.servers {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Config.ID < out[j].Config.ID })
	return out, nil
}

func (f *fakeUpstreams) Get(_ context.Context, id string) (upstream.Status, error) {
	if err := f.enter("Get"); err != nil {
		return upstream.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.servers[id]
	if !ok {
		return upstream.Status{}, fmt.Errorf("fake get %s: %w", id, upstream.ErrNotFound)
	}
	return s, nil
}

func (f *fakeUpstreams) Create(_ context.Context, c upstream.Config) (upstream.Status, error) {
	if err := f.enter("Create"); err != nil {
		return upstream.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.servers[c.ID]; ok {
		return upstream.Status{}, fmt.Errorf("fake create %s: %w", c.ID, upstream.ErrExists)
	}
	s := upstream.Status{Config: c.Normalized(), Source: upstream.SourceAPI, State: upstream.StateConnecting}
	f.servers[c.ID] = s
	return s, nil
}

// mutable returns the API-declared server id, or the error the API must map.
func (f *fakeUpstreams) mutable(id string) (upstream.Status, error) {
	s, ok := f.servers[id]
	switch {
	case !ok:
		return s, fmt.Errorf("fake %s: %w", id, upstream.ErrNotFound)
	case s.Source == upstream.SourceConfig:
		return s, fmt.Errorf("fake %s: %w", id, upstream.ErrReadOnly)
	}
	return s, nil
}

func (f *fakeUpstreams) Update(_ context.Context, id string, c upstream.Config) (upstream.Status, error) {
	if err := f.enter("Update"); err != nil {
		return upstream.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.mutable(id)
	if err != nil {
		return s, err
	}
	s.Config = c.Normalized()
	f.servers[id] = s
	return s, nil
}

func (f *fakeUpstreams) Delete(_ context.Context, id string) error {
	if err := f.enter("Delete"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.mutable(id); err != nil {
		return err
	}
	delete(f.servers, id)
	return nil
}

func (f *fakeUpstreams) SetEnabled(_ context.Context, id string, enabled bool) (upstream.Status, error) {
	if err := f.enter("SetEnabled"); err != nil {
		return upstream.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := f.mutable(id)
	if err != nil {
		return s, err
	}
	s.Config.Enabled = &enabled
	if !enabled {
		s.State = upstream.StateDisabled
	}
	f.servers[id] = s
	return s, nil
}

func (f *fakeUpstreams) Refresh(_ context.Context, id string) (upstream.Status, error) {
	if err := f.enter("Refresh"); err != nil {
		return upstream.Status{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.servers[id]
	if !ok {
		return s, fmt.Errorf("fake refresh %s: %w", id, upstream.ErrNotFound)
	}
	if f.refresh != nil {
		return s, f.refresh
	}
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s.LastDiscoveryAt, s.DiscoveryMs = &at, 42
	f.servers[id] = s
	return s, nil
}

func (f *fakeUpstreams) Discover(_ context.Context, o upstream.DiscoverOptions) (upstream.Discovery, error) {
	if err := f.enter("Discover"); err != nil {
		return upstream.Discovery{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.discover = o
	return upstream.Discovery{
		Tools: f.tools,
		Servers: []upstream.ServerResult{
			{Server: "files", State: upstream.StateConnected, ToolCount: 1, DurationMs: 3, Cached: !o.ForceRefresh},
			{Server: "github", State: upstream.StateConnected, ToolCount: 2, DurationMs: 7, Cached: !o.ForceRefresh},
		},
		At: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC),
	}, nil
}

func (f *fakeUpstreams) Tools() []upstream.Tool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tools
}

// syncBuffer is a log sink safe for concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newRouter(f Upstreams, token string, log *syncBuffer) chi.Router {
	r := chi.NewRouter()
	New(f, Options{Token: token, Log: zerolog.New(log)}).Mount(r)
	return r
}

type apiCase struct {
	name   string
	method string
	path   string
	body   string
	// contentType defaults to application/json when there is a body.
	contentType string
	// auth is the Authorization header; "" means "Bearer "+testToken,
	// "-" means none.
	auth string
	// token configures the API; "" means testToken, "-" means disabled.
	token string
	setup func(*fakeUpstreams)

	wantStatus  int
	wantField   string
	wantDetail  string // a substring of the problem's detail
	wantHeaders map[string]string
	check       func(t *testing.T, f *fakeUpstreams, body []byte)
}

func (tc apiCase) run(t *testing.T) {
	t.Parallel()
	f := newFake()
	if tc.setup != nil {
		tc.setup(f)
	}
	token := testToken
	switch tc.token {
	case "-":
		token = ""
	case "":
	default:
		token = tc.token
	}
	var logs syncBuffer
	router := newRouter(f, token, &logs)

	var body *strings.Reader
	if tc.body != "" {
		body = strings.NewReader(tc.body)
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(tc.method, tc.path, body)
	if tc.body != "" {
		ct := tc.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	switch tc.auth {
	case "":
		req.Header.Set("Authorization", "Bearer "+testToken)
	case "-":
	default:
		req.Header.Set("Authorization", tc.auth)
	}
	rec := httptest.NewRecorder()
	router.ServeHTTP(rec, req)

	res := rec.Result()
	got := rec.Body.Bytes()
	if res.StatusCode != tc.wantStatus {
		t.Fatalf("%s %s: status %d, want %d; body %s", tc.method, tc.path, res.StatusCode, tc.wantStatus, got)
	}
	for k, v := range tc.wantHeaders {
		if h := res.Header.Get(k); h != v {
			t.Errorf("header %s = %q, want %q", k, h, v)
		}
	}
	ct := res.Header.Get("Content-Type")
	switch {
	case tc.wantStatus == http.StatusNoContent:
		if len(got) != 0 {
			t.Errorf("204 with a body: %s", got)
		}
	case tc.wantStatus >= 400:
		if ct != "application/problem+json" {
			t.Errorf("Content-Type %q, want application/problem+json", ct)
		}
		var p Problem
		if err := json.Unmarshal(got, &p); err != nil {
			t.Fatalf("problem body %s: %v", got, err)
		}
		if p.Type != "about:blank" || p.Status != tc.wantStatus || p.Title != http.StatusText(tc.wantStatus) || p.Detail == "" {
			t.Errorf("problem %+v: want type about:blank, status %d, its title, a detail", p, tc.wantStatus)
		}
		if p.Field != tc.wantField {
			t.Errorf("problem field %q, want %q (detail %q)", p.Field, tc.wantField, p.Detail)
		}
		if !strings.Contains(p.Detail, tc.wantDetail) {
			t.Errorf("problem detail %q does not contain %q", p.Detail, tc.wantDetail)
		}
	default:
		if ct != "application/json" {
			t.Errorf("Content-Type %q, want application/json", ct)
		}
	}
	// Secrets never leave: not in a response, not in the log.
	for _, secret := range []string{headerSecret, testToken} {
		if bytes.Contains(got, []byte(secret)) {
			t.Errorf("response contains the secret %q: %s", secret, got)
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("log contains the secret %q: %s", secret, logs.String())
		}
	}
	if tc.check != nil {
		tc.check(t, f, got)
	}
}

func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

// statusJSON is the wire form of a Status (plus GET's tools), decoded
// loosely so that the test sees exactly what a client sees.
type statusJSON struct {
	Config struct {
		ID                  string            `json:"id"`
		URL                 string            `json:"url"`
		Enabled             *bool             `json:"enabled"`
		Headers             map[string]string `json:"headers"`
		ConnectionTimeoutMs int64             `json:"connectionTimeoutMs"`
		MaxRetries          *int              `json:"maxRetries"`
		Category            string            `json:"category"`
	} `json:"config"`
	Source          string     `json:"source"`
	State           string     `json:"state"`
	LastDiscoveryAt *time.Time `json:"lastDiscoveryAt"`
	Tools           []struct {
		Name         string  `json:"name"`
		UpstreamName string  `json:"upstreamName"`
		Description  *string `json:"description"`
	} `json:"tools"`
}

func wantRedacted(t *testing.T, s statusJSON, names ...string) {
	t.Helper()
	if len(s.Config.Headers) != len(names) {
		t.Errorf("headers %v, want names %v", s.Config.Headers, names)
	}
	for _, n := range names {
		if v, ok := s.Config.Headers[n]; !ok || v != Redacted {
			t.Errorf("header %s = %q (present %t), want %q", n, v, ok, Redacted)
		}
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	cases := []apiCase{
		{
			name: "list", method: http.MethodGet, path: "/admin/upstreams", wantStatus: http.StatusOK,
			check: func(t *testing.T, f *fakeUpstreams, body []byte) {
				v := decode[struct{ Upstreams []statusJSON }](t, body)
				if len(v.Upstreams) != 2 || v.Upstreams[0].Config.ID != "files" || v.Upstreams[1].Config.ID != "github" {
					t.Fatalf("upstreams %+v", v.Upstreams)
				}
				wantRedacted(t, v.Upstreams[1], "Authorization", "X-Team")
				// The Upstreams' own map is untouched: redaction copies.
				if got := f.servers["github"].Config.Headers["Authorization"]; got != headerSecret {
					t.Errorf("redaction changed the stored header to %q", got)
				}
			},
		},
		{
			name: "list empty is an empty array", method: http.MethodGet, path: "/admin/upstreams", wantStatus: http.StatusOK,
			setup: func(f *fakeUpstreams) { f.servers = map[string]upstream.Status{} },
			check: func(t *testing.T, _ *fakeUpstreams, body []byte) {
				if got := strings.TrimSpace(string(body)); got != `{"upstreams":[]}` {
					t.Errorf("body %s", got)
				}
			},
		},
		{
			name: "list internal error", method: http.MethodGet, path: "/admin/upstreams",
			setup:      func(f *fakeUpstreams) { f.fail = errors.New("store: connection refused to db.internal:5432") },
			wantStatus: http.StatusInternalServerError, wantDetail: "internal error",
			check: func(t *testing.T, _ *fakeUpstreams, body []byte) {
				if bytes.Contains(body, []byte("db.internal")) {
					t.Errorf("500 leaks its cause: %s", body)
				}
			},
		},
		{
			name: "create", method: http.MethodPost, path: "/admin/upstreams",
			body:       `{"id":"jira","url":"https://jira.example/mcp","headers":{"Authorization":"` + headerSecret + `"},"maxRetries":0,"category":"query"}`,
			wantStatus: http.StatusCreated, wantHeaders: map[string]string{"Location": "/admin/upstreams/jira"},
			check: func(t *testing.T, f *fakeUpstreams, body []byte) {
				s := decode[statusJSON](t, body)
				if s.Config.ID != "jira" || s.Source != "api" || s.Config.Category != "query" ||
					s.Config.MaxRetries == nil || *s.Config.MaxRetries != 0 {
					t.Errorf("status %+v", s)
				}
				wantRedacted(t, s, "Authorization")
				if got := f.servers["jira"].Config.Headers["Authorization"]; got != headerSecret {
					t.Errorf("stored header %q: the API must pass the real value on", got)
				}
			},
		},
		{
			name: "create with charset", method: http.MethodPost, path: "/admin/upstreams",
			body: `{"id":"jira","url":"https://jira.example/mcp"}`, contentType: "application/json; charset=utf-8",
			wantStatus: http.StatusCreated,
		},
		{
			name: "create exists", method: http.MethodPost, path: "/admin/upstreams",
			body:       `{"id":"github","url":"https://other.example/mcp"}`,
			wantStatus: http.StatusConflict, wantField: "id", wantDetail: "already exists",
		},
		{
			name: "create invalid field is caught before the Upstreams", method: http.MethodPost, path: "/admin/upstreams",
			body:       `{"id":"jira","url":"https://jira.example/mcp","connectionTimeoutMs":5}`,
			wantStatus: http.StatusBadRequest, wantField: "connectionTimeoutMs",
			check: func(t *testing.T, f *fakeUpstreams, _ []byte) {
				if f.called("Create") {
					t.Error("Create called with an invalid Config")
				}
			},
		},
		{
			name: "create bad id", method: http.MethodPost, path: "/admin/upstreams",
			body: `{"id":"Bad_ID","url":"https://jira.example/mcp"}`, wantStatus: http.StatusBadRequest, wantField: "id",
		},
		{
			name: "create bad header value names the header, not the value", method: http.MethodPost, path: "/admin/upstreams",
			body:       `{"id":"jira","url":"https://jira.example/mcp","headers":{"Mcp-Session-Id":"` + headerSecret + `"}}`,
			wantStatus: http.StatusBadRequest, wantField: "headers.Mcp-Session-Id",
		},
		{
			name: "create unknown field", method: http.MethodPost, path: "/admin/upstreams",
			body:       `{"id":"jira","url":"https://jira.example/mcp","timeoutMs":1000}`,
			wantStatus: http.StatusBadRequest, wantField: "timeoutMs", wantDetail: "unknown field",
		},
		{
			name: "create wrong type", method: http.MethodPost, path: "/admin/upstreams",
			body:       `{"id":"jira","url":"https://jira.example/mcp","maxRetries":"three"}`,
			wantStatus: http.StatusBadRequest, wantField: "maxRetries", wantDetail: "an integer",
		},
		{
			name: "create bad JSON", method: http.MethodPost, path: "/admin/upstreams",
			body: `{"id":"jira",`, wantStatus: http.StatusBadRequest, wantDetail: "truncated",
		},
		{
			name: "create syntax error", method: http.MethodPost, path: "/admin/upstreams",
			body: `{"id" "jira"}`, wantStatus: http.StatusBadRequest, wantDetail: "not valid JSON",
		},
		{
			name: "create not an object", method: http.MethodPost, path: "/admin/upstreams",
			body: `["jira"]`, wantStatus: http.StatusBadRequest, wantDetail: "JSON object",
		},
		{
			name: "create trailing data", method: http.MethodPost, path: "/admin/upstreams",
			body:       `{"id":"jira","url":"https://jira.example/mcp"} {"id":"x"}`,
			wantStatus: http.StatusBadRequest, wantDetail: "single JSON object",
		},
		{
			name: "create empty body", method: http.MethodPost, path: "/admin/upstreams",
			wantStatus: http.StatusBadRequest, wantDetail: "empty",
		},
		{
			name: "create oversize body", method: http.MethodPost, path: "/admin/upstreams",
			body:       `{"id":"jira","url":"https://jira.example/mcp","headers":{"X-Big":"` + strings.Repeat("a", MaxBodyBytes) + `"}}`,
			wantStatus: http.StatusBadRequest, wantDetail: "exceeds the limit",
			check: func(t *testing.T, f *fakeUpstreams, _ []byte) {
				if f.called("Create") {
					t.Error("Create called for an oversize body")
				}
			},
		},
		{
			name: "create oversize trailing whitespace", method: http.MethodPost, path: "/admin/upstreams",
			body:       `{"id":"jira","url":"https://jira.example/mcp"}` + strings.Repeat(" ", MaxBodyBytes),
			wantStatus: http.StatusBadRequest, wantDetail: "exceeds the limit",
		},
		{
			name: "create wrong content type", method: http.MethodPost, path: "/admin/upstreams",
			body: `id=jira`, contentType: "application/x-www-form-urlencoded", wantStatus: http.StatusUnsupportedMediaType,
		},
		{
			name: "get with its tools", method: http.MethodGet, path: "/admin/upstreams/github", wantStatus: http.StatusOK,
			check: func(t *testing.T, _ *fakeUpstreams, body []byte) {
				s := decode[statusJSON](t, body)
				if s.Config.ID != "github" || s.State != "connected" || s.Source != "api" {
					t.Errorf("status %+v", s)
				}
				wantRedacted(t, s, "Authorization", "X-Team")
				if len(s.Tools) != 2 || s.Tools[0].Name != "github.search-issues" || s.Tools[0].UpstreamName != "search-issues" ||
					s.Tools[0].Description == nil || *s.Tools[0].Description != "Search issues" ||
					s.Tools[1].Name != "github.get_pr" || s.Tools[1].Description == nil {
					t.Errorf("tools %+v", s.Tools)
				}
			},
		},
		{
			name: "get without tools has an empty array", method: http.MethodGet, path: "/admin/upstreams/github", wantStatus: http.StatusOK,
			setup: func(f *fakeUpstreams) { f.tools = nil },
			check: func(t *testing.T, _ *fakeUpstreams, body []byte) {
				if !bytes.Contains(body, []byte(`"tools":[]`)) {
					t.Errorf("body %s", body)
				}
			},
		},
		{
			name: "get not found", method: http.MethodGet, path: "/admin/upstreams/nope",
			wantStatus: http.StatusNotFound, wantDetail: `"nope"`,
		},
		{
			name: "update", method: http.MethodPut, path: "/admin/upstreams/github",
			body:       `{"url":"https://mcp2.github.example/mcp","headers":{"Authorization":"` + headerSecret + `"},"requestTimeoutMs":60000}`,
			wantStatus: http.StatusOK,
			check: func(t *testing.T, f *fakeUpstreams, body []byte) {
				s := decode[statusJSON](t, body)
				if s.Config.ID != "github" || s.Config.URL != "https://mcp2.github.example/mcp" {
					t.Errorf("status %+v", s)
				}
				wantRedacted(t, s, "Authorization")
				if got := f.servers["github"].Config.RequestTimeoutMs; got != 60000 {
					t.Errorf("stored requestTimeoutMs %d", got)
				}
			},
		},
		{
			name: "update with the same id in the body", method: http.MethodPut, path: "/admin/upstreams/github",
			body: `{"id":"github","url":"https://mcp2.github.example/mcp"}`, wantStatus: http.StatusOK,
		},
		{
			name: "update cannot rename", method: http.MethodPut, path: "/admin/upstreams/github",
			body: `{"id":"gh","url":"https://mcp2.github.example/mcp"}`, wantStatus: http.StatusBadRequest, wantField: "id",
		},
		{
			name: "update invalid url", method: http.MethodPut, path: "/admin/upstreams/github",
			body: `{"url":"ftp://x"}`, wantStatus: http.StatusBadRequest, wantField: "url",
		},
		{
			name: "update unknown field", method: http.MethodPut, path: "/admin/upstreams/github",
			body: `{"url":"https://x.example","retries":3}`, wantStatus: http.StatusBadRequest, wantField: "retries",
		},
		{
			name: "update read-only", method: http.MethodPut, path: "/admin/upstreams/files",
			body:       `{"url":"https://files.example/mcp"}`,
			wantStatus: http.StatusConflict, wantDetail: "declared in the configuration file",
		},
		{
			name: "update not found", method: http.MethodPut, path: "/admin/upstreams/nope",
			body: `{"url":"https://nope.example/mcp"}`, wantStatus: http.StatusNotFound,
		},
		{
			name: "update field error from the Upstreams", method: http.MethodPut, path: "/admin/upstreams/github",
			body: `{"url":"https://mcp2.github.example/mcp"}`,
			setup: func(f *fakeUpstreams) {
				f.fail = &upstream.FieldError{Field: "url", Reason: "resolves to a forbidden address"}
			},
			wantStatus: http.StatusBadRequest, wantField: "url", wantDetail: "forbidden address",
		},
		{
			name: "delete", method: http.MethodDelete, path: "/admin/upstreams/github", wantStatus: http.StatusNoContent,
			check: func(t *testing.T, f *fakeUpstreams, _ []byte) {
				if _, ok := f.servers["github"]; ok {
					t.Error("not deleted")
				}
			},
		},
		{
			name: "delete read-only", method: http.MethodDelete, path: "/admin/upstreams/files",
			wantStatus: http.StatusConflict, wantDetail: "configuration file",
		},
		{
			name: "delete not found", method: http.MethodDelete, path: "/admin/upstreams/nope", wantStatus: http.StatusNotFound,
		},
		{
			name: "disable", method: http.MethodPost, path: "/admin/upstreams/github/disable", wantStatus: http.StatusOK,
			check: func(t *testing.T, _ *fakeUpstreams, body []byte) {
				s := decode[statusJSON](t, body)
				if s.Config.Enabled == nil || *s.Config.Enabled || s.State != "disabled" {
					t.Errorf("status %+v", s)
				}
				wantRedacted(t, s, "Authorization", "X-Team")
			},
		},
		{
			name: "enable", method: http.MethodPost, path: "/admin/upstreams/github/enable", wantStatus: http.StatusOK,
			check: func(t *testing.T, _ *fakeUpstreams, body []byte) {
				if s := decode[statusJSON](t, body); s.Config.Enabled == nil || !*s.Config.Enabled {
					t.Errorf("status %+v", s)
				}
			},
		},
		{
			name: "enable not found", method: http.MethodPost, path: "/admin/upstreams/nope/enable", wantStatus: http.StatusNotFound,
		},
		{
			name: "disable read-only", method: http.MethodPost, path: "/admin/upstreams/files/disable",
			wantStatus: http.StatusConflict, wantDetail: "configuration file",
		},
		{
			name: "refresh", method: http.MethodPost, path: "/admin/upstreams/github/refresh", wantStatus: http.StatusOK,
			check: func(t *testing.T, _ *fakeUpstreams, body []byte) {
				s := decode[statusJSON](t, body)
				if s.LastDiscoveryAt == nil {
					t.Errorf("status %+v: no lastDiscoveryAt", s)
				}
				wantRedacted(t, s, "Authorization", "X-Team")
			},
		},
		{
			name: "refresh not found", method: http.MethodPost, path: "/admin/upstreams/nope/refresh", wantStatus: http.StatusNotFound,
		},
		{
			name: "refresh upstream failure is a bad gateway", method: http.MethodPost, path: "/admin/upstreams/github/refresh",
			setup: func(f *fakeUpstreams) {
				f.refresh = &upstream.Error{Kind: upstream.ErrInvocationFailed, Server: "github", Op: "tools/list",
					Err: errors.New(`Post "https://mcp.github.example/mcp?key=k": connection refused`)}
			},
			wantStatus: http.StatusBadGateway, wantDetail: "github",
			check: func(t *testing.T, _ *fakeUpstreams, body []byte) {
				if bytes.Contains(body, []byte("key=k")) {
					t.Errorf("detail leaks the cause: %s", body)
				}
			},
		},
		{
			name: "refresh upstream timeout", method: http.MethodPost, path: "/admin/upstreams/github/refresh",
			setup: func(f *fakeUpstreams) {
				f.refresh = &upstream.Error{Kind: upstream.ErrConnectionTimeout, Server: "github", Op: "connect", Timeout: true}
			},
			wantStatus: http.StatusGatewayTimeout,
		},
		{
			name: "discover", method: http.MethodPost, path: "/admin/upstreams/discover?includeDisabled=true&forceRefresh=true",
			wantStatus: http.StatusOK,
			check: func(t *testing.T, f *fakeUpstreams, body []byte) {
				if (f.discover != upstream.DiscoverOptions{IncludeDisabled: true, ForceRefresh: true}) {
					t.Errorf("options %+v", f.discover)
				}
				v := decode[struct {
					At      time.Time
					Servers []upstream.ServerResult
					Tools   []string
				}](t, body)
				if v.At.IsZero() || len(v.Servers) != 2 || v.Servers[0].Cached ||
					strings.Join(v.Tools, ",") != "github.search-issues,files.read,github.get_pr" {
					t.Errorf("discovery %+v", v)
				}
			},
		},
		{
			name: "discover defaults", method: http.MethodPost, path: "/admin/upstreams/discover", wantStatus: http.StatusOK,
			check: func(t *testing.T, f *fakeUpstreams, _ []byte) {
				if (f.discover != upstream.DiscoverOptions{}) {
					t.Errorf("options %+v", f.discover)
				}
			},
		},
		{
			name: "discover bad flag", method: http.MethodPost, path: "/admin/upstreams/discover?forceRefresh=yes",
			wantStatus: http.StatusBadRequest, wantField: "forceRefresh",
		},
		{
			name: "discover internal error", method: http.MethodPost, path: "/admin/upstreams/discover",
			setup:      func(f *fakeUpstreams) { f.fail = context.DeadlineExceeded },
			wantStatus: http.StatusInternalServerError,
		},
		{
			name: "panic is a 500", method: http.MethodGet, path: "/admin/upstreams",
			setup:      func(f *fakeUpstreams) { f.panicked = true },
			wantStatus: http.StatusInternalServerError,
		},
		{
			name: "405 on a collection", method: http.MethodDelete, path: "/admin/upstreams",
			wantStatus: http.StatusMethodNotAllowed, wantHeaders: map[string]string{"Allow": "GET, POST"},
		},
		{
			name: "405 on an item", method: http.MethodPatch, path: "/admin/upstreams/github",
			wantStatus: http.StatusMethodNotAllowed, wantHeaders: map[string]string{"Allow": "GET, PUT, DELETE"},
		},
		{
			name: "405 on an action", method: http.MethodGet, path: "/admin/upstreams/github/enable",
			wantStatus: http.StatusMethodNotAllowed, wantHeaders: map[string]string{"Allow": "POST"},
		},
		{
			name: "unknown admin route", method: http.MethodGet, path: "/admin/nothing", wantStatus: http.StatusNotFound,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, tc.run)
	}
}

func TestToken(t *testing.T) {
	t.Parallel()
	const realmHeader = `Bearer realm="mcp-runtime-admin"`
	cases := []apiCase{
		{
			name: "missing", method: http.MethodGet, path: "/admin/upstreams", auth: "-",
			wantStatus: http.StatusUnauthorized, wantHeaders: map[string]string{"WWW-Authenticate": realmHeader},
		},
		{
			name: "wrong", method: http.MethodGet, path: "/admin/upstreams", auth: "Bearer not-the-token",
			wantStatus:  http.StatusUnauthorized,
			wantHeaders: map[string]string{"WWW-Authenticate": realmHeader + `, error="invalid_token"`},
		},
		{
			name: "a prefix of the token", method: http.MethodGet, path: "/admin/upstreams", auth: "Bearer " + testToken[:5],
			wantStatus: http.StatusUnauthorized,
		},
		{
			name: "another scheme", method: http.MethodGet, path: "/admin/upstreams", auth: "Basic " + testToken,
			wantStatus: http.StatusUnauthorized, wantHeaders: map[string]string{"WWW-Authenticate": realmHeader},
		},
		{
			name: "empty bearer", method: http.MethodGet, path: "/admin/upstreams", auth: "Bearer ",
			wantStatus: http.StatusUnauthorized,
		},
		{
			name: "right", method: http.MethodGet, path: "/admin/upstreams", wantStatus: http.StatusOK,
		},
		{
			name: "scheme is case-insensitive", method: http.MethodGet, path: "/admin/upstreams", auth: "bearer " + testToken,
			wantStatus: http.StatusOK,
		},
		{
			name: "checked before routing", method: http.MethodGet, path: "/admin/nothing", auth: "-",
			wantStatus: http.StatusUnauthorized,
		},
		{
			name: "checked before the body", method: http.MethodPost, path: "/admin/upstreams", auth: "Bearer wrong",
			body: `{"id":"jira","url":"https://jira.example/mcp"}`, wantStatus: http.StatusUnauthorized,
			check: func(t *testing.T, f *fakeUpstreams, _ []byte) {
				if f.called("Create") {
					t.Error("Create called without the token")
				}
			},
		},
		{
			name: "disabled API", method: http.MethodGet, path: "/admin/upstreams", token: "-",
			wantStatus: http.StatusForbidden, wantDetail: "MCP_ADMIN_TOKEN",
		},
		{
			name: "disabled API ignores any token", method: http.MethodPost, path: "/admin/upstreams/discover",
			token: "-", auth: "Bearer ", wantStatus: http.StatusForbidden, wantDetail: "MCP_ADMIN_TOKEN",
			check: func(t *testing.T, f *fakeUpstreams, _ []byte) {
				if f.called("Discover") {
					t.Error("Discover called on a disabled API")
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, tc.run)
	}
}

// TestConcurrent serves many requests at once on one API, for -race.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	f := newFake()
	var logs syncBuffer
	srv := httptest.NewServer(newRouter(f, testToken, &logs))
	defer srv.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Go(func() {
			for _, rq := range []struct{ method, path, body string }{
				{http.MethodPost, "/admin/upstreams", fmt.Sprintf(`{"id":"s%d","url":"https://s%d.example/mcp"}`, i, i)},
				{http.MethodGet, "/admin/upstreams", ""},
				{http.MethodGet, "/admin/upstreams/github", ""},
				{http.MethodPost, fmt.Sprintf("/admin/upstreams/s%d/disable", i), ""},
				{http.MethodDelete, fmt.Sprintf("/admin/upstreams/s%d", i), ""},
			} {
				req, err := http.NewRequestWithContext(t.Context(), rq.method, srv.URL+rq.path, strings.NewReader(rq.body))
				if err != nil {
					errs <- err
					return
				}
				req.Header.Set("Authorization", "Bearer "+testToken)
				res, err := srv.Client().Do(req)
				if err != nil {
					errs <- err
					return
				}
				_ = res.Body.Close()
				if res.StatusCode >= 300 {
					errs <- fmt.Errorf("%s %s: %d", rq.method, rq.path, res.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(f.servers) != 2 {
		t.Errorf("%d servers left, want the 2 seeded", len(f.servers))
	}
}

// TestClientGone: a request whose client has gone is no server error.
func TestClientGone(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	router := newRouter(newFake(), testToken, &logs)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	req := httptest.NewRequest(http.MethodGet, "/admin/upstreams", nil).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+testToken)
	rec := httptest.NewRecorder()
	router.ServeHTTP(rec, req)
	if rec.Code != statusClientClosed {
		t.Errorf("status %d, want %d", rec.Code, statusClientClosed)
	}
	if strings.Contains(logs.String(), `"level":"error"`) {
		t.Errorf("a client going away is logged as an error: %s", logs.String())
	}
}
