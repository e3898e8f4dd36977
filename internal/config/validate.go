package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
)

// maxDurationMs is the largest millisecond count that still fits in a
// time.Duration (about 292 years). Bounding every *Ms key by it is what makes
// the duration methods overflow-free.
const maxDurationMs = math.MaxInt64 / int64(time.Millisecond)

// maxBodyBytes is the largest accepted transport.maxBodyBytes. A body limit
// above 1 GiB is no limit at all for a JSON-RPC endpoint.
const maxBodyBytes = 1 << 30

// A FieldError reports one invalid configuration value. Validate returns one
// per problem, joined with errors.Join; use errors.As to inspect them.
type FieldError struct {
	// Key is the camelCase dotted YAML path, e.g. "transport.pageSize", with
	// a list index for list items: "allowedOrigins[2]".
	Key string
	// Value is the rejected value.
	Value any
	// Want says what would have been accepted.
	Want string
}

func (e *FieldError) Error() string {
	v := fmt.Sprint(e.Value)
	if s, ok := e.Value.(string); ok {
		v = strconv.Quote(s)
	}
	msg := fmt.Sprintf("%s: invalid value %s: want %s", e.Key, v, e.Want)
	if e.Value == nil {
		// Want carries the whole reason (a value that must not be echoed,
		// or one already quoted in it).
		msg = e.Key + ": " + e.Want
	}
	// The key is named as in YAML, but the value may have come from the
	// environment or a flag; say which other names set it.
	if alt := overrides(e.Key); alt != "" {
		msg += " (also set by " + alt + ")"
	}
	return msg
}

// overrides names the environment variables and flags that set key.
func overrides(key string) string {
	switch {
	case key == "listen":
		return EnvAddr + ", -" + flagAddr
	case key == "allowedOrigins" || strings.HasPrefix(key, "allowedOrigins["):
		return EnvAllowedOrigins
	case key == "logLevel":
		return EnvLogLevel + ", -" + flagLogLevel
	case key == "logFormat":
		return EnvLogFormat
	case key == "databaseURL":
		return EnvDatabaseURL
	case key == "redisURL":
		return EnvRedisURL
	case key == "admin.token":
		return EnvAdminToken
	case key == "auth.mode":
		return EnvAuthMode
	case key == "tls":
		return EnvTLSCertFile + ", " + EnvTLSKeyFile
	}
	return ""
}

