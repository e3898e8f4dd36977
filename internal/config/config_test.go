package config

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v, want nil", err)
	}
}

func TestDurations(t *testing.T) {
	c := Default()
	for _, tc := range []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"ShutdownGrace", c.ShutdownGrace(), 25 * time.Second},
		{"SessionIdleTimeout", c.Transport.SessionIdleTimeout(), 30 * time.Minute},
		{"KeepAliveInterval", c.Transport.KeepAliveInterval(), 15 * time.Second},
		{"ReadHeaderTimeout", c.Transport.ReadHeaderTimeout(), 10 * time.Second},
	} {
		if tc.got != tc.want {
			t.Errorf("%s() = %v, want %v", tc.name, tc.got, tc.want)
		}
	}

	// The largest value Validate accepts must convert without overflow.
	c.ShutdownGraceMs = maxDurationMs
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate() with shutdownGraceMs=maxDurationMs: %v", err)
	}
	if c.ShutdownGrace() <= 0 {
		t.Errorf("ShutdownGrace() = %v for maxDurationMs, overflowed", c.ShutdownGrace())
	}
}

func TestValidateNamesKey(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		key    string
		value  string // as it must appear in the message
	}{
		{"listen no port", func(c *Config) { c.Listen = "localhost" }, "listen", `"localhost"`},
		{"listen empty", func(c *Config) { c.Listen = "" }, "listen", `""`},
		{"listen port too big", func(c *Config) { c.Listen = ":65536" }, "listen", `":65536"`},
		{"listen named port", func(c *Config) { c.Listen = "localhost:http" }, "listen", `"localhost:http"`},
		{"listen signed port", func(c *Config) { c.Listen = ":+80" }, "listen", `":+80"`},
		{"origin no scheme", func(c *Config) { c.AllowedOrigins = []string{"example.com"} }, "allowedOrigins[0]", `"example.com"`},
		{"origin scheme", func(c *Config) { c.AllowedOrigins = []string{"ftp://example.com"} }, "allowedOrigins[0]", `"ftp://example.com"`},
		{"origin path", func(c *Config) { c.AllowedOrigins = []string{"https://a.example", "https://example.com/app"} }, "allowedOrigins[1]", `"https://example.com/app"`},
		{"origin query", func(c *Config) { c.AllowedOrigins = []string{"https://example.com?x=1"} }, "allowedOrigins[0]", `"https://example.com?x=1"`},
		{"origin empty query", func(c *Config) { c.AllowedOrigins = []string{"https://example.com?"} }, "allowedOrigins[0]", `"https://example.com?"`},
		{"origin fragment", func(c *Config) { c.AllowedOrigins = []string{"https://example.com#top"} }, "allowedOrigins[0]", `"https://example.com#top"`},
		{"origin userinfo", func(c *Config) { c.AllowedOrigins = []string{"https://u@example.com"} }, "allowedOrigins[0]", `"https://u@example.com"`},
		{"origin two slashes", func(c *Config) { c.AllowedOrigins = []string{"https://example.com//"} }, "allowedOrigins[0]", `"https://example.com//"`},
		{"origin bad port", func(c *Config) { c.AllowedOrigins = []string{"https://example.com:99999"} }, "allowedOrigins[0]", `"https://example.com:99999"`},
		{"origin empty port", func(c *Config) { c.AllowedOrigins = []string{"https://example.com:"} }, "allowedOrigins[0]", `"https://example.com:"`},
		{"origin no host", func(c *Config) { c.AllowedOrigins = []string{"https://"} }, "allowedOrigins[0]", `"https://"`},
		{"origin wildcard host", func(c *Config) { c.AllowedOrigins = []string{"https://*.example.com"} }, "allowedOrigins[0]", `"https://*.example.com"`},
		{"origin star mixed", func(c *Config) { c.AllowedOrigins = []string{"https://example.com", "*"} }, "allowedOrigins[1]", `"*"`},
		{"origin empty", func(c *Config) { c.AllowedOrigins = []string{""} }, "allowedOrigins[0]", `""`},
		{"logLevel", func(c *Config) { c.LogLevel = "verbose" }, "logLevel", `"verbose"`},
		{"logLevel case", func(c *Config) { c.LogLevel = "INFO" }, "logLevel", `"INFO"`},
		{"logFormat", func(c *Config) { c.LogFormat = "text" }, "logFormat", `"text"`},
		{"separator dot", func(c *Config) { c.ToolNameSeparator = "." }, "toolNameSeparator", `"."`},
		{"separator empty", func(c *Config) { c.ToolNameSeparator = "" }, "toolNameSeparator", `""`},
		{"separator long", func(c *Config) { c.ToolNameSeparator = "____" }, "toolNameSeparator", `"____"`},
		{"separator space", func(c *Config) { c.ToolNameSeparator = " " }, "toolNameSeparator", `" "`},
		{"separator unicode", func(c *Config) { c.ToolNameSeparator = "é" }, "toolNameSeparator", `"é"`},
		{"maxBodyBytes zero", func(c *Config) { c.Transport.MaxBodyBytes = 0 }, "transport.maxBodyBytes", "0"},
		{"maxBodyBytes huge", func(c *Config) { c.Transport.MaxBodyBytes = 1<<30 + 1 }, "transport.maxBodyBytes", "1073741825"},
		{"sessionIdleTimeoutMs", func(c *Config) { c.Transport.SessionIdleTimeoutMs = 999 }, "transport.sessionIdleTimeoutMs", "999"},
		{"sessionIdleTimeoutMs overflow", func(c *Config) { c.Transport.SessionIdleTimeoutMs = math.MaxInt64 }, "transport.sessionIdleTimeoutMs", "9223372036854775807"},
		{"keepAliveIntervalMs", func(c *Config) { c.Transport.KeepAliveIntervalMs = 99 }, "transport.keepAliveIntervalMs", "99"},
		{"eventLogSize zero", func(c *Config) { c.Transport.EventLogSize = 0 }, "transport.eventLogSize", "0"},
		{"eventLogSize huge", func(c *Config) { c.Transport.EventLogSize = 1_000_001 }, "transport.eventLogSize", "1000001"},
		{"readHeaderTimeoutMs", func(c *Config) { c.Transport.ReadHeaderTimeoutMs = -1 }, "transport.readHeaderTimeoutMs", "-1"},
		{"readBodyTimeoutMs", func(c *Config) { c.Transport.ReadBodyTimeoutMs = 99 }, "transport.readBodyTimeoutMs", "99"},
		{"writeTimeoutMs", func(c *Config) { c.Transport.WriteTimeoutMs = 0 }, "transport.writeTimeoutMs", "0"},
		{"pageSize zero", func(c *Config) { c.Transport.PageSize = 0 }, "transport.pageSize", "0"},
		{"pageSize huge", func(c *Config) { c.Transport.PageSize = 1001 }, "transport.pageSize", "1001"},
		{"maxSessions", func(c *Config) { c.Transport.MaxSessions = 0 }, "transport.maxSessions", "0"},
		{"maxSessionsPerPrincipal over maxSessions", func(c *Config) { c.Transport.MaxSessionsPerPrincipal = 10_001 }, "transport.maxSessionsPerPrincipal", "10001"},
		{"maxSessionsPerTenant", func(c *Config) { c.Transport.MaxSessionsPerTenant = -1 }, "transport.maxSessionsPerTenant", "-1"},
		{"maxClientInfoBytes", func(c *Config) { c.Transport.MaxClientInfoBytes = 63 }, "transport.maxClientInfoBytes", "63"},
		{"maxCapabilitiesBytes", func(c *Config) { c.Transport.MaxCapabilitiesBytes = 0 }, "transport.maxCapabilitiesBytes", "0"},
		{"maxInitializeDepth", func(c *Config) { c.Transport.MaxInitializeDepth = 1001 }, "transport.maxInitializeDepth", "1001"},
		{"maxClientResponseBytes", func(c *Config) { c.Transport.MaxClientResponseBytes = 1<<30 + 1 }, "transport.maxClientResponseBytes", "1073741825"},
		{"maxConnections zero", func(c *Config) { c.Transport.MaxConnections = 0 }, "transport.maxConnections", "0"},
		{"shutdownGraceMs", func(c *Config) { c.ShutdownGraceMs = -1 }, "shutdownGraceMs", "-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want a *FieldError", err)
			}
			if fe.Key != tc.key {
				t.Errorf("FieldError.Key = %q, want %q", fe.Key, tc.key)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tc.key+": ") || !strings.Contains(msg, tc.value) || !strings.Contains(msg, "want ") {
				t.Errorf("Validate() = %q, want it to start with %q and contain value %s and what is allowed", msg, tc.key+": ", tc.value)
			}
		})
	}
}

