package config

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadYAML feeds arbitrary bytes as the YAML file: Load must not panic,
// and whatever it accepts must be valid.
func FuzzLoadYAML(f *testing.F) {
	for _, seed := range []string{
		"",
		fullYAML,
		"transport: {pageSize: 5, bogus: 1}\n",
		"allowedOrigins: [\"*\"]\n",
		"allowedOrigins:\n  - https://A.example/\n",
		"a: &x [1]\nb: *x\n",
		"logLevel: info\n---\nlogLevel: debug\n",
		"transport:\n  eventLogSize: 99999999999999999999\n",
		"listen: [unclosed\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadWithOutput([]string{"-config", path}, env(nil), io.Discard)
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Load accepted %q but Validate says: %v", data, err)
		}
	})
}
