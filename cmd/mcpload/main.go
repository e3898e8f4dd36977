// Command mcpload drives a Streamable HTTP MCP server with real protocol
// traffic and reports throughput and latency.
//
// Each client session performs the initialize / notifications/initialized
// handshake; workers (spread round-robin over the sessions) then issue
// tools/call (with -tool, or a weighted mix of tools with -mix) or
// tools/list requests back to back for -duration or until -requests have
// completed. With -subscribers, extra sessions subscribe to a resource and
// hold their GET streams open, and the latency of its
// notifications/resources/updated is measured from the -mix-mutating
// requests that cause them (subscribe.go). Sessions are deleted at the end.
// A comma-separated -url spreads the sessions over several endpoints, the
// replicas of a deployment, each session staying on the one it was made at.
//
//	mcpload -url http://127.0.0.1:8080/mcp -sessions 16 -concurrency 16 \
//	        -duration 10s -tool echo -args '{"text":"hello"}' -json
//
//	mcpload -url http://127.0.0.1:8080/mcp -seed 1 \
//	        -mix 'memory_retrieve:6:{"key":"k{{rand:1000}}"}' \
//	        -mix 'memory_store:3:{"key":"k{{rand:1000}}","value":{{seq}}}' \
//	        -mix-mutating 'memory_store:1:{"key":"k1","value":{{seq}}}' \
//	        -subscribers 10 -subscribe-uri memory://default/k1
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// clientVersion is sent as clientInfo.version.
const clientVersion = "0.1.0"

// Exit codes.
const (
	exitOK        = 0
	exitFailure   = 1 // handshake or setup failed
	exitUsage     = 2
	exitInterrupt = 130
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, isTerminal(os.Stderr))
	stop()
	os.Exit(code)
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// config is the parsed command line.
type config struct {
	urls            []string // -url: the endpoints the client sessions are spread over, in turn
	sessions        int
	concurrency     int
	duration        time.Duration
	requests        int64
	tool            string     // -tool, for the summary
	mix             []mixEntry // the workload: -mix entries, or the one of -tool/-args
	seed            uint64
	subscribers     int
	subscribeURI    string
	subscribeURLs   []string // where the subscribers' streams connect, in turn; urls when empty
	notifyWait      time.Duration
	headers         http.Header
	jsonOut         bool
	warmup          time.Duration
	timeout         time.Duration
	protocolVersion string
	progressTTY     bool
}

// headerFlag collects repeated -header 'Key: Value' flags.
type headerFlag struct{ h http.Header }

func (f *headerFlag) String() string {
	if f == nil || f.h == nil {
		return ""
	}
	var parts []string
	for k, vs := range f.h {
		for _, v := range vs {
			parts = append(parts, k+": "+v)
		}
	}
	return strings.Join(parts, ", ")
}