func TestValidateAcceptsEdges(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
	}{
		{"listen all interfaces", func(c *Config) { c.Listen = ":8080" }},
		{"listen port 0", func(c *Config) { c.Listen = "127.0.0.1:0" }},
		{"listen ipv6", func(c *Config) { c.Listen = "[::1]:65535" }},
		{"origins any", func(c *Config) { c.AllowedOrigins = []string{"*"} }},
		{"origins nil", func(c *Config) { c.AllowedOrigins = nil }},
		{"origins list", func(c *Config) {
			c.AllowedOrigins = []string{"https://example.com", "http://localhost:3000", "http://[::1]:8080", "HTTPS://App.Example.com/"}
		}},
		{"log levels", func(c *Config) { c.LogLevel = "trace" }},
		{"console", func(c *Config) { c.LogFormat = "console" }},
		{"separator 3 chars", func(c *Config) { c.ToolNameSeparator = "_-9" }},
		{"minimums", func(c *Config) {
			c.Transport = Transport{MaxBodyBytes: 1, SessionIdleTimeoutMs: 1000, KeepAliveIntervalMs: 100,
				EventLogSize: 1, ReadHeaderTimeoutMs: 100, ReadBodyTimeoutMs: 100, WriteTimeoutMs: 100, PageSize: 1, MaxSessions: 1,
				MaxClientInfoBytes: 64, MaxCapabilitiesBytes: 64, MaxInitializeDepth: 2, MaxClientResponseBytes: 1024, MaxConnections: 1}
			c.ShutdownGraceMs = 0
		}},
		{"maximums", func(c *Config) {
			c.Transport.MaxBodyBytes = 1 << 30
			c.Transport.EventLogSize = 1_000_000
			c.Transport.PageSize = 1000
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mutate(&c)
			if err := c.Validate(); err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
		})
	}
}

