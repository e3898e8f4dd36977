package auth

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// WellKnownPath is the Protected Resource Metadata path (RFC 9728 §3).
const WellKnownPath = "/.well-known/oauth-protected-resource"

// ResourceMetadata is the Protected Resource Metadata document (RFC 9728
// §2) of this server.
type ResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
}

// MetadataPaths are the paths the metadata is served at: the well-known
// path with the resource's path appended (RFC 9728 §3.1), and the bare
// one, which clients probe when a 401 came without resource_metadata
// (MCP basic/authorization). Nil outside oauth mode.
func MetadataPaths(cfg Config) []string {
	if cfg.Mode != ModeOAuth {
		return nil
	}
	paths := []string{WellKnownPath}
	if u, err := url.Parse(cfg.Resource); err == nil {
		if p := strings.TrimSuffix(u.Path, "/"); p != "" {
			paths = append(paths, WellKnownPath+p)
		}
	}
	return paths
}

// MetadataHandler serves cfg's Protected Resource Metadata. It needs no
// credentials: a client reads it to learn where to get them.
func MetadataHandler(cfg Config) http.Handler {
	// The admin scope is not offered: MCP clients request the scopes the
	// metadata lists when a challenge names none, and an agent must never
	// ask for the deployment's superuser scope by default.
	scopes := slices.Clone(cfg.OAuth.RequiredScopes)
	body, err := json.Marshal(ResourceMetadata{
		Resource:               cfg.Resource,
		AuthorizationServers:   cfg.OAuth.Servers(),
		ScopesSupported:        scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           Realm,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if err != nil { // strings only: cannot happen, but never a half answer
			http.Error(w, "metadata unavailable", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(body)
	})
}
