package store

import (
	"errors"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzDecodeCursor: a cursor is client input. Whatever arrives decodes to
// a position or to a *FieldError on "cursor", never a panic, and every
// cursor this server issues decodes back to the position it encodes.
func FuzzDecodeCursor(f *testing.F) {
	f.Add("memory", int64(0), "default", "key", "")
	f.Add("sessions", int64(1_700_000_000_123_456), "0193-id", "", "eyJrIjoic2Vzc2lvbnMifQ")
	f.Add("traces", int64(-5), "", "\x00", "%%%")
	f.Fuzz(func(t *testing.T, kind string, micros int64, a, b, garbage string) {
		if !validUTF8(kind) {
			return // kinds are the listings' own constants
		}
		if _, _, _, err := DecodeCursor(kind, garbage); err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "cursor" {
				t.Fatalf("DecodeCursor(%q) error %v is not a FieldError on cursor", garbage, err)
			}
		}
		ts := time.UnixMicro(micros % (1 << 50)).UTC()
		c := EncodeCursor(kind, ts, a, b)
		gt, ga, gb, err := DecodeCursor(kind, c)
		if err != nil {
			t.Fatalf("own cursor %q rejected: %v", c, err)
		}
		if !gt.Equal(ts) || ga != a || gb != b {
			// JSON replaces invalid UTF-8; only valid strings must round-trip.
			if validUTF8(a) && validUTF8(b) {
				t.Fatalf("round trip: got (%v %q %q), want (%v %q %q)", gt, ga, gb, ts, a, b)
			}
		}
		if _, _, _, err := DecodeCursor(kind+"x", c); err == nil {
			t.Fatalf("cursor of listing %q accepted by %q", kind, kind+"x")
		}
	})
}

func validUTF8(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == '\uFFFD' {
			return false
		}
	}
	return true
}
