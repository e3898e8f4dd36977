package admin

import (
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/memstore"
)

const openapiPath = "../../openapi.yaml"

// loadOpenAPI parses and resolves the document; it fails the test on any
// error, including a $ref that points nowhere.
func loadOpenAPI(t *testing.T) (libopenapi.Document, *v3.Document) {
	t.Helper()
	spec, err := os.ReadFile(openapiPath)
	if err != nil {
		t.Fatalf("read %s: %v", openapiPath, err)
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatalf("parse %s: %v", openapiPath, err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("%s is OpenAPI %q, want 3.1.0", openapiPath, v)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build the model of %s: %v", openapiPath, err)
	}
	return doc, &model.Model
}

// TestOpenAPIDocumentIsValid validates openapi.yaml against the OpenAPI 3.1
// schema.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	doc, model := loadOpenAPI(t)
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("build the validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("%s: %s (line %d): %s", openapiPath, e.Message, e.SpecLine, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  at %s: %s", se.FieldPath, se.Reason)
			}
		}
	}
	// Every /admin operation needs the bearer token.
	for path, item := range model.Paths.PathItems.FromOldest() {
		if !strings.HasPrefix(path, "/admin") {
			continue
		}
		for method, op := range item.GetOperations().FromOldest() {
			var required bool
			if len(op.Security) == 1 && op.Security[0].Requirements != nil {
				_, required = op.Security[0].Requirements.Get("adminToken")
			}
			if !required {
				t.Errorf("%s %s: no adminToken security requirement", strings.ToUpper(method), path)
			}
		}
	}
}

// TestOpenAPIMatchesRouter fails when an admin route is missing from the
// document, or the document has an /admin operation the router lacks.
func TestOpenAPIMatchesRouter(t *testing.T) {
	t.Parallel()
	_, model := loadOpenAPI(t)

	documented := map[string]bool{}
	for path, item := range model.Paths.PathItems.FromOldest() {
		if !strings.HasPrefix(path, "/admin/") {
			continue
		}
		for method := range item.GetOperations().FromOldest() {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}

	r := chi.NewRouter()
	New(newFake(), Options{Token: testToken, Keys: memstore.New(store.Options{})}).Mount(r)
	routed := map[string]bool{}
	err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routed[method+" "+strings.TrimSuffix(route, "/")] = true
		return nil
	})
	if err != nil {
		t.Fatalf("walk the router: %v", err)
	}
	if len(routed) == 0 {
		t.Fatal("the router has no routes")
	}

	for _, route := range sortedKeys(routed) {
		if !documented[route] {
			t.Errorf("route %s is not in %s", route, openapiPath)
		}
	}
	for _, op := range sortedKeys(documented) {
		if !routed[op] {
			t.Errorf("%s documents %s, which the router does not serve", openapiPath, op)
		}
	}
}

// TestOpenAPIDescribesResponses checks real admin responses, successes and
// problems, against the document's schemas, so the two cannot drift.
func TestOpenAPIDescribesResponses(t *testing.T) {
	t.Parallel()
	doc, _ := loadOpenAPI(t)
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("build the validator: %v", errs)
	}
	router := chi.NewRouter()
	New(newFake(), Options{Token: testToken, Keys: memstore.New(store.Options{})}).Mount(router)

	cases := []struct {
		method, path, body, auth string
		want                     int
	}{
		{http.MethodGet, "/admin/upstreams", "", "", http.StatusOK},
		{http.MethodPost, "/admin/upstreams", `{"id":"jira","url":"https://jira.example/mcp","headers":{"Authorization":"x"}}`, "", http.StatusCreated},
		{http.MethodPost, "/admin/upstreams", `{"id":"jira","url":"https://jira.example/mcp","nope":1}`, "", http.StatusBadRequest},
		{http.MethodPost, "/admin/upstreams", `{"id":"github","url":"https://github.example/mcp"}`, "", http.StatusConflict},
		{http.MethodGet, "/admin/upstreams/github", "", "", http.StatusOK},
		{http.MethodGet, "/admin/upstreams/nope", "", "", http.StatusNotFound},
		{http.MethodGet, "/admin/upstreams", "", "-", http.StatusUnauthorized},
		{http.MethodPut, "/admin/upstreams/github", `{"url":"https://github2.example/mcp"}`, "", http.StatusOK},
		{http.MethodPut, "/admin/upstreams/files", `{"url":"https://files2.example/mcp"}`, "", http.StatusConflict},
		{http.MethodPost, "/admin/upstreams/github/disable", "", "", http.StatusOK},
		{http.MethodPost, "/admin/upstreams/github/enable", "", "", http.StatusOK},
		{http.MethodPost, "/admin/upstreams/github/refresh", "", "", http.StatusOK},
		{http.MethodPost, "/admin/upstreams/discover?forceRefresh=true", "", "", http.StatusOK},
		{http.MethodDelete, "/admin/upstreams/jira", "", "", http.StatusNoContent},
		{http.MethodPost, "/admin/apikeys", `{"id":"ci","tenant":"team-a","scopes":["mcp:tools"]}`, "", http.StatusCreated},
		{http.MethodPost, "/admin/apikeys", `{"id":"ci"}`, "", http.StatusConflict},
		{http.MethodPost, "/admin/apikeys", `{"id":""}`, "", http.StatusBadRequest},
		{http.MethodGet, "/admin/apikeys", "", "", http.StatusOK},
		{http.MethodDelete, "/admin/apikeys/ci", "", "", http.StatusOK},
		{http.MethodDelete, "/admin/apikeys/nope", "", "", http.StatusNotFound},
	}
	for _, tc := range cases {
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if tc.auth != "-" {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
		rec := httptest.NewRecorder()
		router.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Fatalf("%s %s: status %d, want %d: %s", tc.method, tc.path, rec.Code, tc.want, rec.Body)
		}
		// A fresh request: the handler has consumed the body.
		vreq := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		vreq.Header = req.Header.Clone()
		if ok, verrs := v.ValidateHttpResponse(vreq, rec.Result()); !ok {
			for _, e := range verrs {
				t.Errorf("%s %s -> %d: %s: %s", tc.method, tc.path, rec.Code, e.Message, e.Reason)
				for _, se := range e.SchemaValidationErrors {
					t.Errorf("  at %s: %s", se.FieldPath, se.Reason)
				}
			}
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
