package protocol

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"
)

// The modern era (2026-07-28 and later) is stateless: every request says
// which revision it speaks and what the client can do, in its params'
// _meta, and mirrors its method and name in headers (basic/index,
// basic/transports/streamable-http; schema/2026-07-28/schema.ts).
const Version20260728 = "2026-07-28"

// modernVersions are the revisions a modern request may name, newest
// first; the legacy ones are reached through initialize.
var modernVersions = [...]string{Version20260728}

// ModernVersions returns the revisions a modern request may name (the
// supportedVersions of server/discover and the data.supported of -32022),
// newest first, as a new slice.
func ModernVersions() []string { return append([]string(nil), modernVersions[:]...) }

// IsModernVersion reports whether v is a revision a modern request may
// name.
func IsModernVersion(v string) bool { return slices.Contains(modernVersions[:], v) }

// Methods and notifications of the modern era.
const (
	MethodServerDiscover      = "server/discover"
	MethodSubscriptionsListen = "subscriptions/listen"

	NotificationSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
)

// Keys of a modern message's _meta.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// Error codes the modern era adds (schema/2026-07-28/schema.ts); each is
// sent with HTTP 400.
const (
	CodeHeaderMismatch             = -32020
	CodeMissingClientCapability    = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// Headers a modern POST carries (basic/transports/streamable-http,
// "Standard Headers" and "Custom Headers").
const (
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderParamPrefix     = "Mcp-Param-"
)

// RemovedInModern reports whether method is one the modern era removed:
// a modern request for it is answered 404/-32601 (basic/versioning).
func RemovedInModern(method string) bool {
	switch method {
	case MethodInitialize, MethodPing, MethodLoggingSetLevel, MethodResourcesSubscribe, MethodResourcesUnsubscribe:
		return true
	}
	return false
}

// StatusError is a JSON-RPC error and the HTTP status a modern request's
// answer carries with it.
type StatusError struct {
	Status int
	*Error
}

func statusError(status, code int, format string, args ...any) *StatusError {
	return &StatusError{Status: status, Error: Errorf(code, format, args...)}
}

// ModernMeta is what a modern request says of itself in its params'
// _meta. The raw members alias the request's bytes.
type ModernMeta struct {
	ProtocolVersion    string
	ClientCapabilities json.RawMessage // an object; {} declares none
	ClientInfo         json.RawMessage // nil when not sent (it is optional)
	LogLevel           LoggingLevel    // "" when the client wants no log messages
	ProgressToken      json.RawMessage
	// Round: the params carry a retry's inputResponses or requestState
	// (basic/patterns/mrtr).
	Round bool
}

// HasCapability reports whether the request declares the client
// capability name (a member of clientCapabilities that is an object).
func (m ModernMeta) HasCapability(name string) bool {
	var v [1]json.RawMessage
	if LookupMembers(m.ClientCapabilities, []string{name}, v[:]) != nil {
		return false
	}
	return len(v[0]) > 0 && v[0][0] == '{'
}

// ModernParams is what one walk over a request's params finds for the
// modern era's checks: its _meta's members, and the member the method
// mirrors in Mcp-Name. A request's params hold its arguments, and are
// walked once for all of it rather than once for each question.
type ModernParams struct {
	meta [5]json.RawMessage // metaKeys' values; nil when absent
	// member is params.name or params.uri, as the method mirrors it in
	// Mcp-Name; ambiguous: another member differs from it only in case.
	member    json.RawMessage
	ambiguous bool
	// round: the params carry a retry's inputResponses or requestState
	// (basic/patterns/mrtr).
	round bool
}

// metaKeys are the _meta members CheckModern reads, in the order
// of ModernParams.meta.
var metaKeys = []string{MetaProtocolVersion, MetaClientCapabilities, MetaClientInfo, MetaLogLevel, "progressToken"}

// mirroredMember is the member of method's params its Mcp-Name header
// mirrors, "" for a method that has none.
func mirroredMember(method string) string {
	switch method {
	case MethodToolsCall, MethodPromptsGet:
		return "name"
	case MethodResourcesRead:
		return "uri"
	}
	return ""
}

// ScanModern walks the params (valid JSON) of a request of method.
func ScanModern(method string, params json.RawMessage) ModernParams {
	var p ModernParams
	if len(params) == 0 || params[0] != '{' {
		return p
	}
	member := mirroredMember(method)
	var meta json.RawMessage
	_ = eachMember(params, func(k string, v []byte) bool {
		switch {
		case k == "_meta":
			meta = v
		case k == "inputResponses", k == "requestState":
			p.round = true
		case member == "":
		case k == member:
			p.member = v
		case strings.EqualFold(k, member):
			p.ambiguous = true
		}
		return true
	})
	if len(meta) > 0 && meta[0] == '{' {
		_ = LookupMembers(meta, metaKeys, p.meta[:])
	}
	return p
}

// Modern reports whether the _meta names a protocol version: the request
// is then served statelessly, whatever else it carries (basic/versioning,
// "Dual-era").
func (p ModernParams) Modern() bool { return p.meta[0] != nil }

// CheckModern reads a modern request's _meta and checks its headers, in
// the order the specification and the conformance suite use: required
// _meta members (400/-32602), headers against the body (400/-32020),
// then the version (400/-32022 with data.supported and data.requested).
// Whether the method exists, and the capabilities it needs, are the
// caller's to check next. msg is a request, p what ScanModern found in
// its params (a request is modern when p.Modern(), or when its header
// names a modern version: the caller decides); header is its HTTP
// header.
func CheckModern(msg *Message, p ModernParams, header http.Header) (ModernMeta, *StatusError) {
	var m ModernMeta
	v := p.meta
	version, ok := StringValue(v[0])
	if !ok || version == "" {
		return m, statusError(http.StatusBadRequest, CodeInvalidParams, "invalid params: _meta[%q] must be the protocol version, a string", MetaProtocolVersion)
	}
	if len(v[1]) == 0 || v[1][0] != '{' {
		return m, statusError(http.StatusBadRequest, CodeInvalidParams, "invalid params: _meta[%q] must be an object (an empty one declares no capabilities)", MetaClientCapabilities)
	}
	m = ModernMeta{ProtocolVersion: version, ClientCapabilities: v[1], ProgressToken: v[4], Round: p.round}
	if len(v[2]) > 0 && string(v[2]) != "null" {
		m.ClientInfo = v[2]
	}
	if len(v[3]) > 0 && string(v[3]) != "null" {
		level, ok := StringValue(v[3])
		if !ok || !LoggingLevel(level).Valid() {
			return m, statusError(http.StatusBadRequest, CodeInvalidParams, "invalid params: _meta[%q] must be a logging level such as \"info\"", MetaLogLevel)
		}
		m.LogLevel = LoggingLevel(level)
	}
	if err := checkHeaders(msg, p, header, version); err != nil {
		return m, err
	}
	if !IsModernVersion(version) {
		data, _ := json.Marshal(struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		}{ModernVersions(), version})
		e := statusError(http.StatusBadRequest, CodeUnsupportedProtocolVersion, "unsupported protocol version %q; supported: %s", clip(version), strings.Join(ModernVersions(), ", "))
		e.Data = data
		return m, e
	}
	return m, nil
}

