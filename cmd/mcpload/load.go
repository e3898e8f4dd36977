package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// maxErrorSamples is how many distinct error messages the summary shows;
// maxErrorChecks bounds how many errors are examined to find them.
const (
	maxErrorSamples = 5
	maxErrorChecks  = 10000
)

// errorLog keeps the first few distinct error messages. Once it has enough,
// or has examined maxErrorChecks errors, it costs one atomic load per error.
type errorLog struct {
	full    atomic.Bool
	mu      sync.Mutex
	checked int
	samples []string
}

func (l *errorLog) add(err error) {
	if l.full.Load() {
		return
	}
	msg := err.Error()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checked++
	if !slices.Contains(l.samples, msg) && len(l.samples) < maxErrorSamples {
		l.samples = append(l.samples, msg)
	}
	if len(l.samples) >= maxErrorSamples || l.checked >= maxErrorChecks {
		l.full.Store(true)
	}
}

func (l *errorLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.samples...)
}

// phase is one timed or counted stretch of load (warmup or measurement).
type phase struct {
	record    bool
	deadline  time.Time    // used when !counted
	counted   bool         // stop after a total number of requests
	remaining atomic.Int64 // requests left when counted
}

// take reports whether a worker may start another request.
func (p *phase) take(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	if p.counted {
		return p.remaining.Add(-1) >= 0
	}
	return time.Now().Before(p.deadline)
}

// worker drives one request at a time on one session. Everything it needs
// per request is prepared up front; only the request body (the transport may
// still hold the previous one) and net/http's own objects are allocated.
type worker struct {
	// Counters read by the progress reporter while the worker runs.
	requests atomic.Uint64
	errors   atomic.Uint64
	_        [48]byte // keep other workers' counters off this cache line

	conn   *conn
	header http.Header // the session's read-only headers
	reqs   []request   // the mix entries, prepared
	picker *mixPicker
	rng    *rand.Rand     // picks the entry and fills {{rand:N}}; seeded from -seed
	clock  *mutationClock // nil without -subscribers
	idBuf  []byte
	nextID uint64
	idStep uint64

	stats []entryStats // by mix entry
	errs  *errorLog
}

// requestTemplate pre-encodes everything of a request body but its id. The
// arguments are spliced in as they are: they may hold a bare placeholder
// ({{seq}} in place of a number) and so not be valid JSON until rendered.
// meta, when set, is the params' _meta of a request of the stateless era.
func requestTemplate(tool string, args, meta json.RawMessage) (prefix, suffix []byte, err error) {
	prefix = []byte(`{"jsonrpc":"2.0","id":`)
	params := []byte(`{`)
	if meta != nil {
		params = append(params, `"_meta":`...)
		params = append(params, meta...)
	}
	if tool == "" {
		suffix = append([]byte(`,"method":"tools/list","params":`), params...)
		return prefix, append(suffix, "}}"...), nil
	}
	name, err := json.Marshal(tool)
	if err != nil {
		return nil, nil, fmt.Errorf("encode tools/call request: %w", err)
	}
	if meta != nil {
		params = append(params, ',')
	}
	suffix = append([]byte(`,"method":"tools/call","params":`), params...)
	suffix = append(suffix, `"name":`...)
	suffix = append(suffix, name...)
	suffix = append(suffix, `,"arguments":`...)
	suffix = append(suffix, args...)
	suffix = append(suffix, "}}"...)
	return prefix, suffix, nil
}

// request is one prepared mix entry, as a worker sends it.
type request struct {
	isTool   bool
	mutating bool
	prefix   []byte      // `{"jsonrpc":"2.0","id":`
	suffix   []byte      // `,"method":...,"params":...}`
	tpl      argTemplate // suffix with its placeholders; nil without any
	// header, in the stateless era, is the request's own headers (its
	// Mcp-Method and Mcp-Name); nil in a session's era, whose requests
	// carry their session's.
	header http.Header
}

