package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strings"
	"time"
)

// Latencies are recorded in microseconds in a log-linear histogram (the same
// idea as HdrHistogram): values below 2^histSubBits µs are exact, larger
// values are kept with a relative error below 2^-(histSubBits-1) (~0.2%).
// A histogram has a fixed size and Record never allocates.
const (
	histSubBits  = 10
	histSubCount = 1 << histSubBits
	histHalf     = histSubCount / 2
	// histMaxBits caps recorded values at 2^histMaxBits-1 µs (~38 hours).
	histMaxBits = 37
	histMaxUS   = 1<<histMaxBits - 1
	histBuckets = (histMaxBits-histSubBits)*histHalf + histSubCount
)

// histogram counts latencies. It is not safe for concurrent use: each worker
// owns one and they are merged after the run.
type histogram struct {
	counts [histBuckets]uint64
	total  uint64
	sumUS  uint64
	minUS  uint64
	maxUS  uint64
}

func newHistogram() *histogram {
	return &histogram{minUS: math.MaxUint64}
}

func histIndex(us uint64) int {
	if us < histSubCount {
		return int(us)
	}
	m := bits.Len64(us) - histSubBits
	return m*histHalf + int(us>>uint(m))
}

// histBounds returns the lowest and highest value that map to bucket idx.
func histBounds(idx int) (lo, hi uint64) {
	if idx < histSubCount {
		return uint64(idx), uint64(idx)
	}
	m := idx/histHalf - 1
	s := uint64(idx - m*histHalf)
	return s << uint(m), (s+1)<<uint(m) - 1
}

// Record adds one latency.
func (h *histogram) Record(d time.Duration) {
	us := uint64(0)
	if d > 0 {
		us = uint64(d / time.Microsecond)
	}
	if us > histMaxUS {
		us = histMaxUS
	}
	h.counts[histIndex(us)]++
	h.total++
	h.sumUS += us
	if us < h.minUS {
		h.minUS = us
	}
	if us > h.maxUS {
		h.maxUS = us
	}
}

// Merge adds all of o's observations to h.
func (h *histogram) Merge(o *histogram) {
	if o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sumUS += o.sumUS
	h.minUS = min(h.minUS, o.minUS)
	h.maxUS = max(h.maxUS, o.maxUS)
}

// Count returns the number of recorded values.
func (h *histogram) Count() uint64 { return h.total }

// Max returns the largest recorded value in µs (exact), 0 when empty.
func (h *histogram) Max() uint64 { return h.maxUS }

// Mean returns the mean in µs, 0 when empty.
func (h *histogram) Mean() float64 {
	if h.total == 0 {
		return 0
	}
	return float64(h.sumUS) / float64(h.total)
}

// Percentile returns the value in µs at or below which q percent (0 < q <=
// 100) of observations fall (nearest-rank definition). The result is the
// highest value of the matching bucket, clamped to the observed range, so it
// is exact below 1024 µs and never understates the true value by more than
// the bucket width. It returns 0 when the histogram is empty.
func (h *histogram) Percentile(q float64) uint64 {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q / 100 * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			_, hi := histBounds(i)
			return min(max(hi, h.minUS), h.maxUS)
		}
	}
	return h.maxUS
}

// errorCounts is the number of failed requests by kind.
type errorCounts struct {
	HTTP      uint64 `json:"http"`
	JSONRPC   uint64 `json:"jsonrpc"`
	Tool      uint64 `json:"tool"`
	Transport uint64 `json:"transport"`
	Protocol  uint64 `json:"protocol"`
}

func newErrorCounts(byKind [numKinds]uint64) errorCounts {
	return errorCounts{
		HTTP:      byKind[kindHTTP],
		JSONRPC:   byKind[kindJSONRPC],
		Tool:      byKind[kindTool],
		Transport: byKind[kindTransport],
		Protocol:  byKind[kindProtocol],
	}
}

