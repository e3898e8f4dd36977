package response

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// minResponseBytes is the smallest MaxResponseBytes Limits.Validate accepts:
// a failure envelope with a one-character message, and the size fallback of
// a success, always fit in it (INV-MCP-RESP-003 can always be met).
const minResponseBytes = 1024

// Limits bound a tool result (the "response" configuration section).
type Limits struct {
	// MaxResponseBytes bounds the encoded CallToolResult (INV-MCP-RESP-003).
	MaxResponseBytes int
	// MaxListItems bounds every JSON array in the data; a longer one becomes
	// a list object {items, total, limit, offset, hasMore}.
	MaxListItems int
	// MaxStringLength bounds every JSON string value in the data, in
	// characters (runes); a longer one is cut and ends with TruncationSuffix.
	MaxStringLength int
	// TruncationSuffix ends a cut string. It may be empty.
	TruncationSuffix string
}

// DefaultLimits returns the contract defaults: 1 MiB, 100 items, 10,000
// characters, "... [truncated]".
func DefaultLimits() Limits {
	return Limits{
		MaxResponseBytes: 1 << 20,
		MaxListItems:     100,
		MaxStringLength:  10_000,
		TruncationSuffix: "... [truncated]",
	}
}

// Validate reports every invalid field, naming it by its configuration key.
func (l Limits) Validate() error {
	var errs []error
	if l.MaxResponseBytes < minResponseBytes {
		errs = append(errs, fmt.Errorf("response.maxResponseBytes: must be at least %d so that an error envelope always fits, got %d",
			minResponseBytes, l.MaxResponseBytes))
	}
	if l.MaxListItems < 1 {
		errs = append(errs, fmt.Errorf("response.maxListItems: must be positive, got %d", l.MaxListItems))
	}
	if !utf8.ValidString(l.TruncationSuffix) {
		errs = append(errs, errors.New("response.truncationSuffix: must be valid UTF-8"))
	}
	if n := utf8.RuneCountInString(l.TruncationSuffix); l.MaxStringLength < 1 {
		errs = append(errs, fmt.Errorf("response.maxStringLength: must be positive, got %d", l.MaxStringLength))
	} else if l.MaxStringLength <= n {
		errs = append(errs, fmt.Errorf("response.maxStringLength: must exceed the length of response.truncationSuffix (%d characters), got %d",
			n, l.MaxStringLength))
	}
	return errors.Join(errs...)
}

// normalized returns limits Success and Failure can rely on. Configuration
// is validated at start-up; this only keeps a caller that skipped Validate
// from breaking the invariants. The zero Limits is DefaultLimits(). Otherwise
// a non-positive field takes its default, MaxResponseBytes is raised to
// minResponseBytes, an invalid suffix has its bad bytes replaced by U+FFFD
// and MaxStringLength is raised to one more than the suffix's length.
func (l Limits) normalized() Limits {
	if l == (Limits{}) {
		return DefaultLimits()
	}
	d := DefaultLimits()
	switch {
	case l.MaxResponseBytes <= 0:
		l.MaxResponseBytes = d.MaxResponseBytes
	case l.MaxResponseBytes < minResponseBytes:
		l.MaxResponseBytes = minResponseBytes
	}
	if l.MaxListItems <= 0 {
		l.MaxListItems = d.MaxListItems
	}
	if l.MaxStringLength <= 0 {
		l.MaxStringLength = d.MaxStringLength
	}
	if !utf8.ValidString(l.TruncationSuffix) {
		l.TruncationSuffix = strings.ToValidUTF8(l.TruncationSuffix, "\uFFFD")
	}
	if n := utf8.RuneCountInString(l.TruncationSuffix); l.MaxStringLength <= n {
		l.MaxStringLength = n + 1
	}
	return l
}
