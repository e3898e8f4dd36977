package main

import (
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/pb33f/libopenapi"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/auth/authtest"
	"github.com/mcp-runtime/mcp-runtime/internal/config"
)

// Every route the server's router serves is in openapi.yaml, and every
// route the document names is served: the document is the contract. The
// router is the real one, built with every optional route switched on: oauth mode
// (the Protected Resource Metadata) and apikey-only routes are checked
// against the document separately by internal/admin.
func TestOpenAPIMatchesServerRoutes(t *testing.T) {
	spec, err := os.ReadFile("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}

	is := authtest.NewIssuer(t, "k1")
	cfg := config.Default()
	cfg.Auth.Mode = auth.ModeOAuth
	cfg.Auth.Resource = "https://mcp.example.com/mcp"
	cfg.Auth.OAuth.Issuer = "https://issuer.example.com"
	cfg.Auth.OAuth.JWKSURL = is.JWKSURL()
	cfg.Admin.Token = "admin"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, _, _ := serveApp(t, cfg, io.Discard, ln)
	routed := map[string]bool{}
	err = chi.Walk(a.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.TrimSuffix(route, "/")
		if strings.HasPrefix(route, "/admin/apikeys") {
			return nil // apikey mode only; internal/admin checks them
		}
		routed[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for route := range routed {
		if !documented[route] {
			t.Errorf("the server serves %s, which openapi.yaml does not document", route)
		}
	}
	for op := range documented {
		if !routed[op] && !strings.Contains(op, "/admin/apikeys") {
			t.Errorf("openapi.yaml documents %s, which the server does not serve", op)
		}
	}
	if len(routed) < 10 || !routed["GET /readyz"] {
		t.Fatalf("walked only %v", slices.Sorted(maps.Keys(routed)))
	}
}