// prepareRequests pre-encodes every mix entry; s is a session of the
// run, which says the era and carries the headers every request shares.
func prepareRequests(mix []mixEntry, s *session) ([]request, error) {
	reqs := make([]request, len(mix))
	for i, e := range mix {
		prefix, suffix, err := requestTemplate(e.tool, e.args, s.meta)
		if err != nil {
			return nil, err
		}
		tpl, err := parseTemplate(suffix)
		if err != nil {
			return nil, fmt.Errorf("arguments of %s: %w", e.label(), err)
		}
		reqs[i] = request{isTool: e.tool != "", mutating: e.mutating, prefix: prefix, suffix: suffix, tpl: tpl}
		if s.meta != nil {
			reqs[i].header = s.header.Clone()
			if e.tool == "" {
				reqs[i].header.Set(headerMethod, "tools/list")
			} else {
				reqs[i].header.Set(headerMethod, "tools/call")
				reqs[i].header.Set(headerName, headerValue(e.tool))
			}
		}
	}
	return reqs, nil
}

// entryStats are one worker's measurements of one mix entry.
type entryStats struct {
	hist     *histogram
	requests uint64
	errors   uint64
	byKind   [numKinds]uint64
}

// run issues requests until the phase says stop.
func (w *worker) run(ctx context.Context, p *phase) {
	for p.take(ctx) {
		i := w.picker.pick(w.rng)
		lat, err := w.once(ctx, &w.reqs[i])
		if ctx.Err() != nil {
			return // interrupted: the last request says nothing about the server
		}
		if !p.record {
			continue
		}
		st := &w.stats[i]
		st.requests++
		w.requests.Add(1)
		if err == nil {
			st.hist.Record(lat)
			continue
		}
		kind := kindTransport
		if ce := (*callError)(nil); errors.As(err, &ce) {
			kind = ce.kind
		}
		if kind != kindTransport {
			// A response arrived (an HTTP or JSON-RPC level failure): its
			// latency is real. A transport failure has none.
			st.hist.Record(lat)
		}
		st.errors++
		w.errors.Add(1)
		st.byKind[kind]++
		w.errs.add(err)
	}
}

// once performs one request and returns its latency.
func (w *worker) once(ctx context.Context, r *request) (time.Duration, error) {
	w.idBuf = strconv.AppendUint(w.idBuf[:0], w.nextID, 10)
	w.nextID += w.idStep
	// A placeholder's value is at most 20 digits long.
	body := make([]byte, 0, len(r.prefix)+len(w.idBuf)+len(r.suffix)+20*len(r.tpl))
	body = append(body, r.prefix...)
	body = append(body, w.idBuf...)
	if r.tpl != nil {
		body = r.tpl.appendTo(body, w.idBuf, w.rng)
	} else {
		body = append(body, r.suffix...)
	}

	if r.mutating && w.clock != nil {
		w.clock.sent()
	}
	header := w.header
	if r.header != nil {
		header = r.header
	}
	start := time.Now()
	env, _, err := w.conn.call(ctx, header, body, w.idBuf)
	if err != nil {
		return time.Since(start), err
	}
	lat := w.conn.matchedAt.Sub(start)
	if len(env.Error) > 0 {
		return lat, newCallError(kindJSONRPC, rpcErrorMessage(env.Error), nil)
	}
	if r.isTool && resultIsError(env.Result) {
		return lat, newCallError(kindTool, toolErrorMessage(env.Result), nil)
	}
	return lat, nil
}

// runPhase runs all workers through p and returns how long it took.
func runPhase(ctx context.Context, workers []*worker, p *phase) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.run(ctx, p) })
	}
	wg.Wait()
	return time.Since(start)
}

// progress writes a status line every second until ctx is done.
func progress(ctx context.Context, out io.Writer, tty bool, workers []*worker) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	start := time.Now()
	last, lastAt := uint64(0), start
	for {
		select {
		case <-ctx.Done():
			if tty {
				fmt.Fprint(out, "\n")
			}
			return
		case <-t.C:
			// Not the tick's own time: under load the ticker may be read
			// late, and the counters are read now.
			now := time.Now()
			var reqs, errs uint64
			for _, w := range workers {
				reqs += w.requests.Load()
				errs += w.errors.Load()
			}
			rate := float64(reqs-last) / now.Sub(lastAt).Seconds()
			last, lastAt = reqs, now
			line := fmt.Sprintf("%6.1fs  requests %10d  rate %9.1f/s  errors %d",
				now.Sub(start).Seconds(), reqs, rate, errs)
			if tty {
				fmt.Fprintf(out, "\r%-70s", line)
			} else {
				fmt.Fprintln(out, line)
			}
		}
	}
}
