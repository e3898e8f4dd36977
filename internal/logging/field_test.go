package logging

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestField(t *testing.T) {
	long := strings.Repeat("m", 1<<20)
	// "é" is two bytes: the cut at MaxField falls inside the last one.
	accented := strings.Repeat("a", MaxField-1) + strings.Repeat("é", 10)
	cases := []struct {
		name, in, want string
	}{
		{"short printable, as it is", "tools/call", "tools/call"},
		{"empty", "", ""},
		{"unicode kept", "naïve ✓", "naïve ✓"},
		{"control characters escaped", "a\nb\x1b[31mc\x00", `a\x0ab\x1b[31mc\x00`},
		{"invalid UTF-8 escaped", "a\xffb", `a\xffb`},
		{"C1 control escaped", "a\u0085b", `a\xc2\x85b`},
		{"long cut with its length", long, strings.Repeat("m", MaxField) + "…(1048576 bytes)"},
		{"cut at a character boundary", accented, strings.Repeat("a", MaxField-1) + "…(275 bytes)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Field(tc.in)
			if got != tc.want {
				t.Errorf("Field = %q, want %q", got, tc.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Field = %q: not valid UTF-8", got)
			}
		})
	}
}

func TestField_ShortValueDoesNotAllocate(t *testing.T) {
	s := "notifications/initialized"
	if n := testing.AllocsPerRun(100, func() { _ = Field(s) }); n != 0 {
		t.Errorf("Field of a short printable value allocates %v times", n)
	}
}

func BenchmarkField(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Field("tools/call")
	}
}