// checkHeaders compares the standard headers with the body
// (basic/transports/streamable-http, "Server Validation"). Each must be
// sent once: an intermediary reading another of several values would
// route on something else than what runs.
func checkHeaders(msg *Message, p ModernParams, header http.Header, version string) *StatusError {
	mismatch := func(format string, args ...any) *StatusError {
		return statusError(http.StatusBadRequest, CodeHeaderMismatch, "header mismatch: "+format, args...)
	}
	one := func(name, want string) *StatusError {
		switch values := header.Values(name); {
		case len(values) == 0 || values[0] == "":
			return mismatch("the %s header is required and must be %q", name, clip(want))
		case len(values) > 1:
			return mismatch("the %s header is sent %d times; send it once", name, len(values))
		case values[0] != want:
			return mismatch("%s header %q does not match the body's %q", name, clip(values[0]), clip(want))
		}
		return nil
	}
	if err := one(HeaderProtocolVersion, version); err != nil {
		return err
	}
	if err := one(HeaderMethod, msg.Method); err != nil {
		return err
	}
	member := mirroredMember(msg.Method)
	if member == "" {
		return nil
	}
	raw, ambiguous := p.member, p.ambiguous
	if ambiguous {
		return statusError(http.StatusBadRequest, CodeInvalidParams, "invalid params: params has a member that differs from %q only in case", member)
	}
	body, ok := StringValue(raw)
	if !ok {
		return statusError(http.StatusBadRequest, CodeInvalidParams, "invalid params: params.%s must be a string", member)
	}
	values := header.Values(HeaderName)
	switch {
	case len(values) == 0 || values[0] == "":
		return mismatch("the %s header is required on %s and must be params.%s", HeaderName, msg.Method, member)
	case len(values) > 1:
		return mismatch("the %s header is sent %d times; send it once", HeaderName, len(values))
	}
	got, err := DecodeHeaderValue(values[0])
	if err != nil {
		return mismatch("%s header: %v", HeaderName, err)
	}
	if got != body {
		return mismatch("%s header %q does not match params.%s %q", HeaderName, clip(got), member, clip(body))
	}
	return nil
}

// DecodeHeaderValue returns the value a Mcp-Name or Mcp-Param-* header
// carries: the Base64 sentinel form (=?base64?…?=) decoded, a plain value
// as it is if every character is one a header value may hold
// (basic/transports/streamable-http, "Value Encoding").
func DecodeHeaderValue(v string) (string, error) {
	const prefix, suffix = "=?base64?", "?="
	if strings.HasPrefix(v, prefix) && strings.HasSuffix(v, suffix) && len(v) >= len(prefix)+len(suffix) {
		b, err := base64.StdEncoding.DecodeString(v[len(prefix) : len(v)-len(suffix)])
		if err != nil || !utf8.Valid(b) {
			return "", fmt.Errorf("the Base64 value is not valid Base64 of UTF-8 text")
		}
		return string(b), nil
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return "", fmt.Errorf("the value holds a character a header may not (byte %#x at %d); send it Base64-encoded", c, i)
		}
	}
	return v, nil
}

// MissingCapability is the error for a request that needs client
// capabilities it did not declare: 400/-32021 with
// data.requiredCapabilities, e.g. {"sampling":{}}.
func MissingCapability(names ...string) *StatusError {
	req := make(map[string]struct{}, len(names))
	for _, n := range names {
		req[n] = struct{}{}
	}
	data, _ := json.Marshal(struct {
		Required map[string]struct{} `json:"requiredCapabilities"`
	}{req})
	e := statusError(http.StatusBadRequest, CodeMissingClientCapability, "the request needs client capabilities it did not declare: %s", strings.Join(names, ", "))
	e.Data = data
	return e
}

// clip bounds a value echoed in a message: it came from the client.
func clip(s string) string {
	const max = 128
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