func (f *headerFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, ":")
	k = strings.TrimSpace(k)
	if !ok || k == "" || strings.ContainsAny(k, " \t") {
		return fmt.Errorf("want 'Key: Value', got %q", s)
	}
	f.h.Add(textproto.CanonicalMIMEHeaderKey(k), strings.TrimSpace(v))
	return nil
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{headers: http.Header{}}
	fs := flag.NewFlagSet("mcpload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rawURL := fs.String("url", "", "Streamable HTTP endpoint of the MCP server (required); a comma-separated list spreads the\n"+
		"client sessions over several endpoints (the replicas of a deployment), session i on endpoint i mod N,\n"+
		"and needs -sessions of at least N")
	fs.IntVar(&cfg.sessions, "sessions", 1, "number of MCP client sessions")
	fs.IntVar(&cfg.concurrency, "concurrency", 16, "number of concurrent workers, spread round-robin over the sessions")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "measurement duration (ignored when -requests is set)")
	fs.Int64Var(&cfg.requests, "requests", 0, "total number of measured requests (overrides -duration)")
	fs.StringVar(&cfg.tool, "tool", "", "tool to call with tools/call; without it (and without -mix), tools/list is sent")
	argsJSON := fs.String("args", "{}", "tool arguments as a JSON object; {{seq}} becomes a number unique to each request\nand {{rand:N}} a random integer from 1 to N, inside strings or in place of a number")
	var mix []mixEntry
	fs.Var(&mixFlag{entries: &mix}, "mix",
		"one `TOOL:WEIGHT:ARGS` entry of a weighted mix of tools (repeatable; exclusive with -tool/-args): each request\n"+
			"calls TOOL with probability WEIGHT/(sum of weights), with the JSON object ARGS as arguments (placeholders\n"+
			"as in -args; may be omitted for {}). Only the first two ':' separate fields, so ARGS needs no escaping,\n"+
			"e.g. -mix 'memory_store:3:{\"key\":\"k{{rand:1000}}\",\"value\":{{seq}}}'")
	fs.Var(&mixFlag{entries: &mix, mutating: true}, "mix-mutating",
		"a `TOOL:WEIGHT:ARGS` entry as for -mix, whose requests change -subscribe-uri: the notification latency\n"+
			"is measured from them (repeatable)")
	seed := fs.Uint64("seed", 0, "seed of the random sequences (mix choices, {{rand:N}} values), one per worker: the same seed gives\neach worker the same sequence. 0 draws a seed, which the summary prints so that the run can be repeated")
	fs.IntVar(&cfg.subscribers, "subscribers", 0, "extra client sessions that subscribe (resources/subscribe) to -subscribe-uri and hold their GET\n"+
		"SSE stream open. Each notifications/resources/updated for the URI is charged to the most recent\n"+
		"-mix-mutating request: latency = receipt of the notification - start of sending that request\n"+
		"(understated when mutating requests overlap). Only notifications charged to a request of the measured\n"+
		"phase count. Expected = successful mutating requests x subscribers, missed = expected - received;\n"+
		"-mix entries must not change the URI too, or received exceeds expected. With a -protocol-version of the\n"+
		"stateless era (2026-07-28) each subscriber holds a subscriptions/listen stream naming the URI instead")
	fs.StringVar(&cfg.subscribeURI, "subscribe-uri", "", "resource URI the -subscribers subscribe to, e.g. memory://default/k1")
	subscribeURLs := fs.String("subscribe-urls", "", "comma-separated endpoints the -subscribers' streams connect to in turn (other replicas of the\n"+
		"server under -url, say), so that notifications must cross replicas; default: the -url endpoints in turn")
	fs.DurationVar(&cfg.notifyWait, "notify-wait", 2*time.Second, "after the measured phase, how long to wait for expected notifications still on the way")
	fs.Var(&headerFlag{cfg.headers}, "header", "extra request header 'Key: Value' (repeatable)")
	fs.BoolVar(&cfg.jsonOut, "json", false, "print the summary as one JSON line on stdout")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "warmup duration before measuring (not counted)")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.StringVar(&cfg.protocolVersion, "protocol-version", "2025-11-25", "MCP protocol version to request in initialize; 2026-07-28 (or later) speaks the stateless era:\n"+
		"server/discover instead of initialize, _meta and Mcp-Method/Mcp-Name on every request, no sessions")
	fs.StringVar(&cfg.protocolVersion, "protocolVersion", "2025-11-25", "alias of -protocol-version")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: mcpload -url URL [flags]\n\n"+
			"Drives a Streamable HTTP MCP server with tools/call (one -tool, or a weighted -mix of tools) or\n"+
			"tools/list requests, optionally with -subscribers measuring notification latency.\n"+
			"-header applies to every session, subscribers included.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}

	if *subscribeURLs != "" {
		for _, su := range strings.Split(*subscribeURLs, ",") {
			su = strings.TrimSpace(su)
			if p, err := url.Parse(su); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil {
				return nil, fmt.Errorf("-subscribe-urls: want http:// or https:// URLs without credentials, got %q", su)
			}
			cfg.subscribeURLs = append(cfg.subscribeURLs, su)
		}
	}
	urls, err := parseURLs(*rawURL)
	if err != nil {
		return nil, err
	}
	cfg.urls = urls
	switch {
	case cfg.sessions < 1:
		return nil, errors.New("-sessions must be at least 1")
	case cfg.sessions < len(cfg.urls):
		return nil, fmt.Errorf("-url lists %d endpoints but -sessions is %d: each endpoint needs at least one session", len(cfg.urls), cfg.sessions)
	case cfg.concurrency < 1:
		return nil, errors.New("-concurrency must be at least 1")
	case cfg.requests < 0:
		return nil, errors.New("-requests must not be negative")
	case cfg.requests == 0 && cfg.duration <= 0:
		return nil, errors.New("-duration must be positive")
	case cfg.warmup < 0:
		return nil, errors.New("-warmup must not be negative")
	case cfg.timeout <= 0:
		return nil, errors.New("-timeout must be positive")
	case cfg.protocolVersion == "":
		return nil, errors.New("-protocol-version must not be empty")
	}

	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var mutating int
	for _, e := range mix {
		if e.mutating {
			mutating++
		}
	}
	switch {
	case len(mix) > 0 && (set["tool"] || set["args"]):
		return nil, errMixWithTool
	case set["args"] && cfg.tool == "":
		return nil, errors.New("-args needs -tool (tools/list takes no arguments)")
	case cfg.subscribers < 0:
		return nil, errors.New("-subscribers must not be negative")
	case *subscribeURLs != "" && cfg.subscribers == 0:
		return nil, errors.New("-subscribe-urls needs -subscribers N (N > 0)")
	case cfg.subscribers > 0 && cfg.subscribeURI == "":
		return nil, errors.New("-subscribers needs -subscribe-uri, the resource to subscribe to")
	case cfg.subscribers == 0 && cfg.subscribeURI != "":
		return nil, errors.New("-subscribe-uri needs -subscribers N (N > 0)")
	case cfg.subscribers > 0 && mutating == 0:
		return nil, errors.New("-subscribers needs at least one -mix-mutating entry, the requests that change -subscribe-uri and that notification latency is measured from")
	case mutating > 0 && cfg.subscribers == 0:
		return nil, errors.New("-mix-mutating needs -subscribers N and -subscribe-uri (use -mix for a mix without subscribers)")
	case cfg.notifyWait < 0:
		return nil, errors.New("-notify-wait must not be negative")
	}

	if len(mix) == 0 {
		args, err := prepareArgs(*argsJSON)
		if err != nil {
			return nil, fmt.Errorf("-args: %w", err)
		}
		mix = []mixEntry{{tool: cfg.tool, weight: 1, args: args}}
	}
	cfg.mix = mix
	cfg.seed = *seed
	if cfg.seed == 0 {
		cfg.seed = rand.Uint64() | 1 // never 0, which would mean "draw one" again
	}
	return cfg, nil
}

