package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// Exposed tool names must satisfy ^[a-zA-Z0-9_-]{1,64}$: the major model
// APIs reject anything else, dots included (DESIGN.md, Tool names).
const maxExposedName = 64

var (
	segmentPattern   = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	separatorPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,3}$`)
)

// validCanonical checks a dotted canonical name.
func validCanonical(name string) error {
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

// ExposedName joins the canonical segments with sep. A name longer than 64
// characters keeps its first part and ends with a stable hash of the whole
// canonical name, so it stays unique and never changes between restarts.
func ExposedName(canonical, sep string) string {
	name := strings.ReplaceAll(canonical, ".", sep)
	if len(name) <= maxExposedName {
		return name
	}
	sum := sha256.Sum256([]byte(canonical))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:maxExposedName-len(suffix)] + suffix
}
