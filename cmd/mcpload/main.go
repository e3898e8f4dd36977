// Command mcpload drives a Streamable HTTP MCP server with real protocol
// traffic and reports throughput and latency.
//
// Each client session performs the initialize / notifications/initialized
// handshake; workers (spread round-robin over the sessions) then issue
// tools/call (with -tool) or tools/list requests back to back for -duration
// or until -requests have completed. Sessions are deleted at the end.
//
//	mcpload -url http://127.0.0.1:8080/mcp -sessions 16 -concurrency 16 \
//	        -duration 10s -tool echo -args '{"text":"hello"}' -json
package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	url             string
	sessions        int
	concurrency     int
	duration        time.Duration
	requests        int64
	tool            string
	args            json.RawMessage
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
	fs.StringVar(&cfg.url, "url", "", "Streamable HTTP endpoint of the MCP server (required)")
	fs.IntVar(&cfg.sessions, "sessions", 1, "number of MCP client sessions")
	fs.IntVar(&cfg.concurrency, "concurrency", 16, "number of concurrent workers, spread round-robin over the sessions")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "measurement duration (ignored when -requests is set)")
	fs.Int64Var(&cfg.requests, "requests", 0, "total number of measured requests (overrides -duration)")
	fs.StringVar(&cfg.tool, "tool", "", "tool to call with tools/call; without it, tools/list is sent")
	argsJSON := fs.String("args", "{}", "tool arguments as a JSON object; inside its strings, {{seq}} becomes a number unique to each request\nand {{rand:N}} a random integer from 1 to N")
	fs.Var(&headerFlag{cfg.headers}, "header", "extra request header 'Key: Value' (repeatable)")
	fs.BoolVar(&cfg.jsonOut, "json", false, "print the summary as one JSON line on stdout")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "warmup duration before measuring (not counted)")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.StringVar(&cfg.protocolVersion, "protocol-version", "2025-11-25", "MCP protocol version to request in initialize")
	fs.StringVar(&cfg.protocolVersion, "protocolVersion", "2025-11-25", "alias of -protocol-version")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: mcpload -url URL [flags]\n\nDrives a Streamable HTTP MCP server with tools/call or tools/list requests.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}

	u, err := url.Parse(cfg.url)
	switch {
	case cfg.url == "":
		return nil, errors.New("-url is required")
	case err != nil:
		return nil, fmt.Errorf("-url: %w", err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return nil, fmt.Errorf("-url: want an http:// or https:// URL, got %q", cfg.url)
	case u.User != nil:
		return nil, errors.New("-url: put credentials in -header 'Authorization: ...', not in the URL")
	case cfg.sessions < 1:
		return nil, errors.New("-sessions must be at least 1")
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

	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(*argsJSON), &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("-args: want a JSON object, got %q", *argsJSON)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(*argsJSON)); err != nil {
		return nil, fmt.Errorf("-args: %w", err)
	}
	cfg.args = compact.Bytes()
	if _, err := parseTemplate(cfg.args); err != nil {
		return nil, fmt.Errorf("-args: %w", err)
	}
	return cfg, nil
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

	// Sessions are deleted even after an interrupt, within a bounded time.
	var sessions []*session
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		c := newConn(hc, cfg.url, cfg.timeout)
		for _, s := range sessions {
			if s.id == "" {
				continue
			}
			if err := c.delete(dctx, s.deleteHeader(cfg.headers)); err != nil {
				warn(fmt.Sprintf("DELETE session %s: %v", s.id, err))
			}
		}
	}()

	hs := newConn(hc, cfg.url, cfg.timeout)
	for i := range cfg.sessions {
		s, err := handshake(ctx, hs, cfg.headers, cfg.protocolVersion, clientVersion, warn)
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

	prefix, suffix, err := requestTemplate(cfg.tool, cfg.args)
	var tpl argTemplate
	if err == nil {
		tpl, err = parseTemplate(suffix)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpload: %v\n", err)
		return exitFailure
	}
	errs := &errorLog{}
	workers := make([]*worker, cfg.concurrency)
	for i := range workers {
		workers[i] = &worker{
			conn:   newConn(hc, cfg.url, cfg.timeout),
			header: sessions[i%len(sessions)].header,
			isTool: cfg.tool != "",
			prefix: prefix,
			suffix: suffix,
			tpl:    tpl,
			idBuf:  make([]byte, 0, 20),
			// Ids are unique per worker and so per session.
			nextID: uint64(firstWorkerID + i),
			idStep: uint64(cfg.concurrency),
			hist:   newHistogram(),
			errs:   errs,
		}
		if tpl != nil {
			workers[i].rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
		}
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
	var requests, errCount uint64
	var byKind [numKinds]uint64
	for _, w := range workers {
		hist.Merge(w.hist)
		requests += w.requests.Load()
		errCount += w.errors.Load()
		for k, n := range w.byKind {
			byKind[k] += n
		}
	}
	sum := summarize(hist, requests, errCount, byKind, elapsed)
	sum.URL = cfg.url
	sum.Method, sum.Tool = "tools/list", cfg.tool
	if cfg.tool != "" {
		sum.Method = "tools/call"
	}
	sum.ProtocolVersion = sessions[0].version
	sum.Server = sessions[0].server
	sum.Sessions, sum.Concurrency = cfg.sessions, cfg.concurrency
	sum.ErrorSamples = errs.list()

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
