package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// -h names every environment variable the package declares (an Env
// constant in any of its files), so a new one cannot be left out.
func TestUsageListsEveryEnvironmentVariable(t *testing.T) {
	var out bytes.Buffer
	if _, err := LoadWithOutput([]string{"-h"}, nil, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := regexp.MustCompile(`(?m)^\s*(?:const\s+)?Env[A-Za-z]+\s*=\s*"([A-Z_]+)"`)
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range declared.FindAllSubmatch(src, -1) {
			names = append(names, string(m[1]))
		}
	}
	if len(names) < 11 {
		t.Fatalf("found %d Env constants (%v); the pattern no longer matches their declarations", len(names), names)
	}
	for _, name := range names {
		if !strings.Contains(out.String(), name) {
			t.Errorf("-h does not name %s:\n%s", name, out.String())
		}
	}
}