// Validate reports every problem, not just the first.
func TestValidateReportsAll(t *testing.T) {
	c := Default()
	c.Listen = "nope"
	c.LogLevel = "loud"
	c.Transport.PageSize = 0
	err := c.Validate()
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("Validate() = %v, want a joined error", err)
	}
	if n := len(joined.Unwrap()); n != 3 {
		t.Errorf("Validate() joined %d errors, want 3: %v", n, err)
	}
	for _, key := range []string{"listen", "logLevel", "transport.pageSize"} {
		if !strings.Contains(err.Error(), key+": ") {
			t.Errorf("Validate() = %q, want it to name %s", err, key)
		}
	}
}

// An error for a key that env or flags also set says so, because the
// operator may never have written the YAML key.
func TestFieldErrorNamesOverrides(t *testing.T) {
	c := Default()
	c.Listen = "bad"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "MCP_ADDR") || !strings.Contains(err.Error(), "-addr") {
		t.Errorf("Validate() = %v, want it to mention MCP_ADDR and -addr", err)
	}
}

// The per-principal share of client sessions: the configured cap, or by
// default a tenth of maxSessions with authentication on and none in auth
// mode none, where every caller is one principal.
func TestSessionsPerPrincipal(t *testing.T) {
	for _, tc := range []struct {
		mode             string
		maxSessions, set int
		want             int
	}{
		{auth.ModeNone, 10_000, 0, 0},
		{auth.ModeAPIKey, 10_000, 0, 1000},
		{auth.ModeOAuth, 100, 0, 10},
		{auth.ModeAPIKey, 5, 0, 1},
		{auth.ModeAPIKey, 10_000, 50, 50},
		{auth.ModeNone, 10_000, 50, 50},
	} {
		c := Default()
		c.Auth.Mode, c.Transport.MaxSessions, c.Transport.MaxSessionsPerPrincipal = tc.mode, tc.maxSessions, tc.set
		if got := c.SessionsPerPrincipal(); got != tc.want {
			t.Errorf("mode %s, maxSessions %d, maxSessionsPerPrincipal %d: %d, want %d", tc.mode, tc.maxSessions, tc.set, got, tc.want)
		}
	}
}

// The cap on one principal's modern requests in flight: the configured
// one, or by default 64 with authentication on and none in auth mode
// none.
func TestRequestsPerPrincipal(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		set, want int
	}{
		{auth.ModeNone, 0, 0},
		{auth.ModeAPIKey, 0, 64},
		{auth.ModeOAuth, 0, 64},
		{auth.ModeAPIKey, 8, 8},
		{auth.ModeNone, 8, 8},
	} {
		c := Default()
		c.Auth.Mode, c.Transport.MaxRequestsPerPrincipal = tc.mode, tc.set
		if got := c.RequestsPerPrincipal(); got != tc.want {
			t.Errorf("mode %s, maxRequestsPerPrincipal %d: %d, want %d", tc.mode, tc.set, got, tc.want)
		}
	}
}
