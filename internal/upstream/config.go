package upstream

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Defaults for the optional fields of a Config.
const (
	DefaultConnectionTimeout = 5 * time.Second
	DefaultRequestTimeout    = 30 * time.Second
	DefaultMaxRetries        = 2
	DefaultCategory          = "execution"
)

// Bounds of the numeric fields.
const (
	MaxIDLen             = 32
	minTimeoutMs         = 100
	maxConnectionTimeout = 120_000
	maxRequestTimeout    = 600_000
	MaxRetriesLimit      = 10
	maxHeaders           = 32
	maxHeaderValueLen    = 8192
)

// idPattern: lower-case letters, digits and hyphens, starting with a letter
// or digit. The id is the first segment of every tool's canonical name
// (serverId.toolName), so it must be a valid name segment too.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Config is an upstream MCP server as declared in the YAML file
// (upstreams:) or through the admin API. Pointer fields tell an omitted
// value (the default applies) from an explicit one.
type Config struct {
	// ID names the server; it prefixes its tools' canonical names.
	ID string `yaml:"id" json:"id"`
	// URL is the server's Streamable HTTP endpoint (http or https).
	URL string `yaml:"url" json:"url"`
	// Enabled is true when omitted. A disabled server is never contacted.
	Enabled *bool `yaml:"enabled" json:"enabled,omitempty"`
	// Headers are sent on every request to the server (credentials for
	// it, typically). The client's own credentials are never forwarded.
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// ConnectionTimeoutMs bounds connecting and the initialize handshake.
	ConnectionTimeoutMs int64 `yaml:"connectionTimeoutMs" json:"connectionTimeoutMs,omitempty"`
	// RequestTimeoutMs bounds each request after initialize (tools/list,
	// tools/call, ping).
	RequestTimeoutMs int64 `yaml:"requestTimeoutMs" json:"requestTimeoutMs,omitempty"`
	// MaxRetries is how many times a failed connect, discovery or
	// retry-safe call is tried again (maxRetries+1 attempts in all).
	MaxRetries *int `yaml:"maxRetries" json:"maxRetries,omitempty"`
	// Category is the timeout category of the server's tools: query,
	// mutation, scan or execution (INV-MCP-TIMEOUT-002).
	Category string `yaml:"category" json:"category,omitempty"`
}

// FieldError is an invalid Config field; Field is its JSON/YAML name.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// IsEnabled reports whether the server is enabled (true when omitted).
func (c Config) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// ConnectionTimeout is ConnectionTimeoutMs, or its default.
func (c Config) ConnectionTimeout() time.Duration {
	if c.ConnectionTimeoutMs <= 0 {
		return DefaultConnectionTimeout
	}
	return time.Duration(c.ConnectionTimeoutMs) * time.Millisecond
}

// RequestTimeout is RequestTimeoutMs, or its default.
func (c Config) RequestTimeout() time.Duration {
	if c.RequestTimeoutMs <= 0 {
		return DefaultRequestTimeout
	}
	return time.Duration(c.RequestTimeoutMs) * time.Millisecond
}

// Retries is MaxRetries, or its default.
func (c Config) Retries() int {
	if c.MaxRetries == nil {
		return DefaultMaxRetries
	}
	return *c.MaxRetries
}

// TimeoutCategory is Category, or its default.
func (c Config) TimeoutCategory() string {
	if c.Category == "" {
		return DefaultCategory
	}
	return c.Category
}

// Normalized returns c with every default filled in, the form the admin
// API shows and the store keeps.
func (c Config) Normalized() Config {
	enabled, retries := c.IsEnabled(), c.Retries()
	c.Enabled, c.MaxRetries = &enabled, &retries
	c.ConnectionTimeoutMs = c.ConnectionTimeout().Milliseconds()
	c.RequestTimeoutMs = c.RequestTimeout().Milliseconds()
	c.Category = c.TimeoutCategory()
	if c.Headers == nil {
		c.Headers = map[string]string{}
	}
	return c
}

// reservedID reports the namespaces of the built-in tools (memory.store,
// runtime.info, ...). An upstream with one of these ids would have its
// tools refused one by one by the registry; it is refused up front, with
// a message that says why.
func reservedID(id string) bool {
	switch id {
	case "agent", "memory", "runtime", "session", "trace":
		return true
	}
	return false
}

// reserved reports headers the MCP client sets itself; a configured value
// would break the protocol or smuggle a second session.
func reserved(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Accept", "Content-Type", "Content-Length", "Host", "Connection", "Transfer-Encoding",
		"Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id":
		return true
	}
	return false
}

// Validate checks every field and returns a *FieldError for the first bad
// one. Zero numeric fields and an empty category mean the default.
func (c Config) Validate() error {
	switch {
	case c.ID == "":
		return invalid("id", "is required")
	case len(c.ID) > MaxIDLen:
		return invalid("id", "is %d characters; the limit is %d", len(c.ID), MaxIDLen)
	case !idPattern.MatchString(c.ID):
		return invalid("id", "%q: use lower-case letters, digits and '-', starting with a letter or digit", c.ID)
	case reservedID(c.ID):
		return invalid("id", "%q is the namespace of mcp-runtime's own tools (agent, memory, runtime, session and trace are reserved)", c.ID)
	}
	if err := validURL(c.URL); err != nil {
		return err
	}
	if len(c.Headers) > maxHeaders {
		return invalid("headers", "has %d entries; the limit is %d", len(c.Headers), maxHeaders)
	}
	for name, value := range c.Headers {
		field := "headers." + name
		switch {
		case !validHeaderName(name):
			return invalid(field, "is not a valid HTTP header name")
		case reserved(name):
			return invalid(field, "is set by the MCP client itself and cannot be configured")
		case len(value) > maxHeaderValueLen:
			return invalid(field, "value is %d bytes; the limit is %d", len(value), maxHeaderValueLen)
		case strings.ContainsAny(value, "\r\n\x00"):
			return invalid(field, "value contains a line break or NUL")
		}
	}
	if err := checkMs("connectionTimeoutMs", c.ConnectionTimeoutMs, maxConnectionTimeout); err != nil {
		return err
	}
	if err := checkMs("requestTimeoutMs", c.RequestTimeoutMs, maxRequestTimeout); err != nil {
		return err
	}
	if c.MaxRetries != nil && (*c.MaxRetries < 0 || *c.MaxRetries > MaxRetriesLimit) {
		return invalid("maxRetries", "is %d; use 0 to %d", *c.MaxRetries, MaxRetriesLimit)
	}
	switch c.Category {
	case "", "query", "mutation", "scan", "execution":
	default:
		return invalid("category", "%q: use query, mutation, scan or execution", c.Category)
	}
	return nil
}

func validURL(raw string) error {
	if raw == "" {
		return invalid("url", "is required")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return invalid("url", "is not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return invalid("url", "must be an http or https URL")
	case u.Host == "":
		return invalid("url", "has no host")
	case u.User != nil:
		return invalid("url", "must not carry credentials; put them in headers")
	case u.Fragment != "":
		return invalid("url", "must not have a fragment")
	}
	return nil
}

func checkMs(field string, v, maxMs int64) error {
	if v != 0 && (v < minTimeoutMs || v > maxMs) {
		return invalid(field, "is %d; use %d to %d (or omit it for the default)", v, minTimeoutMs, maxMs)
	}
	return nil
}

// validHeaderName: an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
