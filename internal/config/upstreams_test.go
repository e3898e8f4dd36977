package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/upstream"
)

// Upstreams load from YAML with their defaults applied where omitted, and
// the admin token comes from the environment.
func TestLoadUpstreams(t *testing.T) {
	path := writeConfig(t, `
upstreams:
  - id: github
    url: https://mcp.example.com/mcp
    headers: {Authorization: "Bearer s3cret"}
    requestTimeoutMs: 5000
    maxRetries: 0
    category: query
  - {id: local, url: "http://127.0.0.1:9000/mcp", enabled: false}
federation: {gracePeriodMs: 0}
`)
	cfg, err := load([]string{"-config", path}, map[string]string{EnvAdminToken: "admin-token"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Upstreams) != 2 {
		t.Fatalf("upstreams = %+v", cfg.Upstreams)
	}
	gh, local := cfg.Upstreams[0], cfg.Upstreams[1]
	if !gh.IsEnabled() || gh.RequestTimeout() != 5*time.Second || gh.ConnectionTimeout() != upstream.DefaultConnectionTimeout ||
		gh.Retries() != 0 || gh.TimeoutCategory() != "query" || gh.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("github = %+v", gh)
	}
	if local.IsEnabled() || local.Retries() != upstream.DefaultMaxRetries || local.TimeoutCategory() != "execution" {
		t.Errorf("local = %+v", local)
	}
	if f := cfg.Federation; f.GracePeriod() != 0 || f.HealthInterval() != 30*time.Second || f.SyncInterval() != 10*time.Second {
		t.Errorf("federation = %+v", f)
	}
	if cfg.Admin.Token != "admin-token" {
		t.Errorf("admin token not taken from %s", EnvAdminToken)
	}
}

func TestValidateUpstreamsNamesKeys(t *testing.T) {
	ok := func() upstream.Config { return upstream.Config{ID: "a", URL: "http://127.0.0.1:1/mcp"} }
	with := func(mod func(*upstream.Config)) []upstream.Config { c := ok(); mod(&c); return []upstream.Config{c} }
	retries := 11
	cases := []struct {
		name      string
		upstreams []upstream.Config
		fed       func(*Federation)
		key       string
	}{
		{"missing id", with(func(c *upstream.Config) { c.ID = "" }), nil, "upstreams[0].id"},
		{"upper-case id", with(func(c *upstream.Config) { c.ID = "GitHub" }), nil, "upstreams[0].id"},
		{"duplicate id", []upstream.Config{ok(), ok()}, nil, "upstreams[1].id"},
		{"bad scheme", with(func(c *upstream.Config) { c.URL = "ftp://h/x" }), nil, "upstreams[0].url"},
		{"credentials in url", with(func(c *upstream.Config) { c.URL = "https://u:pw@h/mcp" }), nil, "upstreams[0].url"},
		{"reserved header", with(func(c *upstream.Config) { c.Headers = map[string]string{"mcp-session-id": "pw"} }), nil, "upstreams[0].headers.mcp-session-id"},
		{"header with a line break", with(func(c *upstream.Config) { c.Headers = map[string]string{"X-Key": "pw\r\nX: y"} }), nil, "upstreams[0].headers.X-Key"},
		{"timeout too short", with(func(c *upstream.Config) { c.ConnectionTimeoutMs = 5 }), nil, "upstreams[0].connectionTimeoutMs"},
		{"too many retries", with(func(c *upstream.Config) { c.MaxRetries = &retries }), nil, "upstreams[0].maxRetries"},
		{"unknown category", with(func(c *upstream.Config) { c.Category = "fast" }), nil, "upstreams[0].category"},
		{"health interval", nil, func(f *Federation) { f.HealthIntervalMs = 10 }, "federation.healthIntervalMs"},
		{"sync interval", nil, func(f *Federation) { f.SyncIntervalMs = 0 }, "federation.syncIntervalMs"},
		{"no tools per upstream", nil, func(f *Federation) { f.MaxToolsPerUpstream = 0 }, "federation.maxToolsPerUpstream"},
		{"tiny tool list", nil, func(f *Federation) { f.MaxToolListBytes = 10 }, "federation.maxToolListBytes"},
		{"no prompts per upstream", nil, func(f *Federation) { f.MaxPromptsPerUpstream = 0 }, "federation.maxPromptsPerUpstream"},
		{"too many resources per upstream", nil, func(f *Federation) { f.MaxResourcesPerUpstream = 2_000_000 }, "federation.maxResourcesPerUpstream"},
		{"deployment id", nil, func(f *Federation) { f.DeploymentID = "a b" }, "federation.deploymentId"},
		{"denied network", nil, func(f *Federation) { f.DeniedNetworks = []string{"10.0.0.0/8", "nope"} }, "federation.deniedNetworks[1]"},
		{"url in a denied network", with(func(c *upstream.Config) { c.URL = "http://169.254.169.254/mcp" }), nil, "upstreams[0].url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Upstreams = tc.upstreams
			if tc.fed != nil {
				tc.fed(&c.Federation)
			}
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.key+":") {
				t.Fatalf("err = %v, want one naming %s", err, tc.key)
			}
			if strings.Contains(err.Error(), "pw") {
				t.Errorf("the error echoes a secret: %v", err)
			}
		})
	}
}

// federation.deniedNetworks from the file replaces the default list: an
// operator who needs an upstream on a link-local address can allow it.
func TestLoadDeniedNetworksReplacesDefault(t *testing.T) {
	if got := Default().Federation.DeniedNetworks; !slices.Equal(got, upstream.DefaultDeniedNetworks()) {
		t.Fatalf("default = %v", got)
	}
	path := writeConfig(t, `
federation: {deniedNetworks: ["10.9.0.0/16"], maxToolsPerUpstream: 50, maxPromptsPerUpstream: 20, deploymentId: "prod-eu"}
upstreams: [{id: ll, url: "http://169.254.10.10/mcp"}]
`)
	cfg, err := load([]string{"-config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := cfg.Federation
	if !slices.Equal(f.DeniedNetworks, []string{"10.9.0.0/16"}) || f.MaxToolsPerUpstream != 50 || f.DeploymentID != "prod-eu" ||
		f.MaxToolListBytes != upstream.DefaultMaxToolListBytes || f.MaxPromptsPerUpstream != 20 ||
		f.MaxResourcesPerUpstream != upstream.DefaultMaxResourcesPerServer {
		t.Errorf("federation = %+v", f)
	}
}
