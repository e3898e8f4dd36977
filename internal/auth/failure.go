package auth

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error codes of RFC 6750 §3.1.
const (
	CodeInvalidRequest    = "invalid_request"
	CodeInvalidToken      = "invalid_token"
	CodeInsufficientScope = "insufficient_scope"
)

// Failure is a request that may not proceed: Status is 401 (no or bad
// credentials) or 403 (valid, but not enough scope). Code is "" when the
// request carried no credentials at all: RFC 6750 §3.1 says such a
// challenge SHOULD NOT carry an error code.
type Failure struct {
	Status      int
	Code        string
	Description string
	// RetryAfter, for a 503, is when to try again (zero: a second).
	RetryAfter time.Duration
	// scope, realm and metadata are the challenge's other parameters,
	// which the Authenticator fills: the scope it asks for (MCP
	// basic/authorization, "Scope Selection Strategy"), the realm and, in
	// oauth mode, resource_metadata.
	scope, realm, metadata string
}

// Challenge reports whether the failure is about the credentials (401 or
// 403, with WWW-Authenticate); otherwise the server could not check them
// (503), and the client should retry with the same ones.
func (f *Failure) Challenge() bool {
	return f.Status == http.StatusUnauthorized || f.Status == http.StatusForbidden
}

func (f *Failure) Error() string {
	if f.Code == "" {
		return f.Description
	}
	return f.Code + ": " + f.Description
}

// WWWAuthenticate is the header value to send with the failure (RFC 6750
// §3, RFC 9728 §5.1): Bearer with realm, resource_metadata, scope and,
// when the request carried a credential, error and error_description.
func (f *Failure) WWWAuthenticate() string {
	var b strings.Builder
	b.WriteString("Bearer")
	sep := " "
	param := func(name, value string) {
		if value == "" {
			return
		}
		b.WriteString(sep)
		b.WriteString(name)
		b.WriteString(`="`)
		b.WriteString(quoteEscape(value))
		b.WriteByte('"')
		sep = ", "
	}
	param("realm", f.realm)
	param("resource_metadata", f.metadata)
	param("scope", f.scope)
	if f.Code != "" { // RFC 6750 §3.1: no error attributes without credentials
		param("error", f.Code)
		param("error_description", f.Description)
	}
	return b.String()
}

// quoteEscape makes s safe inside a quoted-string: RFC 6750 limits
// error_description to printable ASCII without '"' and '\', so anything
// else becomes a space or is dropped.
func quoteEscape(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '"' || r == '\\':
			return '\''
		case r < 0x20 || r > 0x7e:
			return ' '
		}
		return r
	}, s)
}

// unauthorized and forbidden build the failures an authenticator returns.
func unauthorized(code, desc string) *Failure {
	return &Failure{Status: http.StatusUnauthorized, Code: code, Description: desc}
}

func forbidden(desc string) *Failure {
	return &Failure{Status: http.StatusForbidden, Code: CodeInsufficientScope, Description: desc}
}

// RetryAfterSeconds is the Retry-After header value of a 503: whole
// seconds, at least 1.
func (f *Failure) RetryAfterSeconds() string {
	return strconv.FormatInt(max(int64((f.RetryAfter+time.Second-1)/time.Second), 1), 10)
}
