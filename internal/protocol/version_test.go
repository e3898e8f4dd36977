package protocol_test

import (
	"slices"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
)

func TestVersionNegotiation(t *testing.T) {
	tests := []struct {
		version   string
		supported bool
		negotiate string
		priming   bool
	}{
		{protocol.Version20251125, true, protocol.Version20251125, true},
		{protocol.Version20250618, true, protocol.Version20250618, false},
		{protocol.Version20250326, true, protocol.Version20250326, false},
		{"2024-11-05", false, protocol.LatestVersion, false},
		{"2026-07-28", false, protocol.LatestVersion, false}, // not served: no priming
		{"banana", false, protocol.LatestVersion, false},
		{"", false, protocol.LatestVersion, false},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			if got := protocol.IsSupported(tc.version); got != tc.supported {
				t.Errorf("IsSupported = %v, want %v", got, tc.supported)
			}
			if got := protocol.Negotiate(tc.version); got != tc.negotiate {
				t.Errorf("Negotiate = %q, want %q", got, tc.negotiate)
			}
			if got := protocol.HasPrimingEvents(tc.version); got != tc.priming {
				t.Errorf("HasPrimingEvents = %v, want %v", got, tc.priming)
			}
		})
	}
}

func TestSupportedVersions(t *testing.T) {
	got := protocol.SupportedVersions()
	want := []string{protocol.Version20251125, protocol.Version20250618, protocol.Version20250326}
	if !slices.Equal(got, want) {
		t.Fatalf("SupportedVersions = %v, want %v (newest first)", got, want)
	}
	if got[0] != protocol.LatestVersion {
		t.Errorf("LatestVersion %q is not the newest served version %q", protocol.LatestVersion, got[0])
	}
	if !protocol.IsSupported(protocol.FallbackVersion) {
		t.Errorf("FallbackVersion %q is not served", protocol.FallbackVersion)
	}
}

// TestSupportedVersionsNotAliased: the returned slice must not let a caller
// change what is served.
func TestSupportedVersionsNotAliased(t *testing.T) {
	got := protocol.SupportedVersions()
	saved := got[0]
	defer func() { got[0] = saved }()
	got[0] = "1999-01-01"
	if !protocol.IsSupported(protocol.Version20251125) || protocol.IsSupported("1999-01-01") {
		t.Fatal("writing to the slice from SupportedVersions changed the served versions")
	}
}
