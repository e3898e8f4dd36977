package protocol

import "slices"

// Legacy protocol revisions served through initialize, newest first.
// 2026-07-28 (stateless, no initialize) is a separate era, checked per
// request (modern.go; docs/adr/0040-protocol-versions.md).
const (
	Version20251125 = "2025-11-25"
	Version20250618 = "2025-06-18"
	Version20250326 = "2025-03-26"

	LatestVersion = Version20251125
	// FallbackVersion is assumed when a request carries no
	// MCP-Protocol-Version header and the version is not otherwise known
	// (basic/transports, "Protocol Version Header").
	FallbackVersion = Version20250326
)

var supportedVersions = [...]string{Version20251125, Version20250618, Version20250326}

// SupportedVersions returns the served revisions, newest first, as a new
// slice the caller may keep or change.
func SupportedVersions() []string { return append([]string(nil), supportedVersions[:]...) }

// IsSupported reports whether v is a served revision.
func IsSupported(v string) bool { return slices.Contains(supportedVersions[:], v) }

// Negotiate picks the version to answer initialize with: the client's own if
// served, else the latest (basic/lifecycle: "MUST respond with the same
// version" if supported, otherwise "another protocol version it supports").
func Negotiate(requested string) string {
	if IsSupported(requested) {
		return requested
	}
	return LatestVersion
}

// HasPrimingEvents reports whether SSE streams for v start with a priming
// event (SEP-1699, 2025-11-25). Older clients fail on an event with empty
// data, so they must not get one.
func HasPrimingEvents(v string) bool {
	// Versions from 2025-11-25 on; ISO dates of served versions order as
	// strings, but an unknown string must not qualify.
	return IsSupported(v) && v >= Version20251125
}
