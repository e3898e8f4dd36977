package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestMixPickerDistribution(t *testing.T) {
	tests := []struct {
		name    string
		weights []int
	}{
		{"one", []int{5}},
		{"equal", []int{1, 1}},
		{"3:1", []int{3, 1}},
		{"1:3:6", []int{1, 3, 6}},
		{"skewed", []int{1, 98, 1}},
		{"many", []int{7, 1, 2, 9, 4, 3, 5}},
	}
	const draws = 200000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mix []mixEntry
			total := 0
			for _, w := range tt.weights {
				mix = append(mix, mixEntry{tool: "t", weight: w})
				total += w
			}
			p := newMixPicker(mix)
			rng := rand.New(rand.NewPCG(42, 0))
			counts := make([]int, len(mix))
			for range draws {
				counts[p.pick(rng)]++
			}
			for i, w := range tt.weights {
				want := float64(w) / float64(total)
				got := float64(counts[i]) / draws
				// 5 standard deviations of a binomial share: a fixed seed
				// makes the test deterministic, the bound makes it honest.
				tol := 5 * math.Sqrt(want*(1-want)/draws)
				if math.Abs(got-want) > tol+1e-12 {
					t.Errorf("entry %d (weight %d): share %.4f, want %.4f ± %.4f", i, w, got, want, tol)
				}
			}
		})
	}
}

func TestMixPickerReproducible(t *testing.T) {
	p := newMixPicker([]mixEntry{{weight: 1}, {weight: 2}, {weight: 3}})
	seq := func(seed, stream uint64) []int {
		rng := rand.New(rand.NewPCG(seed, stream))
		out := make([]int, 1000)
		for i := range out {
			out[i] = p.pick(rng)
		}
		return out
	}
	if !slices.Equal(seq(7, 0), seq(7, 0)) {
		t.Error("same seed, different sequences")
	}
	if slices.Equal(seq(7, 0), seq(8, 0)) || slices.Equal(seq(7, 0), seq(7, 1)) {
		t.Error("different seeds or workers, same sequence")
	}
}

func TestParseMixEntry(t *testing.T) {
	tests := []struct {
		in       string
		tool     string
		weight   int
		args     string // as sent
		errMatch string // substring of the error; "" = valid
	}{
		{in: `echo:1:{"text":"a:b"}`, tool: "echo", weight: 1, args: `{"text":"a:b"}`},
		{in: `memory_store:3:{"key":"k{{rand:1000}}","value":{{seq}}}`, tool: "memory_store", weight: 3,
			args: `{"key":"k{{rand:1000}}","value":{{seq}}}`},
		{in: `runtime_info:2`, tool: "runtime_info", weight: 2, args: `{}`},
		{in: `runtime_info:2:`, tool: "runtime_info", weight: 2, args: `{}`},
		{in: ` echo : 4 : { "text" : "x" } `, tool: "echo", weight: 4, args: `{"text":"x"}`},
		{in: `echo`, errMatch: "want TOOL:WEIGHT:ARGS"},
		{in: `:1:{}`, errMatch: "empty tool name"},
		{in: `{"text":"x"}:1`, errMatch: "plain tool name"},
		{in: `echo:0:{}`, errMatch: `weight "0" of echo: want an integer from 1 to 1000000`},
		{in: `echo:-2:{}`, errMatch: `weight "-2"`},
		{in: `echo:x:{}`, errMatch: `weight "x"`},
		{in: `echo:{"text":"x"}`, errMatch: `weight "{\"text\"" of echo`},
		{in: `echo:1:[1]`, errMatch: "arguments of echo: want a JSON object"},
		{in: `echo:1:{"text":`, errMatch: "arguments of echo: want a JSON object"},
		{in: `echo:1:{"n":{{seq}}`, errMatch: "arguments of echo: want a JSON object"},
		{in: `echo:1:{"n":"{{rand:0}}"}`, errMatch: "arguments of echo: {{rand:0}}: N must be a positive integer"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			e, err := parseMixEntry(tt.in)
			if tt.errMatch != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMatch) {
					t.Fatalf("error %v, want one containing %q", err, tt.errMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.tool != tt.tool || e.weight != tt.weight || string(e.args) != tt.args {
				t.Errorf("got %q:%d:%s, want %q:%d:%s", e.tool, e.weight, e.args, tt.tool, tt.weight, tt.args)
			}
		})
	}
}

