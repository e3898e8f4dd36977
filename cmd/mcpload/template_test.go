package main

import (
	"bytes"
	"math/rand/v2"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
)

func TestParseTemplate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		in   string
		want string // appendTo with id 42 and every {{rand:N}} shown as R<N>; "" = no template
	}{
		{in: `,"params":{"arguments":{"key":"k"}}}`},
		{in: `{"a":"{{"}`},
		{in: `{"a":"{{seq}}"}`, want: `{"a":"42"}`},
		{in: `{{seq}}{{seq}}`, want: `4242`},
		{in: `{"key":"k-{{rand:1}}","n":"{{seq}}/{{rand:1}}"}`, want: `{"key":"k-1","n":"42/1"}`},
		{in: `{"a":"{{ seq }}{{rand:1}}x"}`, want: `{"a":"{{ seq }}1x"}`},
	} {
		tpl, err := parseTemplate([]byte(c.in))
		if err != nil {
			t.Errorf("parseTemplate(%s): %v", c.in, err)
			continue
		}
		if c.want == "" {
			if tpl != nil {
				t.Errorf("parseTemplate(%s) = %v, want nil (no placeholder)", c.in, tpl)
			}
			continue
		}
		if got := string(tpl.appendTo([]byte("pre:"), []byte("42"), rng)); got != "pre:"+c.want {
			t.Errorf("%s: appendTo = %s, want pre:%s", c.in, got, c.want)
		}
	}
}

func TestParseTemplateErrors(t *testing.T) {
	for _, in := range []string{`"{{rand:}}"`, `"{{rand:0}}"`, `"{{rand:-3}}"`, `"{{rand:x}}"`, `"{{rand:5"`, `"{{rand:99999999999999999999}}"`} {
		if tpl, err := parseTemplate([]byte(in)); err == nil {
			t.Errorf("parseTemplate(%s) = %v, want an error", in, tpl)
		}
	}
}

func TestTemplateRandRange(t *testing.T) {
	tpl, err := parseTemplate([]byte(`{{rand:5}}`))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	seen := map[uint64]int{}
	for range 1000 {
		n, err := strconv.ParseUint(string(tpl.appendTo(nil, nil, rng)), 10, 64)
		if err != nil || n < 1 || n > 5 {
			t.Fatalf("{{rand:5}} gave %d (%v), want 1..5", n, err)
		}
		seen[n]++
	}
	if len(seen) != 5 {
		t.Errorf("{{rand:5}} over 1000 draws gave only %v", seen)
	}
}

// TestArgsPlaceholders runs mcpload against the fake server and checks
// what the tool calls carried: {{seq}} distinct per request, {{rand:N}}
// within 1..N.
func TestArgsPlaceholders(t *testing.T) {
	fs := &fakeServer{t: t, sessions: map[string]bool{}}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	const requests = 50
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{
		"-url", srv.URL, "-sessions", "2", "-concurrency", "3", "-requests", strconv.Itoa(requests), "-warmup", "0",
		"-header", "Authorization: Bearer test-token", "-tool", "echo", "-args", `{"text":"s{{seq}} r{{rand:3}}"}`,
	}, &stdout, &stderr, false)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.texts) != requests {
		t.Fatalf("server saw %d calls, want %d", len(fs.texts), requests)
	}
	re := regexp.MustCompile(`^s([0-9]+) r([1-3])$`)
	seqs := map[string]bool{}
	for _, text := range fs.texts {
		m := re.FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("argument text %q does not match %s", text, re)
		}
		if seqs[m[1]] {
			t.Errorf("{{seq}} %s sent twice", m[1])
		}
		seqs[m[1]] = true
	}
}

func TestFlagErrorsPlaceholders(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-url", "http://x", "-args", `{"k":"{{rand:0}}"}`}, &stdout, &stderr, false); code != exitUsage {
		t.Errorf("exit %d, want %d (%s)", code, exitUsage, stderr.String())
	}
}
