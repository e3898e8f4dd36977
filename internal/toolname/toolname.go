// Package toolname holds the rules of tool names: a canonical name is
// dotted (memory.store, server-a.search), and clients see it exposed with
// the configured separator (toolNameSeparator) in place of the dots
// (memory_store). The registry, the guardrails and the federation all
// name tools this way, so the rules live below all three.
package toolname

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// Exposed tool names must satisfy ^[a-zA-Z0-9_-]{1,64}$: the major model
// APIs reject anything else, dots included (DESIGN.md, Tool names).
const maxExposed = 64

var (
	segmentPattern   = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	separatorPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,3}$`)
)

// ValidCanonical checks a dotted canonical name.
func ValidCanonical(name string) error {
	if name == "" {
		return fmt.Errorf("tool name is empty")
	}
	for _, seg := range strings.Split(name, ".") {
		if !segmentPattern.MatchString(seg) {
			return fmt.Errorf("tool name %q: each dot-separated segment must match [A-Za-z0-9_-]+", name)
		}
	}
	return nil
}

// ValidSeparator reports whether sep may join exposed names: 1 to 3
// characters from [A-Za-z0-9_-].
func ValidSeparator(sep string) bool { return separatorPattern.MatchString(sep) }

// Exposed joins the canonical segments with sep. A name longer than 64
// characters keeps its first part and ends with a stable hash of the whole
// canonical name, so it stays unique and never changes between restarts.
func Exposed(canonical, sep string) string {
	name := strings.ReplaceAll(canonical, ".", sep)
	if len(name) <= maxExposed {
		return name
	}
	sum := sha256.Sum256([]byte(canonical))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:maxExposed-len(suffix)] + suffix
}
