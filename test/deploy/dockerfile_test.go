// Package deploy checks the deployment artefacts (the Dockerfile, its
// .dockerignore and the Helm chart in helm/mcp-runtime) against the
// server they package: the image must hold a static binary that runs as
// non-root and listens where the chart's probes and Service look, and the
// chart must render manifests a platform engineer can run in production.
//
// No Docker engine or cluster is needed: the Dockerfile is read with
// BuildKit's own parser, and the chart is rendered with the pinned helm
// binary (scripts/install-tools.sh helm, into .cache/bin).
package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	dfparser "github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// repoRoot is the repository root, relative to this package's directory
// (go test runs a package's tests there).
const repoRoot = "../.."

// The image's contract with the chart and with cmd/api.
const (
	imagePort    = "8080"
	imageUID     = 65532
	versionVar   = "main.version" // the -X target that stamps the build
	serverSource = "./cmd/api"
)

// instruction is one Dockerfile instruction, as BuildKit parsed it.
type instruction struct {
	cmd   string   // lower case: "from", "run", "copy", ...
	args  []string // the words after the instruction (key, value pairs for ENV and LABEL)
	flags []string // --from=..., --mount=..., --platform=...
	line  int
}

func (in instruction) flag(name string) (string, bool) {
	for _, f := range in.flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// stage is one FROM and the instructions up to the next one.
type stage struct {
	name   string // the AS name, lower case ("" if none)
	image  string // the FROM argument
	line   int
	instrs []instruction
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.instrs {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// env returns the stage's ENV settings (later ones win). BuildKit's
// parser gives each pair as three words: key, value (quotes kept) and the
// separator ("=", or "" for the legacy `ENV key value`).
func (s stage) env() map[string]string {
	env := map[string]string{}
	lex := shell.NewLex('\\')
	for _, in := range s.all("env") {
		for i := 0; i+1 < len(in.args); i += 3 {
			v, _, err := lex.ProcessWord(in.args[i+1], emptyEnv{})
			if err != nil {
				v = in.args[i+1]
			}
			env[in.args[i]] = v
		}
	}
	return env
}

type dockerfile struct {
	stages []stage
}

func (d *dockerfile) final() stage { return d.stages[len(d.stages)-1] }

// stageNamed returns the stage an image reference or --from= names.
func (d *dockerfile) stageNamed(ref string) (stage, bool) {
	for i, s := range d.stages {
		if s.name != "" && s.name == strings.ToLower(ref) || ref == strconv.Itoa(i) {
			return s, true
		}
	}
	return stage{}, false
}

func parseDockerfile(src []byte) (*dockerfile, error) {
	res, err := dfparser.Parse(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	d := &dockerfile{}
	for _, n := range res.AST.Children {
		in := instruction{cmd: strings.ToLower(n.Value), flags: n.Flags, line: n.StartLine}
		for a := n.Next; a != nil; a = a.Next {
			in.args = append(in.args, a.Value)
		}
		if in.cmd == "from" {
			s := stage{line: in.line}
			if len(in.args) > 0 {
				s.image = in.args[0]
			}
			if len(in.args) == 3 && strings.EqualFold(in.args[1], "as") {
				s.name = strings.ToLower(in.args[2])
			}
			d.stages = append(d.stages, s)
			continue
		}
		if len(d.stages) == 0 {
			continue // global ARGs before the first FROM
		}
		last := &d.stages[len(d.stages)-1]
		last.instrs = append(last.instrs, in)
	}
	if len(d.stages) == 0 {
		return nil, errors.New("no FROM instruction")
	}
	return d, nil
}

// goBuild is the `go build` command of a RUN instruction, split into words.
type goBuild struct {
	stage  stage
	env    map[string]string // ENV of the stage, overridden by VAR=value prefixes of the command
	args   []string          // the words after "go build"
	output string            // -o
}

// findGoBuild returns the go build of ./cmd/api; there must be exactly one.
func (d *dockerfile) findGoBuild() (goBuild, error) {
	var found []goBuild
	lex := shell.NewLex('\\')
	for _, s := range d.stages {
		for _, run := range s.all("run") {
			for _, cmd := range strings.Split(strings.Join(run.args, " "), "&&") {
				words, err := lex.ProcessWords(cmd, emptyEnv{})
				if err != nil {
					return goBuild{}, fmt.Errorf("line %d: %w", run.line, err)
				}
				env := s.env()
				for len(words) > 0 && strings.Contains(words[0], "=") {
					k, v, _ := strings.Cut(words[0], "=")
					env[k] = v
					words = words[1:]
				}
				if len(words) < 2 || words[0] != "go" || words[1] != "build" {
					continue
				}
				b := goBuild{stage: s, env: env, args: words[2:]}
				for i, w := range b.args {
					if w == "-o" && i+1 < len(b.args) {
						b.output = b.args[i+1]
					}
				}
				if slices.Contains(b.args, serverSource) {
					found = append(found, b)
				}
			}
		}
	}
	if len(found) != 1 {
		return goBuild{}, fmt.Errorf("want one RUN go build ... %s, found %d", serverSource, len(found))
	}
	return found[0], nil
}

// ldflags returns the value of -ldflags (either spelling).
func (b goBuild) ldflags() string {
	for i, w := range b.args {
		if v, ok := strings.CutPrefix(w, "-ldflags="); ok {
			return v
		}
		if w == "-ldflags" && i+1 < len(b.args) {
			return b.args[i+1]
		}
	}
	return ""
}

// emptyEnv leaves $VARS unexpanded-to-empty: the checks look at the
// literal flags, not at build-argument values.
type emptyEnv struct{}

func (emptyEnv) Get(string) (string, bool) { return "", false }
func (emptyEnv) Keys() []string            { return nil }

// dockerfileChecks are the properties the image must have; each returns
// why the Dockerfile lacks it.
var dockerfileChecks = []struct {
	name  string
	check func(*dockerfile) error
}{
	{"multi-stage", checkMultiStage},
	{"base images pinned", checkPinned},
	{"static build", checkStaticBuild},
	{"non-root user", checkNonRoot},
	{"final stage holds only the binary", checkBinaryOnly},
	{"listens on 0.0.0.0:8080", checkListen},
}

// checkMultiStage: the toolchain stays in a build stage; the final stage
// starts from another image.
func checkMultiStage(d *dockerfile) error {
	if len(d.stages) < 2 {
		return fmt.Errorf("%d stage: want a build stage and a final stage", len(d.stages))
	}
	b, err := d.findGoBuild()
	if err != nil {
		return err
	}
	final := d.final()
	if b.stage.line == final.line {
		return fmt.Errorf("go build runs in the final stage (line %d): the toolchain would ship", final.line)
	}
	if base := baseImage(d, final); base == baseImage(d, b.stage) {
		return fmt.Errorf("the final stage starts from the build image %s", base)
	}
	return nil
}

// baseImage follows FROM <stage> references back to an image.
func baseImage(d *dockerfile, s stage) string {
	for range d.stages {
		prev, ok := d.stageNamed(s.image)
		if !ok || prev.line >= s.line {
			break
		}
		s = prev
	}
	return s.image
}

var digestRE = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// checkPinned: every base image names a version (a tag other than latest,
// or a digest), written out rather than taken from a build argument.
func checkPinned(d *dockerfile) error {
	var errs []error
	for _, s := range d.stages {
		if _, ok := d.stageNamed(s.image); ok || s.image == "scratch" {
			continue
		}
		if strings.Contains(s.image, "$") {
			errs = append(errs, fmt.Errorf("line %d: FROM %s: the image comes from a build argument, so its version cannot be checked", s.line, s.image))
			continue
		}
		if digestRE.MatchString(s.image) {
			continue
		}
		ref := s.image[strings.LastIndex(s.image, "/")+1:]
		_, tag, ok := strings.Cut(ref, ":")
		switch {
		case !ok || tag == "":
			errs = append(errs, fmt.Errorf("line %d: FROM %s has no tag or digest (means latest)", s.line, s.image))
		case tag == "latest":
			errs = append(errs, fmt.Errorf("line %d: FROM %s is not pinned", s.line, s.image))
		}
	}
	return errors.Join(errs...)
}

// checkStaticBuild: CGO off, paths trimmed, symbols stripped, the version
// stamped into main.version.
func checkStaticBuild(d *dockerfile) error {
	b, err := d.findGoBuild()
	if err != nil {
		return err
	}
	var errs []error
	if b.env["CGO_ENABLED"] != "0" {
		errs = append(errs, fmt.Errorf("CGO_ENABLED is %q for go build: want 0 (a static binary for a libc-less image)", b.env["CGO_ENABLED"]))
	}
	if !slices.Contains(b.args, "-trimpath") {
		errs = append(errs, errors.New("go build without -trimpath"))
	}
	ld := strings.Fields(b.ldflags())
	for _, want := range []string{"-s", "-w"} {
		if !slices.Contains(ld, want) {
			errs = append(errs, fmt.Errorf("-ldflags %q lacks %s", b.ldflags(), want))
		}
	}
	stamped := false
	for i, f := range ld {
		if f == "-X" && i+1 < len(ld) && strings.HasPrefix(ld[i+1], versionVar+"=") {
			stamped = true
		}
	}
	if !stamped {
		errs = append(errs, fmt.Errorf("-ldflags %q does not set %s", b.ldflags(), versionVar))
	}
	if b.output == "" {
		errs = append(errs, errors.New("go build without -o: the final stage cannot name the binary"))
	}
	return errors.Join(errs...)
}

// checkNonRoot: the final stage ends as a numeric, non-zero user, so
// Kubernetes can verify runAsNonRoot without reading /etc/passwd.
func checkNonRoot(d *dockerfile) error {
	users := d.final().all("user")
	if len(users) == 0 {
		return errors.New("the final stage sets no USER: the container runs as the base image's user")
	}
	u := users[len(users)-1]
	if len(u.args) != 1 {
		return fmt.Errorf("line %d: USER %v", u.line, u.args)
	}
	uid, gid, hasGID := strings.Cut(u.args[0], ":")
	n, err := strconv.Atoi(uid)
	if err != nil {
		return fmt.Errorf("line %d: USER %s: want a numeric UID (runAsNonRoot cannot check a name)", u.line, u.args[0])
	}
	if n == 0 {
		return fmt.Errorf("line %d: USER %s is root", u.line, u.args[0])
	}
	if n != imageUID {
		return fmt.Errorf("line %d: USER %s: want UID %d (the chart's runAsUser)", u.line, u.args[0], imageUID)
	}
	if hasGID {
		if g, err := strconv.Atoi(gid); err != nil || g == 0 {
			return fmt.Errorf("line %d: USER %s: want a numeric, non-zero GID", u.line, u.args[0])
		}
	}
	return nil
}

// checkBinaryOnly: the final stage copies the built binary from the build
// stage and nothing else: no sources, no RUN (package installs), no ADD;
// its entry point is that binary.
func checkBinaryOnly(d *dockerfile) error {
	b, err := d.findGoBuild()
	if err != nil {
		return err
	}
	final := d.final()
	var errs []error
	var dest string
	for _, in := range final.instrs {
		switch in.cmd {
		case "run", "add":
			errs = append(errs, fmt.Errorf("line %d: %s in the final stage", in.line, strings.ToUpper(in.cmd)))
		case "copy":
			from, ok := in.flag("from")
			src, ok2 := d.stageNamed(from)
			switch {
			case !ok || !ok2:
				errs = append(errs, fmt.Errorf("line %d: COPY %s into the final stage from the build context", in.line, strings.Join(in.args, " ")))
			case src.line != b.stage.line || len(in.args) != 2 || path.Clean(in.args[0]) != path.Clean(b.output):
				errs = append(errs, fmt.Errorf("line %d: COPY --from=%s %s: want only the binary %s", in.line, from, strings.Join(in.args, " "), b.output))
			default:
				dest = in.args[1]
			}
		}
	}
	if dest == "" {
		errs = append(errs, fmt.Errorf("the final stage does not copy the binary %s", b.output))
	}
	eps := final.all("entrypoint")
	if len(eps) == 0 {
		errs = append(errs, errors.New("the final stage has no ENTRYPOINT"))
	} else if ep := eps[len(eps)-1]; dest != "" && (len(ep.args) == 0 || ep.args[0] != dest) {
		errs = append(errs, fmt.Errorf("line %d: ENTRYPOINT %v does not run the copied binary %s", ep.line, ep.args, dest))
	}
	return errors.Join(errs...)
}

// checkListen: MCP_ADDR makes the server listen on every interface of the
// container, on the port the image EXPOSEs (the chart's containerPort).
func checkListen(d *dockerfile) error {
	final := d.final()
	addr, ok := final.env()["MCP_ADDR"]
	if !ok {
		return errors.New("the final stage does not set MCP_ADDR: the server would listen on 127.0.0.1, unreachable from outside the container")
	}
	var errs []error
	if addr != "0.0.0.0:"+imagePort {
		errs = append(errs, fmt.Errorf("MCP_ADDR=%s: want 0.0.0.0:%s", addr, imagePort))
	}
	var exposed []string
	for _, in := range final.all("expose") {
		for _, p := range in.args {
			exposed = append(exposed, strings.TrimSuffix(p, "/tcp"))
		}
	}
	if !slices.Equal(exposed, []string{imagePort}) {
		errs = append(errs, fmt.Errorf("EXPOSE %v: want %s, the port of MCP_ADDR", exposed, imagePort))
	}
	return errors.Join(errs...)
}

func readRepoFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDockerfile(t *testing.T) {
	d, err := parseDockerfile(readRepoFile(t, "Dockerfile"))
	if err != nil {
		t.Fatalf("parse Dockerfile: %v", err)
	}
	for _, c := range dockerfileChecks {
		t.Run(c.name, func(t *testing.T) {
			if err := c.check(d); err != nil {
				t.Errorf("Dockerfile: %v", err)
			}
		})
	}
}

// TestDockerfileChecksCatchMistakes breaks the real Dockerfile in the ways
// images go wrong and expects the named check, and only it, to notice.
func TestDockerfileChecksCatchMistakes(t *testing.T) {
	real := string(readRepoFile(t, "Dockerfile"))
	const (
		finalFrom = "FROM gcr.io/distroless/static-debian12:nonroot AS runtime"
		copyBin   = "COPY --from=build /out/mcp-runtime /usr/local/bin/mcp-runtime"
		user      = "USER 65532:65532"
	)
	for _, s := range []string{finalFrom, copyBin, user, "ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false", "GOOS=$TARGETOS", "-trimpath ", "-X main.version=${VERSION}", "MCP_ADDR=0.0.0.0:8080", "EXPOSE 8080"} {
		if !strings.Contains(real, s) {
			t.Fatalf("the Dockerfile no longer contains %q: update this test's edits", s)
		}
	}
	cases := []struct {
		name   string
		edit   func(string) string
		failed []string // the checks that must fail; every other one must pass
	}{
		// Equivalent spellings pass.
		{"ENV pairs in another order", replace("ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false", "ENV GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=\"0\""), nil},
		{"CGO_ENABLED on the go build command", func(s string) string {
			s = strings.Replace(s, "ENV CGO_ENABLED=0 ", "ENV ", 1)
			return strings.Replace(s, "GOOS=$TARGETOS", "CGO_ENABLED=0 GOOS=$TARGETOS", 1)
		}, nil},
		{"final image pinned by digest", replace(finalFrom, "FROM gcr.io/distroless/static-debian12:nonroot@sha256:"+strings.Repeat("0f", 32)+" AS runtime"), nil},
		// Mistakes fail the check that names them.
		{"one stage ships the toolchain", func(string) string {
			return "FROM golang:1.26.8-bookworm\nWORKDIR /src\nCOPY . .\nENV CGO_ENABLED=0 MCP_ADDR=0.0.0.0:8080\n" +
				`RUN go build -trimpath -ldflags "-s -w -X main.version=dev" -o /out/mcp-runtime ./cmd/api` + "\n" +
				"USER 65532\nEXPOSE 8080\nENTRYPOINT [\"/out/mcp-runtime\"]\n"
		}, []string{"multi-stage", "final stage holds only the binary"}},
		{"final stage on the build image", replace(finalFrom, "FROM golang:1.26.8-bookworm AS runtime"), []string{"multi-stage"}},
		{"final image without a tag", replace(finalFrom, "FROM gcr.io/distroless/static-debian12 AS runtime"), []string{"base images pinned"}},
		{"final image on latest", replace(finalFrom, "FROM gcr.io/distroless/static-debian12:latest AS runtime"), []string{"base images pinned"}},
		{"build image from a build argument", replace("golang:1.26.8-bookworm", "golang:${GO_VERSION}"), []string{"base images pinned"}},
		{"cgo on", replace("CGO_ENABLED=0", "CGO_ENABLED=1"), []string{"static build"}},
		{"cgo left to the default", replace("CGO_ENABLED=0 ", ""), []string{"static build"}},
		{"paths not trimmed", replace("-trimpath ", ""), []string{"static build"}},
		{"version not stamped", replace("-X main.version=${VERSION}", ""), []string{"static build"}},
		{"no USER", replace(user, ""), []string{"non-root user"}},
		{"root", replace(user, "USER 0"), []string{"non-root user"}},
		{"user by name", replace(user, "USER nonroot"), []string{"non-root user"}},
		{"sources copied into the final stage", replace(copyBin, copyBin+"\nCOPY internal/ /src/internal/"), []string{"final stage holds only the binary"}},
		{"build tree copied into the final stage", replace(copyBin, "COPY --from=build /src /usr/local/bin/mcp-runtime"), []string{"final stage holds only the binary"}},
		{"packages installed in the final stage", replace(user, "RUN apt-get update && apt-get install -y curl\n"+user), []string{"final stage holds only the binary"}},
		{"entry point is not the binary", replace(`ENTRYPOINT ["/usr/local/bin/mcp-runtime"]`, `ENTRYPOINT ["/bin/sh"]`), []string{"final stage holds only the binary"}},
		{"listens on loopback", replace("MCP_ADDR=0.0.0.0:8080", "MCP_ADDR=127.0.0.1:8080"), []string{"listens on 0.0.0.0:8080"}},
		{"exposes another port", replace("EXPOSE 8080", "EXPOSE 9090"), []string{"listens on 0.0.0.0:8080"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.edit(real)
			if src == real {
				t.Fatal("the edit changed nothing")
			}
			d, err := parseDockerfile([]byte(src))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			for _, c := range dockerfileChecks {
				err := c.check(d)
				switch want := slices.Contains(tc.failed, c.name); {
				case want && err == nil:
					t.Errorf("check %q passed; want it to fail", c.name)
				case !want && err != nil:
					t.Errorf("check %q failed: %v", c.name, err)
				}
			}
		})
	}
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

// TestDockerfileGoVersion: the build image's Go is the go.mod toolchain's
// minor version, at least the patch go.mod asks for (GOTOOLCHAIN=local
// would refuse an older one), so the image moves with go.mod.
func TestDockerfileGoVersion(t *testing.T) {
	m := goDirectiveRE.FindSubmatch(readRepoFile(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod: no go directive")
	}
	goDirective := string(m[1])
	d, err := parseDockerfile(readRepoFile(t, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.findGoBuild()
	if err != nil {
		t.Fatal(err)
	}
	if err := goImageMatches(baseImage(d, b.stage), goDirective); err != nil {
		t.Errorf("Dockerfile build stage: %v", err)
	}

	for _, tc := range []struct {
		image, goDirective string
		ok                 bool
	}{
		{"golang:1.26.8-bookworm", "1.26.0", true},
		{"golang:1.26.8-alpine@sha256:" + strings.Repeat("ab", 32), "1.26", true},
		{"docker.io/library/golang:1.26.8", "1.26.8", true},
		{"golang:1.26.7-bookworm", "1.26.8", false}, // older than go.mod needs
		{"golang:1.25.9-bookworm", "1.26.0", false},
		{"golang:1.27.0-bookworm", "1.26.0", false}, // go.mod was not moved with it
		{"golang:1.26-bookworm", "1.26.0", false},   // a moving tag
		{"golang:bookworm", "1.26.0", false},
		{"debian:12", "1.26.0", false},
	} {
		err := goImageMatches(tc.image, tc.goDirective)
		if (err == nil) != tc.ok {
			t.Errorf("goImageMatches(%q, %q) = %v; want ok=%v", tc.image, tc.goDirective, err, tc.ok)
		}
	}
}

var goDirectiveRE = regexp.MustCompile(`(?m)^go\s+(\d+\.\d+(?:\.\d+)?)\s*$`)

var golangTagRE = regexp.MustCompile(`^(?:[a-z0-9.-]+/)*golang:(\d+)\.(\d+)\.(\d+)(?:-[a-z0-9]+)?(?:@sha256:[0-9a-f]{64})?$`)

func goImageMatches(image, goDirective string) error {
	m := golangTagRE.FindStringSubmatch(image)
	if m == nil {
		return fmt.Errorf("build image %s: want golang:MAJOR.MINOR.PATCH[-variant]", image)
	}
	want := strings.Split(goDirective, ".")
	for len(want) < 3 {
		want = append(want, "0")
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if m[1] != want[0] || m[2] != want[1] {
		return fmt.Errorf("build image %s: go.mod says go %s", image, goDirective)
	}
	if num(m[3]) < num(want[2]) {
		return fmt.Errorf("build image %s is older than go.mod's go %s", image, goDirective)
	}
	return nil
}

// TestVersionStampTarget: -X main.version only works while cmd/api keeps a
// package-level string variable of that name; otherwise the linker ignores
// the flag and every image reports "dev".
func TestVersionStampTarget(t *testing.T) {
	dir := filepath.Join(repoRoot, filepath.FromSlash(serverSource))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(versionVar, "main.")
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "main" {
			t.Fatalf("%s: package %s, want main", e.Name(), f.Name.Name)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if id.Name != name {
						continue
					}
					if len(vs.Values) > i {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							return
						}
					}
					if typ, ok := vs.Type.(*ast.Ident); ok && typ.Name == "string" {
						return
					}
					t.Fatalf("%s.%s is not a string variable initialised by a constant: -X cannot set it", serverSource, name)
				}
			}
		}
	}
	t.Fatalf("%s has no package-level var %s: -X %s=... would be ignored", serverSource, name, versionVar)
}

// TestDockerignore: the build context holds every file the binary is built
// from (so the image build cannot fail on a missing package) and none of the
// files that must never reach an image layer or the builder.
func TestDockerignore(t *testing.T) {
	f, err := os.Open(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	ignored := func(name string) bool {
		m, _, err := pm.MatchesUsingParentResults(name, patternmatcher.MatchInfo{})
		if err != nil {
			t.Fatalf("match %s: %v", name, err)
		}
		return m
	}

	for _, name := range append([]string{"go.mod", "go.sum"}, buildInputs(t)...) {
		if ignored(name) {
			t.Errorf(".dockerignore leaves out %s, which %s is built from", name, serverSource)
		}
	}
	for _, name := range []string{
		".git/config", ".cache/bin/helm", ".env", ".env.production",
		"internal/config/config_test.go", "internal/config/testdata/fuzz/x",
		"helm/mcp-runtime/values.yaml", "bench/go.mod", "node_modules/x/index.js",
		"api", "coverage.txt",
	} {
		if !ignored(name) {
			t.Errorf(".dockerignore lets %s into the build context", name)
		}
	}
}

// buildInputs lists, relative to the repository root, the Go and embedded
// files of every package of this module that serverSource is built from.
func buildInputs(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=Dir,GoFiles,EmbedFiles,Module,Standard", serverSource)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			Dir                 string
			GoFiles, EmbedFiles []string
			Standard            bool
			Module              *struct{ Main bool }
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Standard || p.Module == nil || !p.Module.Main {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range append(p.GoFiles, p.EmbedFiles...) {
			files = append(files, filepath.ToSlash(filepath.Join(rel, name)))
		}
	}
	if len(files) < 10 {
		t.Fatalf("go list found %d files for %s; expected the whole server", len(files), serverSource)
	}
	return files
}
