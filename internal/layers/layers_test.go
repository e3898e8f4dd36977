package layers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/mcp-runtime/mcp-runtime"

// doc is the table's file, from this package's directory.
const doc = "../../docs/architecture-layers.md"

// rule is one pattern of the table and its row.
type rule struct {
	pattern string // module-relative, "x/..." for a subtree
	row     int
}

func (r rule) matches(pkg string) bool {
	if base, ok := strings.CutSuffix(r.pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == r.pattern
}

// rules is the table, read from the document.
type rules []rule

var (
	rowLine = regexp.MustCompile(`^\|\s*(\d+)\s*\|([^|]*)\|`)
	quoted  = regexp.MustCompile("`([^`]+)`")
)

func parseRules(r io.Reader) (rules, error) {
	var out rules
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := rowLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var row int
		if _, err := fmt.Sscan(m[1], &row); err != nil {
			return nil, fmt.Errorf("row %q: %w", m[1], err)
		}
		for _, q := range quoted.FindAllStringSubmatch(m[2], -1) {
			out = append(out, rule{pattern: q[1], row: row})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the table: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("no rows in the table")
	}
	return out, nil
}

// of returns the most specific rule that matches pkg.
func (rs rules) of(pkg string) (rule, bool) {
	var best rule
	found := false
	for _, r := range rs {
		if r.matches(pkg) && (!found || len(r.pattern) > len(best.pattern)) {
			best, found = r, true
		}
	}
	return best, found
}

// check says why from may not import to, or "" when it may.
func (rs rules) check(from, to string) string {
	rf, ok := rs.of(from)
	if !ok {
		return from + " is in no row of the table"
	}
	rt, ok := rs.of(to)
	if !ok {
		return to + " is in no row of the table"
	}
	switch {
	case rt.row < rf.row:
		return ""
	case rt.row == rf.row && rt.pattern == rf.pattern:
		return "" // within one subtree
	case rt.row == rf.row:
		return fmt.Sprintf("%s and %s are peers in row %d", from, to, rf.row)
	}
	return fmt.Sprintf("%s (row %d) imports %s (row %d), further down", from, rf.row, to, rt.row)
}

func readRules(t *testing.T) rules {
	t.Helper()
	f, err := os.Open(filepath.FromSlash(doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs, err := parseRules(f)
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return rs
}

// listed is one package as go list -json describes it.
type listed struct {
	ImportPath string
	Standard   bool
	Imports    []string
}

// modulePackages lists the module's packages and their non-test imports
// within the module, module-relative.
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if p.Standard || !ok {
			continue
		}
		var imports []string
		for _, imp := range p.Imports {
			if r, ok := strings.CutPrefix(imp, module+"/"); ok {
				imports = append(imports, r)
			}
		}
		pkgs[rel] = imports
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package of the module")
	}
	return pkgs
}

// TestImportsRunDownTheTable: every package of the module is in a row of
// docs/architecture-layers.md, and imports only what the table allows.
func TestImportsRunDownTheTable(t *testing.T) {
	rs := readRules(t)
	for pkg, imports := range modulePackages(t) {
		if _, ok := rs.of(pkg); !ok {
			t.Errorf("%s is in no row of %s: add it where it belongs", pkg, doc)
			continue
		}
		for _, imp := range imports {
			if why := rs.check(pkg, imp); why != "" {
				t.Errorf("%s imports %s: %s (%s)", pkg, imp, why, doc)
			}
		}
	}
}

// The rules reject the imports the layering exists to forbid, so the test
// above can fail.
func TestRulesRejectUpwardImports(t *testing.T) {
	rs := readRules(t)
	for _, tt := range []struct {
		from, to string
		ok       bool
	}{
		{"internal/pipeline", "internal/handlers", false},
		{"internal/handlers", "internal/pipeline", false},
		{"internal/handlers", "internal/transport", false},
		{"internal/runtime/limits", "internal/handlers", false},
		{"internal/statetools", "internal/federation", false},
		{"internal/upstream", "internal/federation", false},
		{"internal/store", "internal/store/memstore", true}, // one subtree; the compiler rules out cycles
		{"internal/runtime/guard", "internal/runtime/limits", true},
		{"internal/federation", "internal/upstream", true},
		{"internal/transport/sharing", "internal/transport", true},
		{"internal/transport/redisshare", "internal/transport", true},
		{"internal/transport", "internal/transport/redisshare", false},
		{"internal/transport/sessiontest", "internal/transport", true},
		{"cmd/api", "internal/config", true},
		{"internal/nowhere", "internal/protocol", false},
	} {
		if why := rs.check(tt.from, tt.to); (why == "") != tt.ok {
			t.Errorf("%s -> %s: allowed %v (%q), want %v", tt.from, tt.to, why == "", why, tt.ok)
		}
	}
}