// latencySummary is in microseconds.
type latencySummary struct {
	P50  uint64  `json:"p50"`
	P90  uint64  `json:"p90"`
	P99  uint64  `json:"p99"`
	Max  uint64  `json:"max"`
	Mean float64 `json:"mean"`
}

// summary is the result of a run; -json prints it as one line.
type summary struct {
	URL             string         `json:"url"`
	Method          string         `json:"method"`
	Tool            string         `json:"tool,omitempty"`
	ProtocolVersion string         `json:"protocol_version"`
	Server          string         `json:"server"`
	Sessions        int            `json:"sessions"`
	Concurrency     int            `json:"concurrency"`
	Requests        uint64         `json:"requests"`
	OK              uint64         `json:"ok"`
	Errors          uint64         `json:"errors"`
	ErrorsByKind    errorCounts    `json:"errors_by_kind"`
	DurationS       float64        `json:"duration_s"`
	RPS             float64        `json:"rps"`
	LatencyUS       latencySummary `json:"latency_us"`
	ErrorSamples    []string       `json:"error_samples,omitempty"`
	// Seed is the -seed of the run (drawn at random when not given): the
	// same seed gives each worker the same sequence of mix entries and
	// {{rand:N}} values.
	Seed uint64 `json:"seed"`
	// Tools has one row per mix entry (one for -tool or tools/list).
	Tools         []toolSummary  `json:"tools"`
	Notifications *notifySummary `json:"notifications,omitempty"`
}

// toolSummary is the result of one mix entry.
type toolSummary struct {
	Tool         string         `json:"tool"`
	Weight       int            `json:"weight"`
	Mutating     bool           `json:"mutating,omitempty"`
	Requests     uint64         `json:"requests"`
	OK           uint64         `json:"ok"`
	Errors       uint64         `json:"errors"`
	ErrorsByKind errorCounts    `json:"errors_by_kind"`
	RPS          float64        `json:"rps"`
	LatencyUS    latencySummary `json:"latency_us"`
}

func newToolSummary(e mixEntry, st entryStats, d time.Duration) toolSummary {
	s := summarize(st.hist, st.requests, st.errors, st.byKind, d)
	return toolSummary{
		Tool: e.label(), Weight: e.weight, Mutating: e.mutating,
		Requests: s.Requests, OK: s.OK, Errors: s.Errors, ErrorsByKind: s.ErrorsByKind,
		RPS: s.RPS, LatencyUS: s.LatencyUS,
	}
}

// notifyLatency is in microseconds, from the send of the mutating request to
// the receipt of the notification (see subscribe.go for the method).
type notifyLatency struct {
	P50  uint64  `json:"p50"`
	P95  uint64  `json:"p95"`
	P99  uint64  `json:"p99"`
	Max  uint64  `json:"max"`
	Mean float64 `json:"mean"`
}

// notifySummary is what the -subscribers saw.
type notifySummary struct {
	Subscribers int    `json:"subscribers"`
	URI         string `json:"uri"`
	// Mutations is the number of mutating requests of the measured phase
	// that succeeded; Expected = Mutations × Subscribers.
	Mutations  uint64        `json:"mutations"`
	Expected   uint64        `json:"expected"`
	Received   uint64        `json:"received"`
	Missed     uint64        `json:"missed"`
	Reconnects int           `json:"reconnects"`
	LatencyUS  notifyLatency `json:"latency_us"`
	LastError  string        `json:"last_error,omitempty"`
}

func newNotifySummary(h *histogram, subscribers int, uri string, mutations, received uint64) *notifySummary {
	n := &notifySummary{
		Subscribers: subscribers, URI: uri,
		Mutations: mutations, Expected: mutations * uint64(subscribers), Received: received,
		LatencyUS: notifyLatency{
			P50: h.Percentile(50), P95: h.Percentile(95), P99: h.Percentile(99), Max: h.Max(),
			Mean: math.Round(h.Mean()*10) / 10,
		},
	}
	if n.Expected > received {
		n.Missed = n.Expected - received
	}
	return n
}