// parseURLs parses -url: one endpoint, or a comma-separated list of them.
func parseURLs(raw string) ([]string, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("-url is required")
	}
	var urls []string
	seen := map[string]bool{}
	for _, s := range strings.Split(raw, ",") {
		s = strings.TrimSpace(s)
		u, err := url.Parse(s)
		switch {
		case s == "":
			return nil, fmt.Errorf("-url: empty endpoint in the list %q", raw)
		case err != nil:
			return nil, fmt.Errorf("-url: %w", err)
		case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
			return nil, fmt.Errorf("-url: want an http:// or https:// URL, got %q", s)
		case u.User != nil:
			return nil, errors.New("-url: put credentials in -header 'Authorization: ...', not in the URL")
		case seen[s]:
			// Listed twice, an endpoint would get twice the share of
			// sessions: more likely a slip than a wish.
			return nil, fmt.Errorf("-url: %q is listed twice", s)
		}
		seen[s] = true
		urls = append(urls, s)
	}
	return urls, nil
}

// run is main without the process-global parts, so tests can call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, tty bool) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpload: %v\n", err)
		return exitUsage
	}
	cfg.progressTTY = tty
	return runLoad(ctx, cfg, stdout, stderr)
}

func runLoad(ctx context.Context, cfg *config, stdout, stderr io.Writer) int {
	hc := newHTTPClient(cfg.concurrency)
	defer hc.CloseIdleConnections()
	// Every session sees the same server: report each deviation once.
	warned := map[string]bool{}
	warn := func(msg string) {
		if !warned[msg] {
			warned[msg] = true
			fmt.Fprintf(stderr, "mcpload: warning: %s\n", msg)
		}
	}

	// One connection for the handshakes and DELETEs of each endpoint:
	// every session is ended where it began.
	hs := make(map[string]*conn, len(cfg.urls))
	for _, u := range cfg.urls {
		hs[u] = newConn(hc, u, cfg.timeout)
	}

	// Sessions are deleted even after an interrupt, within a bounded time.
	var sessions []*session
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, s := range sessions {
			if s.id == "" {
				continue
			}
			if err := hs[s.url].delete(dctx, s.deleteHeader(cfg.headers)); err != nil {
				warn(fmt.Sprintf("DELETE session %s: %v", s.id, err))
			}
		}
	}()

	for i := range cfg.sessions {
		s, err := handshake(ctx, hs[cfg.urls[i%len(cfg.urls)]], cfg.headers, cfg.protocolVersion, clientVersion, warn)
		if err != nil {
			fmt.Fprintf(stderr, "mcpload: session %d: handshake failed: %v\n", i+1, err)
			return exitFailure
		}
		sessions = append(sessions, s)
	}
	if cfg.sessions > cfg.concurrency {
		warn(fmt.Sprintf("%d sessions but only %d workers: %d sessions stay idle",
			cfg.sessions, cfg.concurrency, cfg.sessions-cfg.concurrency))
	}

	reqs, err := prepareRequests(cfg.mix, sessions[0])
	if err != nil {
		fmt.Fprintf(stderr, "mcpload: %v\n", err)
		return exitFailure
	}

	// Subscribers: sessions of their own, subscribed and with the GET
	// stream open before any load, so that no notification is lost.
	var clock *mutationClock
	subs := &subscribers{}
	defer subs.stop() // before the sessions are deleted (defers run LIFO)
	if cfg.subscribers > 0 {
		clock = newMutationClock()
		sctx, cancel := context.WithCancel(ctx)
		subs.cancel = cancel
		for i := range cfg.subscribers {
			c := hs[cfg.urls[i%len(cfg.urls)]]
			s, err := handshake(ctx, c, cfg.headers, cfg.protocolVersion, clientVersion, warn)
			if err != nil {
				fmt.Fprintf(stderr, "mcpload: subscriber %d: %v\n", i+1, err)
				return exitFailure
			}
			sessions = append(sessions, s)
			at := s.url
			if len(cfg.subscribeURLs) > 0 {
				at = cfg.subscribeURLs[i%len(cfg.subscribeURLs)]
			}
			sub, resp, err := startSubscriber(ctx, sctx, c, hc, at, s, cfg, clock)
			if err != nil {
				fmt.Fprintf(stderr, "mcpload: subscriber %d: %v\n", i+1, err)
				return exitFailure
			}
			subs.list = append(subs.list, sub)
			subs.wg.Go(func() { sub.run(sctx, resp, cfg.timeout) })
		}
	}

	errs := &errorLog{}
	picker := newMixPicker(cfg.mix)
	workers := make([]*worker, cfg.concurrency)
	for i := range workers {
		s := sessions[i%cfg.sessions]
		w := &worker{
			conn:   newConn(hc, s.url, cfg.timeout),
			header: s.header,
			reqs:   reqs,
			picker: picker,
			// One sequence per worker: the same -seed gives each worker
			// the same choices and {{rand:N}} values.
			rng:   rand.New(rand.NewPCG(cfg.seed, uint64(i))),
			clock: clock,
			idBuf: make([]byte, 0, 20),
			// Ids are unique per worker and so per session.
			nextID: uint64(firstWorkerID + i),
			idStep: uint64(cfg.concurrency),
			stats:  make([]entryStats, len(reqs)),
			errs:   errs,
		}
		for j := range w.stats {
			w.stats[j].hist = newHistogram()
		}
		workers[i] = w
	}

	if cfg.warmup > 0 {
		fmt.Fprintf(stderr, "mcpload: warming up for %s\n", cfg.warmup)
		runPhase(ctx, workers, &phase{deadline: time.Now().Add(cfg.warmup)})
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "mcpload: interrupted")
		return exitInterrupt
	}

	measure := &phase{record: true, deadline: time.Now().Add(cfg.duration)}
	if cfg.requests > 0 {
		measure.counted = true
		measure.remaining.Store(cfg.requests)
	}
	if clock != nil {
		clock.startMeasuring()
	}
	pctx, stopProgress := context.WithCancel(ctx)
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		progress(pctx, stderr, cfg.progressTTY, workers)
	}()
	elapsed := runPhase(ctx, workers, measure)
	stopProgress()
	<-progressDone

	hist := newHistogram()
	var requests, errCount, mutations uint64
	var byKind [numKinds]uint64
	perEntry := make([]entryStats, len(reqs))
	for j := range perEntry {
		perEntry[j].hist = newHistogram()
	}
	for _, w := range workers {
		for j, st := range w.stats {
			e := &perEntry[j]
			e.hist.Merge(st.hist)
			e.requests += st.requests
			e.errors += st.errors
			for k, n := range st.byKind {
				e.byKind[k] += n
			}
		}
	}
	for j, e := range perEntry {
		hist.Merge(e.hist)
		requests += e.requests
		errCount += e.errors
		for k, n := range e.byKind {
			byKind[k] += n
		}
		if cfg.mix[j].mutating {
			mutations += e.requests - e.errors
		}
	}
	sum := summarize(hist, requests, errCount, byKind, elapsed)
	sum.URL = strings.Join(cfg.urls, ",")
	sum.Method, sum.Tool = "tools/list", cfg.tool
	if cfg.mix[0].tool != "" {
		sum.Method = "tools/call"
	}
	sum.ProtocolVersion = sessions[0].version
	sum.Server = sessions[0].server
	sum.Sessions, sum.Concurrency = cfg.sessions, cfg.concurrency
	sum.ErrorSamples = errs.list()
	sum.Seed = cfg.seed
	for j, e := range cfg.mix {
		sum.Tools = append(sum.Tools, newToolSummary(e, perEntry[j], elapsed))
	}

	if cfg.subscribers > 0 {
		subs.wait(ctx, mutations*uint64(cfg.subscribers), cfg.notifyWait)
		subs.stop()
		nh := newHistogram()
		received := subs.received()
		reconnects, lastErr := 0, ""
		for _, s := range subs.list {
			nh.Merge(s.hist)
			reconnects += s.reconnects
			if s.lastErr != nil {
				lastErr = fmt.Sprintf("subscriber %s: %v", s.sess.id, s.lastErr)
			}
		}
		sum.Notifications = newNotifySummary(nh, cfg.subscribers, cfg.subscribeURI, mutations, received)
		sum.Notifications.Reconnects, sum.Notifications.LastError = reconnects, lastErr
	}

	write := sum.writeText
	if cfg.jsonOut {
		write = sum.writeJSON
	}
	if err := write(stdout); err != nil {
		fmt.Fprintf(stderr, "mcpload: %v\n", err)
		return exitFailure
	}
	if ctx.Err() != nil {
		return exitInterrupt
	}
	return exitOK
}
