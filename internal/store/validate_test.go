package store

import "testing"

// An OpenTelemetry trace id is what W3C Trace Context writes: 32
// lower-case hex digits, not all zero (the invalid trace id).
func TestIsOtelTraceID(t *testing.T) {
	for id, want := range map[string]bool{
		"4bf92f3577b34da6a3ce929d0e0e4736":  true,
		"4BF92F3577B34DA6A3CE929D0E0E4736":  false,
		"00000000000000000000000000000000":  false,
		"4bf92f3577b34da6a3ce929d0e0e473":   false,
		"4bf92f3577b34da6a3ce929d0e0e47366": false,
		"4bf92f3577b34da6a3ce929d0e0e473g":  false,
		"":                                  false,
	} {
		if got := IsOtelTraceID(id); got != want {
			t.Errorf("IsOtelTraceID(%q) = %v, want %v", id, got, want)
		}
	}
}
