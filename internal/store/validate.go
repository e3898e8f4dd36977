package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Both implementations validate through these functions before touching
// data, so bad input gets the same *FieldError from either store.

// CheckName validates a namespace, key, id or tag-like identifier: not
// empty, valid UTF-8, at most max bytes, no control characters.
func CheckName(field, s string, max int) error {
	switch {
	case s == "":
		return Invalid(field, "must not be empty")
	case len(s) > max:
		return Invalid(field, "is %d bytes long; the limit is %d", len(s), max)
	case !utf8.ValidString(s):
		return Invalid(field, "is not valid UTF-8")
	}
	for i, r := range s {
		if unicode.IsControl(r) {
			return Invalid(field, "contains a control character (U+%04X) at byte %d", r, i)
		}
	}
	return nil
}

// CheckText validates free text (task, description, summary): valid
// UTF-8 of at most max bytes; required says whether it may be empty.
func CheckText(field, s string, max int, required bool) error {
	switch {
	case s == "" && required:
		return Invalid(field, "must not be empty")
	case len(s) > max:
		return Invalid(field, "is %d bytes long; the limit is %d", len(s), max)
	case !utf8.ValidString(s):
		return Invalid(field, "is not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return Invalid(field, "contains a NUL character")
	}
	return nil
}

// NormalizeTags validates tags and returns them sorted without
// duplicates, never nil.
func NormalizeTags(field string, tags []string) ([]string, error) {
	if len(tags) > MaxTags {
		return nil, Invalid(field, "has %d entries; the limit is %d", len(tags), MaxTags)
	}
	out := make([]string, 0, len(tags))
	for i, t := range tags {
		if err := CheckName(field+"["+itoa(i)+"]", t, MaxTagLen); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// CheckValue validates a memory value, one JSON value within lim, and
// returns its canonical form, which is what the stores keep (see
// canonical.go).
func CheckValue(v json.RawMessage, lim JSONLimits) (json.RawMessage, error) {
	return canonicalJSON("value", v, lim)
}

// CheckObject validates optional metadata: empty, null or a JSON object
// within lim. It returns nil for empty or null, the object's canonical
// form otherwise.
func CheckObject(field string, v json.RawMessage, lim JSONLimits) (json.RawMessage, error) {
	t := bytes.TrimSpace(v)
	if len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	if t[0] != '{' {
		return nil, Invalid(field, "must be a JSON object")
	}
	return canonicalJSON(field, t, lim)
}

// CheckLimit validates a page size: 0 means def, otherwise 1..max.
func CheckLimit(limit, def, max int) (int, error) {
	switch {
	case limit == 0:
		return def, nil
	case limit < 0 || limit > max:
		return 0, Invalid("limit", "must be between 1 and %d, got %d", max, limit)
	}
	return limit, nil
}

// Now is the stores' clock reading: UTC, truncated to the microsecond
// that PostgreSQL keeps, so both stores return the same timestamps.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// MemoryID is a memory entry's id in a Pos: namespace and key cannot
// contain control characters, so NUL separates them unambiguously.
func MemoryID(namespace, key string) string { return namespace + "\x00" + key }

// SplitMemoryID is the inverse of MemoryID.
func SplitMemoryID(id string) (namespace, key string) {
	namespace, key, _ = strings.Cut(id, "\x00")
	return namespace, key
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}

// MaxDisplayNameLen bounds an agent's display name (bytes).
const MaxDisplayNameLen = 256

// NormalizeAgent validates the fields of an agent to register (not its
// id, which each store checks with its tenant) and returns it with
// capabilities and tags normalized and metadata compacted to nil or an
// object. Both stores register through it, so they accept and refuse the
// same agents.
func NormalizeAgent(a Agent, lim JSONLimits) (Agent, error) {
	if err := CheckText("description", a.Description, MaxTextLen, true); err != nil {
		return Agent{}, err
	}
	if err := CheckText("displayName", a.DisplayName, MaxDisplayNameLen, false); err != nil {
		return Agent{}, err
	}
	var err error
	if a.Capabilities, err = NormalizeTags("capabilities", a.Capabilities); err != nil {
		return Agent{}, err
	}
	if a.Tags, err = NormalizeTags("tags", a.Tags); err != nil {
		return Agent{}, err
	}
	if a.Metadata, err = CheckObject("metadata", a.Metadata, lim); err != nil {
		return Agent{}, err
	}
	return a, nil
}

// Bounds of an upstream registration (bytes).
const (
	MaxUpstreamIDLen     = 64
	MaxUpstreamConfigLen = 64 << 10
)

// CheckUpstreamID validates an upstream's id.
func CheckUpstreamID(id string) error { return CheckName("id", id, MaxUpstreamIDLen) }

// CheckUpstreamConfig validates an upstream's config, which unlike
// metadata is required, and returns its canonical form. It is bounded by
// MaxUpstreamConfigLen, and otherwise by o's limits.
func CheckUpstreamConfig(config json.RawMessage, o Options) (json.RawMessage, error) {
	c, err := CheckObject("config", config, o.jsonLimits(MaxUpstreamConfigLen))
	if err == nil && c == nil {
		return nil, Invalid("config", "is required")
	}
	return c, err
}

// MaxTraceText bounds a trace's tool name, client session and error code
// (bytes): they are identifiers, and a trace is never worth more.
const MaxTraceText = 256

// CheckTraces is the rule both stores apply to a batch of traces before
// keeping any of it; the first trace that breaks it is named by its index
// in the error (traces[3].tool). The embedded store keeps traces in
// memory, so a trace it accepted must be no larger than one PostgreSQL
// accepts. Every write of the trace recorder checks a batch, so a trace
// that passes costs no allocation: the name is made for a failure only.
func CheckTraces(batch []Trace) error {
	for i := range batch {
		err := checkTrace(&batch[i])
		if err == nil {
			continue
		}
		var fe *FieldError
		if errors.As(err, &fe) {
			fe.Field = fmt.Sprintf("traces[%d].%s", i, fe.Field)
			return fe
		}
		return fmt.Errorf("traces[%d]: %w", i, err)
	}
	return nil
}

func checkTrace(t *Trace) error {
	if err := CheckName("tenant", t.Tenant, MaxIDLen); err != nil {
		return err
	}
	if err := CheckName("id", t.ID, MaxIDLen); err != nil {
		return err
	}
	if err := CheckText("tool", t.Tool, MaxTraceText, true); err != nil {
		return err
	}
	if err := CheckText("clientSession", t.ClientSession, MaxTraceText, false); err != nil {
		return err
	}
	if err := CheckText("errorCode", t.ErrorCode, MaxTraceText, false); err != nil {
		return err
	}
	if t.Status != TraceOK && t.Status != TraceError {
		return Invalid("status", "must be %q or %q, got %q", TraceOK, TraceError, t.Status)
	}
	if t.OtelTraceID != "" && !IsOtelTraceID(t.OtelTraceID) {
		return Invalid("otelTraceId", "must be 32 lower-case hex digits, not all zero")
	}
	return nil
}

// IsOtelTraceID reports whether id is an OpenTelemetry trace id as W3C
// Trace Context writes it: 32 lower-case hex digits, not all zero.
func IsOtelTraceID(id string) bool {
	if len(id) != 32 || strings.Count(id, "0") == 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
