package logging

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The console format writes no colour codes where no terminal reads
// them: into a buffer, a pipe or a file.
func TestConsoleWithoutTerminalHasNoColour(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var buf bytes.Buffer
	for _, tt := range []struct {
		name string
		out  io.Writer
		read func() string
	}{
		{"buffer", &buf, buf.String},
		{"file", file, func() string { b, _ := os.ReadFile(file.Name()); return string(b) }},
		{"pipe", w, func() string {
			w.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(r)
			return b.String()
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log, closer, err := New(tt.out, Options{Level: "info", Format: "console"})
			if err != nil {
				t.Fatal(err)
			}
			log.Warn().Str("k", "v").Msg("hello")
			if err := closer.Close(); err != nil {
				t.Fatal(err)
			}
			got := tt.read()
			if !strings.Contains(got, "hello") {
				t.Fatalf("line %q lacks the message", got)
			}
			if strings.Contains(got, "\x1b[") {
				t.Errorf("colour codes in %q", got)
			}
		})
	}
}