func TestFlagErrorMessages(t *testing.T) {
	const u = "http://127.0.0.1:1/mcp"
	mut := `store:1:{"key":"k1","value":{{seq}}}`
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"tool and mix", []string{"-url", u, "-tool", "echo", "-mix", "echo:1"}, "-tool/-args and -mix/-mix-mutating are exclusive"},
		{"args and mix", []string{"-url", u, "-args", `{}`, "-mix", "echo:1"}, "-tool/-args and -mix/-mix-mutating are exclusive"},
		{"tool and mix-mutating", []string{"-url", u, "-tool", "echo", "-mix-mutating", mut, "-subscribers", "1", "-subscribe-uri", "x://y"}, "are exclusive"},
		{"args without tool", []string{"-url", u, "-args", `{"a":1}`}, "-args needs -tool"},
		{"bad mix", []string{"-url", u, "-mix", "echo:zero:{}"}, `invalid value "echo:zero:{}" for flag -mix: weight "zero" of echo`},
		{"bad mix args", []string{"-url", u, "-mix", "echo:1:[]"}, "arguments of echo: want a JSON object"},
		{"subscribers without uri", []string{"-url", u, "-mix-mutating", mut, "-subscribers", "2"}, "-subscribers needs -subscribe-uri"},
		{"uri without subscribers", []string{"-url", u, "-mix", "echo:1", "-subscribe-uri", "x://y"}, "-subscribe-uri needs -subscribers"},
		{"subscribers without mutating", []string{"-url", u, "-mix", "echo:1", "-subscribers", "2", "-subscribe-uri", "x://y"}, "needs at least one -mix-mutating entry"},
		{"subscribers with -tool", []string{"-url", u, "-tool", "echo", "-subscribers", "2", "-subscribe-uri", "x://y"}, "needs at least one -mix-mutating entry"},
		{"mutating without subscribers", []string{"-url", u, "-mix-mutating", mut}, "-mix-mutating needs -subscribers"},
		{"negative subscribers", []string{"-url", u, "-mix", "echo:1", "-subscribers", "-1"}, "-subscribers must not be negative"},
		{"subscribe-urls without subscribers", []string{"-url", u, "-mix", "echo:1", "-subscribe-urls", u}, "-subscribe-urls needs -subscribers"},
		{"subscribe-urls not a URL", []string{"-url", u, "-mix-mutating", mut, "-subscribers", "1", "-subscribe-uri", "x://y", "-subscribe-urls", u + ",ftp://h/mcp"}, "want http:// or https:// URLs"},
		{"negative notify-wait", []string{"-url", u, "-mix-mutating", mut, "-subscribers", "1", "-subscribe-uri", "x://y", "-notify-wait", "-1s"}, "-notify-wait must not be negative"},
		{"url list with a gap", []string{"-url", u + ",,http://127.0.0.1:2/mcp", "-sessions", "2"}, "-url: empty endpoint in the list"},
		{"url list with a bad entry", []string{"-url", u + ",ftp://127.0.0.1:2/mcp", "-sessions", "2"}, `-url: want an http:// or https:// URL, got "ftp://127.0.0.1:2/mcp"`},
		{"url listed twice", []string{"-url", u + ", " + u, "-sessions", "2"}, "is listed twice"},
		{"fewer sessions than urls", []string{"-url", u + ",http://127.0.0.1:2/mcp", "-sessions", "1"}, "-url lists 2 endpoints but -sessions is 1"},
		{"credentials in a listed url", []string{"-url", u + ",http://a:b@127.0.0.1:2/mcp", "-sessions", "2"}, "put credentials in -header"},
		{"bad seed", []string{"-url", u, "-seed", "-3"}, `invalid value "-3" for flag -seed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, &stdout, &stderr, false); code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q", stdout.String())
			}
		})
	}
}

func TestParseFlagsMix(t *testing.T) {
	cfg, err := parseFlags([]string{"-url", "http://x/mcp", "-seed", "9",
		"-mix", `echo:3:{"text":"a"}`, "-mix-mutating", `store:1:{"key":"k1","value":{{seq}}}`, "-mix", "runtime_info:2",
		"-subscribers", "4", "-subscribe-uri", "store://k1"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range cfg.mix {
		got = append(got, fmt.Sprintf("%s:%d:%s:%v", e.tool, e.weight, e.args, e.mutating))
	}
	want := []string{`echo:3:{"text":"a"}:false`, `store:1:{"key":"k1","value":{{seq}}}:true`, `runtime_info:2:{}:false`}
	if !slices.Equal(got, want) {
		t.Errorf("mix = %q, want %q", got, want)
	}
	if cfg.seed != 9 || cfg.subscribers != 4 || cfg.subscribeURI != "store://k1" {
		t.Errorf("seed %d subscribers %d uri %q", cfg.seed, cfg.subscribers, cfg.subscribeURI)
	}
	// Without -seed one is drawn, never 0.
	cfg, err = parseFlags([]string{"-url", "http://x/mcp", "-tool", "echo", "-args", `{"n":{{seq}}}`}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.seed == 0 || len(cfg.mix) != 1 || cfg.mix[0].tool != "echo" || string(cfg.mix[0].args) != `{"n":{{seq}}}` {
		t.Errorf("seed %d mix %+v", cfg.seed, cfg.mix)
	}
}

// runFake runs mcpload against fs and decodes its -json summary.
func runFake(t *testing.T, fs *fakeServer, args ...string) summary {
	t.Helper()
	srv := httptest.NewServer(fs)
	defer srv.Close()
	return runJSON(t, append([]string{"-url", srv.URL, "-header", "Authorization: Bearer test-token", "-timeout", "5s"}, args...)...)
}

// runJSON runs mcpload with args and -json, and decodes its summary.
func runJSON(t *testing.T, args ...string) summary {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append(args, "-json"), &stdout, &stderr, false); code != exitOK {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
	}
	var sum summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("decode summary %q: %v", stdout.String(), err)
	}
	return sum
}

func newNotifyingFake(t *testing.T) *fakeServer {
	return &fakeServer{t: t, sessions: map[string]bool{}, subs: map[string]string{},
		streams: map[string]chan string{}, toolSeen: map[string]int{}}
}

func TestMixWithSubscribersEndToEnd(t *testing.T) {
	tests := []struct {
		name      string
		sse       bool
		dropEvery int64
		closeGet  int
	}{
		{name: "json"},
		{name: "sse responses", sse: true},
		{name: "server drops every 4th notification", dropEvery: 4},
		{name: "server ends GET streams every 20 events", closeGet: 20},
	}
	const requests, subscribers = 400, 3
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newNotifyingFake(t)
			fs.sse, fs.dropEvery, fs.closeGetAfter = tt.sse, tt.dropEvery, tt.closeGet
			sum := runFake(t, fs,
				"-sessions", "2", "-concurrency", "4", "-requests", fmt.Sprint(requests), "-warmup", "0", "-seed", "3",
				"-mix", `echo:6:{"text":"e-{{seq}}"}`,
				"-mix", `store:2:{"key":"other{{rand:5}}","value":{{seq}}}`,
				"-mix-mutating", `store:2:{"key":"k1","value":{{seq}}}`,
				"-subscribers", fmt.Sprint(subscribers), "-subscribe-uri", "store://k1", "-notify-wait", "1s")

			if sum.Requests != requests || sum.Errors != 0 || sum.Seed != 3 || sum.Method != "tools/call" {
				t.Fatalf("requests %d errors %d seed %d method %s; samples %q", sum.Requests, sum.Errors, sum.Seed, sum.Method, sum.ErrorSamples)
			}
			if len(sum.Tools) != 3 {
				t.Fatalf("tools = %+v", sum.Tools)
			}
			var total uint64
			for i, tool := range sum.Tools {
				total += tool.Requests
				if tool.Requests == 0 || tool.OK != tool.Requests || tool.LatencyUS.P50 == 0 || tool.LatencyUS.Max < tool.LatencyUS.P99 {
					t.Errorf("tool %d: %+v", i, tool)
				}
			}
			if total != requests {
				t.Errorf("per-tool requests sum to %d, want %d", total, requests)
			}
			if sum.Tools[0].Tool != "echo" || sum.Tools[0].Weight != 6 || sum.Tools[2].Tool != "store" || !sum.Tools[2].Mutating || sum.Tools[1].Mutating {
				t.Errorf("tools = %+v", sum.Tools)
			}
			// The server saw what the summary says (no warmup).
			fs.mu.Lock()
			seen := fs.toolSeen
			fs.mu.Unlock()
			if uint64(seen["echo"]) != sum.Tools[0].Requests || uint64(seen["store"]) != sum.Tools[1].Requests+sum.Tools[2].Requests {
				t.Errorf("server saw %v, summary %+v", seen, sum.Tools)
			}

			n := sum.Notifications
			if n == nil {
				t.Fatal("no notifications in the summary")
			}
			if n.Subscribers != subscribers || n.URI != "store://k1" || n.Mutations != sum.Tools[2].OK || n.Expected != n.Mutations*subscribers {
				t.Errorf("notifications %+v", n)
			}
			if tt.dropEvery == 0 {
				if n.Received != n.Expected || n.Missed != 0 {
					t.Errorf("received %d of %d, missed %d", n.Received, n.Expected, n.Missed)
				}
			} else if n.Missed == 0 || n.Received+n.Missed != n.Expected {
				t.Errorf("dropping server: received %d missed %d expected %d", n.Received, n.Missed, n.Expected)
			}
			if n.Received == 0 || n.LatencyUS.P50 == 0 || n.LatencyUS.P95 < n.LatencyUS.P50 || n.LatencyUS.P99 < n.LatencyUS.P95 || n.LatencyUS.Max < n.LatencyUS.P99 {
				t.Errorf("implausible notification latency %+v", n.LatencyUS)
			}
			if tt.closeGet == 0 {
				if n.Reconnects != 0 || n.LastError != "" {
					t.Errorf("reconnects %d, last error %q", n.Reconnects, n.LastError)
				}
				if got := fs.gets.Load(); got != subscribers {
					t.Errorf("%d GET streams, want %d", got, subscribers)
				}
			} else {
				// Every stream was reopened, with Last-Event-ID.
				if n.Reconnects < subscribers || !strings.Contains(n.LastError, "stream ended by the server") {
					t.Errorf("reconnects %d, last error %q", n.Reconnects, n.LastError)
				}
				if got := fs.resumes.Load(); got < subscribers || fs.gets.Load() != subscribers+got {
					t.Errorf("%d GETs, %d with Last-Event-ID", fs.gets.Load(), got)
				}
			}
			fs.mu.Lock()
			defer fs.mu.Unlock()
			if len(fs.deleted) != 2+subscribers || len(fs.sessions) != 0 {
				t.Errorf("deleted %q, still open %v", fs.deleted, fs.sessions)
			}
		})
	}
}

// One worker and a fixed seed: the server sees the same sequence of calls.
func TestMixSeedReproducible(t *testing.T) {
	calls := func(seed string) map[string]int {
		fs := newNotifyingFake(t)
		runFake(t, fs, "-concurrency", "1", "-requests", "300", "-warmup", "0", "-seed", seed,
			"-mix", `echo:1:{"text":"{{rand:9}}"}`, "-mix", `store:1:{"key":"k{{rand:3}}","value":1}`, "-mix", "tools_other:1")
		fs.mu.Lock()
		defer fs.mu.Unlock()
		return fs.toolSeen
	}
	a, b, c := calls("11"), calls("11"), calls("12")
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("seed 11 twice: %v and %v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("seeds 11 and 12 both gave %v", a)
	}
}

func TestMixTextSummary(t *testing.T) {
	fs := newNotifyingFake(t)
	srv := httptest.NewServer(fs)
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-url", srv.URL, "-header", "Authorization: Bearer test-token",
		"-requests", "50", "-warmup", "0", "-concurrency", "2", "-seed", "5",
		"-mix", `echo:1:{"text":"x"}`, "-mix-mutating", `store:1:{"key":"k1","value":{{seq}}}`,
		"-subscribers", "1", "-subscribe-uri", "store://k1"}, &stdout, &stderr, false)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	for _, want := range []string{"per tool", "echo ", "store*", "notify       1 subscribers to store://k1", "notify µs    p50", "seed         5"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestSubscriberSetupFailure(t *testing.T) {
	// A server without GET streams or subscriptions: a usage that cannot
	// measure anything fails before the load starts.
	fs := &fakeServer{t: t, sessions: map[string]bool{}}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-url", srv.URL, "-header", "Authorization: Bearer test-token",
		"-requests", "5", "-mix-mutating", `store:1:{"key":"k1","value":1}`,
		"-subscribers", "1", "-subscribe-uri", "store://k1"}, &stdout, &stderr, false)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitFailure, stderr.String())
	}
	if !strings.Contains(stderr.String(), "subscriber 1: resources/subscribe store://k1: JSON-RPC error") {
		t.Errorf("stderr = %q", stderr.String())
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.deleted) != 2 {
		t.Errorf("sessions not deleted: %q", fs.deleted)
	}
}