// Validate reports every invalid value in c, not just the first, so an
// operator fixes a bad file in one round trip. The result is nil or an
// errors.Join of *FieldError values.
func (c Config) Validate() error {
	var errs []error
	bad := func(key string, value any, want string) {
		errs = append(errs, &FieldError{Key: key, Value: value, Want: want})
	}
	intRange := func(key string, v, lo, hi int64, want string) {
		if v < lo || v > hi {
			bad(key, v, want)
		}
	}

	if !validListen(c.Listen) {
		bad("listen", c.Listen, "host:port with a numeric port 0-65535, e.g. 127.0.0.1:8080 or :8080")
	}
	validateOrigins(c.AllowedOrigins, bad)
	c.Telemetry.validate(bad)
	switch c.LogLevel {
	case "trace", "debug", "info", "warn", "error":
	default:
		bad("logLevel", c.LogLevel, "one of trace, debug, info, warn, error")
	}
	switch c.LogFormat {
	case "json", "console":
	default:
		bad("logFormat", c.LogFormat, "json or console")
	}
	if !validSeparator(c.ToolNameSeparator) {
		// The exposed name must still match ^[a-zA-Z0-9_-]{1,64}$, which
		// major model APIs require of tool names; "." is the canonical
		// separator and so never allowed here.
		bad("toolNameSeparator", c.ToolNameSeparator, "1 to 3 characters from [A-Za-z0-9_-]")
	}

	t := c.Transport
	intRange("transport.maxBodyBytes", t.MaxBodyBytes, 1, maxBodyBytes,
		fmt.Sprintf("1 to %d (1 GiB)", maxBodyBytes))
	intRange("transport.sessionIdleTimeoutMs", t.SessionIdleTimeoutMs, 1000, maxDurationMs,
		fmt.Sprintf("1000 to %d milliseconds", maxDurationMs))
	intRange("transport.keepAliveIntervalMs", t.KeepAliveIntervalMs, 100, maxDurationMs,
		fmt.Sprintf("100 to %d milliseconds", maxDurationMs))
	intRange("transport.eventLogSize", int64(t.EventLogSize), 1, 1_000_000, "1 to 1000000")
	intRange("transport.readHeaderTimeoutMs", t.ReadHeaderTimeoutMs, 100, maxDurationMs,
		fmt.Sprintf("100 to %d milliseconds", maxDurationMs))
	intRange("transport.readBodyTimeoutMs", t.ReadBodyTimeoutMs, 100, maxDurationMs,
		fmt.Sprintf("100 to %d milliseconds", maxDurationMs))
	intRange("transport.writeTimeoutMs", t.WriteTimeoutMs, 100, maxDurationMs,
		fmt.Sprintf("100 to %d milliseconds", maxDurationMs))
	intRange("transport.pageSize", int64(t.PageSize), 1, 1000, "1 to 1000")
	intRange("transport.maxSessions", int64(t.MaxSessions), 1, math.MaxInt64, "at least 1")
	intRange("transport.maxStreamsPerSession", int64(t.MaxStreamsPerSession), 0, 1024, "0 (no cap) to 1024")
	intRange("transport.maxRequestsPerPrincipal", int64(t.MaxRequestsPerPrincipal), 0, 1_000_000, "0 (the default) to 1000000")
	intRange("transport.maxListensPerPrincipal", int64(t.MaxListensPerPrincipal), 0, 1_000_000, "0 (the default) to 1000000")
	intRange("transport.maxSessionsPerPrincipal", int64(t.MaxSessionsPerPrincipal), 0, int64(t.MaxSessions),
		"0 (a tenth of transport.maxSessions with auth on, no cap in auth mode none) to transport.maxSessions")
	intRange("transport.maxSessionsPerTenant", int64(t.MaxSessionsPerTenant), 0, math.MaxInt64, "0 (no cap) or more")
	// The body limit applies first, so a bound above it is no error.
	intRange("transport.maxClientInfoBytes", int64(t.MaxClientInfoBytes), 64, maxBodyBytes, fmt.Sprintf("64 to %d", maxBodyBytes))
	intRange("transport.maxCapabilitiesBytes", int64(t.MaxCapabilitiesBytes), 64, maxBodyBytes, fmt.Sprintf("64 to %d", maxBodyBytes))
	intRange("transport.maxInitializeDepth", int64(t.MaxInitializeDepth), 2, 1000, "2 to 1000")
	intRange("transport.maxClientResponseBytes", int64(t.MaxClientResponseBytes), 1024, maxBodyBytes, fmt.Sprintf("1024 to %d", maxBodyBytes))
	intRange("transport.maxConnections", int64(t.MaxConnections), 1, 1_000_000, "1 to 1000000")
	intRange("shutdownGraceMs", c.ShutdownGraceMs, 0, maxDurationMs,
		fmt.Sprintf("0 to %d milliseconds", maxDurationMs))

	errs = append(errs, c.validateRuntime()...)
	errs = append(errs, c.validateStorage(bad, intRange)...)
	if err := c.StateSync.validate(); err != nil {
		errs = append(errs, err)
	}
	c.validateFederation(bad, intRange)
	errs = append(errs, c.validateRateLimits()...)
	c.validateTLS(bad, intRange)
	c.validateRequestState(bad, intRange)
	if err := c.Auth.Validate(); err != nil {
		var fe *auth.FieldError
		if errors.As(err, &fe) {
			// The reason never echoes a value: hashes and URLs with
			// credentials stay out of logs.
			bad("auth."+fe.Field, nil, fe.Reason)
		} else {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validListen accepts what net.Listen("tcp", addr) accepts, minus named
// ports, which would make the port depend on /etc/services.
func validListen(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && validPort(port, 0)
}

// validPort reports whether p is a decimal port number from min to 65535.
// It insists on digits because strconv.Atoi also takes "+80" and "-0".
func validPort(p string, min int) bool {
	if len(p) == 0 || len(p) > 5 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	n, _ := strconv.Atoi(p)
	return n >= min && n <= 65535
}

// validSeparator reports whether sep is 1 to 3 characters of [A-Za-z0-9_-].
func validSeparator(sep string) bool {
	if len(sep) == 0 || len(sep) > 3 {
		return false
	}
	for _, r := range sep {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

const originWant = `an origin scheme://host[:port] with scheme http or https and no path, query or fragment, or the single value "*"`

// validateOrigins checks each entry on its own, and that "*" is not mixed
// with explicit origins: a list holding both is a mistake either way.
func validateOrigins(origins []string, bad func(key string, value any, want string)) {
	for i, o := range origins {
		key := fmt.Sprintf("allowedOrigins[%d]", i)
		if o == "*" {
			if len(origins) > 1 {
				bad(key, o, `"*" alone: it already allows every origin`)
			}
			continue
		}
		if !validOrigin(o) {
			bad(key, o, originWant)
		}
	}
}

// validOrigin reports whether o is a serialized origin (RFC 6454 section
// 6.1), the form of the Origin header, tolerating one trailing "/" because
// that is what people paste from a browser's address bar.
func validOrigin(o string) bool {
	o = strings.TrimSuffix(o, "/")
	// url.Parse accepts an empty "?" or "#" without recording it.
	if o == "" || strings.ContainsAny(o, "?#") {
		return false
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if u.Opaque != "" || u.User != nil || u.Path != "" || u.RawPath != "" {
		return false
	}
	host := u.Hostname()
	// Browsers never send a wildcard; "https://*.example.com" would only
	// ever match itself, which is surely not what was meant.
	if host == "" || strings.Contains(host, "*") {
		return false
	}
	// An origin may omit the port, but "host:" with an empty port is a typo.
	if p := u.Port(); p != "" || strings.HasSuffix(u.Host, ":") {
		return validPort(p, 1)
	}
	return true
}

// normalizeOrigin returns o in the form browsers send in the Origin header:
// lower case, no trailing "/". Load applies it only after Validate accepted
// o, so error messages quote what the operator wrote.
func normalizeOrigin(o string) string {
	if o == "*" {
		return o
	}
	return strings.ToLower(strings.TrimSuffix(o, "/"))
}