func summarize(h *histogram, requests, errors uint64, byKind [numKinds]uint64, d time.Duration) summary {
	s := summary{
		Requests:     requests,
		OK:           requests - errors,
		Errors:       errors,
		ErrorsByKind: newErrorCounts(byKind),
		DurationS:    d.Seconds(),
		LatencyUS: latencySummary{
			P50:  h.Percentile(50),
			P90:  h.Percentile(90),
			P99:  h.Percentile(99),
			Max:  h.Max(),
			Mean: math.Round(h.Mean()*10) / 10,
		},
	}
	if d > 0 {
		s.RPS = math.Round(float64(requests)/d.Seconds()*10) / 10
	}
	return s
}

// writeText prints the human-readable summary.
func (s *summary) writeText(w io.Writer) error {
	target := s.Method
	if s.Tool != "" {
		target += " " + s.Tool
	}
	e := s.ErrorsByKind
	var b strings.Builder
	fmt.Fprintf(&b, "target       %s %s (server %q, protocol %s)\n", s.URL, target, s.Server, s.ProtocolVersion)
	fmt.Fprintf(&b, "load         %d sessions, %d workers\n", s.Sessions, s.Concurrency)
	fmt.Fprintf(&b, "requests     %d (ok %d)\n", s.Requests, s.OK)
	fmt.Fprintf(&b, "errors       %d (http %d, jsonrpc %d, tool %d, transport %d, protocol %d)\n",
		s.Errors, e.HTTP, e.JSONRPC, e.Tool, e.Transport, e.Protocol)
	fmt.Fprintf(&b, "duration     %.3fs\n", s.DurationS)
	fmt.Fprintf(&b, "throughput   %.1f req/s\n", s.RPS)
	l := s.LatencyUS
	fmt.Fprintf(&b, "latency µs   p50 %d  p90 %d  p99 %d  max %d  mean %.1f\n", l.P50, l.P90, l.P99, l.Max, l.Mean)
	if len(s.Tools) > 1 {
		fmt.Fprintf(&b, "per tool     %-22s %6s %9s %7s %9s %8s %8s %8s %8s\n",
			"(* mutating)", "weight", "requests", "errors", "req/s", "p50 µs", "p90 µs", "p99 µs", "max µs")
		for _, t := range s.Tools {
			name := t.Tool
			if t.Mutating {
				name += "*"
			}
			fmt.Fprintf(&b, "             %-22s %6d %9d %7d %9.1f %8d %8d %8d %8d\n",
				name, t.Weight, t.Requests, t.Errors, t.RPS, t.LatencyUS.P50, t.LatencyUS.P90, t.LatencyUS.P99, t.LatencyUS.Max)
		}
	}
	if n := s.Notifications; n != nil {
		fmt.Fprintf(&b, "notify       %d subscribers to %s: received %d of %d expected (%d mutations), missed %d, reconnects %d\n",
			n.Subscribers, n.URI, n.Received, n.Expected, n.Mutations, n.Missed, n.Reconnects)
		l := n.LatencyUS
		fmt.Fprintf(&b, "notify µs    p50 %d  p95 %d  p99 %d  max %d  mean %.1f\n", l.P50, l.P95, l.P99, l.Max, l.Mean)
		if n.LastError != "" {
			fmt.Fprintf(&b, "notify error %s\n", n.LastError)
		}
	}
	fmt.Fprintf(&b, "seed         %d\n", s.Seed)
	if len(s.ErrorSamples) > 0 {
		fmt.Fprintf(&b, "first distinct errors:\n")
		for _, m := range s.ErrorSamples {
			fmt.Fprintf(&b, "  %s\n", m)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// writeJSON prints the summary as one JSON line.
func (s *summary) writeJSON(w io.Writer) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}
