package main

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mcp-runtime/mcp-runtime/internal/auth"
	"github.com/mcp-runtime/mcp-runtime/internal/connlimit"
	"github.com/mcp-runtime/mcp-runtime/internal/pipeline"
	"github.com/mcp-runtime/mcp-runtime/internal/runtime/cache"
	"github.com/mcp-runtime/mcp-runtime/internal/statesync"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

// metrics is what /metrics serves (docs/adr/0029-metrics-at-scrape-time.md). Counters on the
// request path are updated as calls finish; everything a component
// already counts is read from its Stats when Prometheus scrapes, so the
// hot path pays nothing for it.
type metrics struct {
	reg          *prometheus.Registry
	httpRequests *prometheus.CounterVec
	toolCalls    *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec
	// The series a request updates, by their label values: a vector's
	// WithLabelValues checks, hashes and looks up its values under a lock
	// on every call, three times a tools/call
	// (docs/adr/0056-cheap-by-default.md). As many as the vectors hold,
	// whose series are never deleted.
	httpSeries sync.Map // httpKey → prometheus.Counter
	callSeries sync.Map // callKey → *callSeries
}

type httpKey struct {
	method string
	status int
}

type callKey struct {
	tool, category, status string
}

type callSeries struct {
	calls    prometheus.Counter
	duration prometheus.Observer
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_http_requests_total",
			Help: "Requests to the MCP endpoint by HTTP method and status, counted when answered (an SSE response when its stream ends).",
		}, []string{"method", "status"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_tool_calls_total",
			Help: "tools/call by tool (canonical name), timeout category and status (ok, or the envelope's error code).",
		}, []string{"tool", "category", "status"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcp_tool_call_duration_seconds",
			Help:    "tools/call duration by tool and timeout category, rejected calls included.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120},
		}, []string{"tool", "category"}),
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.httpRequests, m.toolCalls, m.toolDuration)
	return m
}

// observeHTTP is the transport's Observe hook.
func (m *metrics) observeHTTP(method string, status int) {
	k := httpKey{method, status}
	c, ok := m.httpSeries.Load(k)
	if !ok {
		c, _ = m.httpSeries.LoadOrStore(k, m.httpRequests.WithLabelValues(method, strconv.Itoa(status)))
	}
	c.(prometheus.Counter).Inc()
}

// observeCall counts a finished tools/call.
func (m *metrics) observeCall(c pipeline.CallRecord) {
	status := "ok"
	if c.ErrorCode != "" {
		status = string(c.ErrorCode)
	}
	k := callKey{c.Tool, string(c.Category), status}
	v, ok := m.callSeries.Load(k)
	if !ok {
		v, _ = m.callSeries.LoadOrStore(k, &callSeries{
			calls:    m.toolCalls.WithLabelValues(k.tool, k.category, k.status),
			duration: m.toolDuration.WithLabelValues(k.tool, k.category),
		})
	}
	s := v.(*callSeries)
	s.calls.Inc()
	if eo, ok := s.duration.(prometheus.ExemplarObserver); ok && c.TraceID != "" {
		// The exemplar links a slow bucket to its trace; Prometheus reads
		// it in the OpenMetrics format (docs/adr/0046-opentelemetry.md).
		eo.ObserveWithExemplar(c.Duration.Seconds(), prometheus.Labels{"trace_id": c.TraceID})
		return
	}
	s.duration.Observe(c.Duration.Seconds())
}

// components registers the metrics read from the components' own
// counters at scrape time.
func (m *metrics) components(tr *transport.Transport, st *state, notes *statesync.Notifier) error {
	list := []prometheus.Collector{
		// Client sessions and streams.
		gauge("mcp_client_sessions", "Client sessions this replica holds (with shared sessions: its local copies).",
			func() float64 { return float64(tr.Sessions().Len()) }),
		gauge("mcp_sse_streams", "SSE responses being served now (GET streams and streamed POST responses).",
			func() float64 { return float64(tr.OpenStreams()) }),
		// Notifications.
		counter("mcp_notifications_published_total", "Resource updates published by this replica's mutations.",
			func() float64 { return float64(notes.Stats().Published) }),
		counter("mcp_notifications_delivered_total", "Resource-update notifications queued to subscribed client sessions in this process.",
			func() float64 { return float64(notes.Stats().Delivered) }),
		gauge("mcp_notifications_waiting", "Resource updates waiting for State Sync's delivery goroutine, all tenants together (each tenant's queue holds 1024; beyond, a mutation delivers its own).",
			func() float64 { return float64(notes.Stats().Waiting) }),
		counter("mcp_shared_session_updates_total", "Resource updates this replica queued for the Redis logs of subscribed shared client sessions.",
			func() float64 { return float64(tr.SharingStats().Updates) }),
		counter("mcp_shared_session_notifications_total", "Notifications this replica appended to shared client sessions' Redis logs.",
			func() float64 { return float64(tr.SharingStats().Notified) }),
		counter("mcp_shared_session_dropped_total", "Writes to shared client sessions' Redis logs dropped because the queue was full.",
			func() float64 { return float64(tr.SharingStats().Dropped) }),
		// The two-tier cache.
		counter("mcp_cache_hits_total", "In-process cache hits.", func() float64 { return float64(st.backend.Stats().L1.HitCount) }),
		counter("mcp_cache_misses_total", "In-process cache misses, expired entries included.", func() float64 { return float64(st.backend.Stats().L1.MissCount) }),
		counter("mcp_cache_evictions_total", "In-process cache entries evicted for room.", func() float64 { return float64(st.backend.Stats().L1.EvictionCount) }),
		gauge("mcp_cache_entries", "In-process cache entries.", func() float64 { return float64(st.backend.Stats().L1.EntryCount) }),
		gauge("mcp_cache_size_bytes", "In-process cache size.", func() float64 { return float64(st.backend.Stats().L1.CurrentSizeBytes) }),
		gauge("mcp_cache_pressure_level", "In-process cache pressure: 0 low, 1 medium, 2 high, 3 critical.",
			func() float64 { return pressureValue(st.backend.Stats().L1.PressureLevel) }),
		counter("mcp_cache_redis_hits_total", "Redis (second tier) hits.", func() float64 { return float64(st.backend.Stats().RedisHits) }),
		counter("mcp_cache_redis_misses_total", "Redis (second tier) misses.", func() float64 { return float64(st.backend.Stats().RedisMisses) }),
		counter("mcp_cache_redis_oversized_total", "Values kept out of Redis because they exceed redis.maxValueBytes.", func() float64 { return float64(st.backend.Stats().RedisOversized) }),
		// Redis degradations.
		counter("mcp_redis_degradations_total", "Calls that fell back to the database because Redis failed, timed out or was marked degraded.",
			func() float64 { return float64(st.backend.Stats().RedisErrors) }),
		gauge("mcp_redis_degraded", "1 while this replica considers Redis degraded.", func() float64 {
			if st.backend.Stats().RedisDegraded {
				return 1
			}
			return 0
		}),
		// Traces.
		counter("mcp_trace_queue_dropped_total", "Traces dropped because the queue was full.",
			func() float64 { return float64(st.recorder.Stats().Dropped) }),
		counter("mcp_traces_written_total", "Traces written to the store.", func() float64 { return float64(st.recorder.Stats().Written) }),
		gauge("mcp_trace_queue_length", "Traces waiting to be written.", func() float64 { return float64(st.recorder.Stats().Queued) }),
		counter("mcp_traces_sampled_out_total", "Successful calls not traced because of traces.sampleRate.",
			func() float64 { return float64(st.recorder.Stats().SampledOut) }),
		counter("mcp_traces_evicted_total", "Traces the embedded store dropped, earliest first, to hold at most traces.maxInMemory (0 with PostgreSQL).",
			func() float64 { return float64(st.traceStats().Evicted) }),
		gauge("mcp_traces_in_memory", "Traces the embedded store holds (0 with PostgreSQL).",
			func() float64 { return float64(st.traceStats().Held) }),
	}
	return m.register(list...)
}

// pressureValue is a cache pressure level as a number for a gauge.
func pressureValue(l cache.PressureLevel) float64 {
	switch l {
	case cache.PressureMedium:
		return 1
	case cache.PressureHigh:
		return 2
	case cache.PressureCritical:
		return 3
	}
	return 0
}

// counter and gauge are metrics read from a component's counters when
// Prometheus scrapes.
func counter(name, help string, v func() float64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, v)
}

func gauge(name, help string, v func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, v)
}

// connections registers the connection cap's metrics (transport.maxConnections).
func (m *metrics) connections(stats func() connlimit.Stats) error {
	return m.register(
		gauge("mcp_connections_open", "HTTP connections open now.", func() float64 { return float64(stats().Open) }),
		counter("mcp_connections_evicted_total",
			"Connections closed at transport.maxConnections to make room for a new one, because they had waited longest for their client.",
			func() float64 { return float64(stats().Evicted) }),
		counter("mcp_connections_refused_total", "New connections refused at transport.maxConnections because every open one was busy.",
			func() float64 { return float64(stats().Refused) }),
	)
}

// auth registers the authenticator's metrics: what reached the store, and
// what the failure and lookup budgets turned away.
func (m *metrics) auth(stats func() auth.Stats) error {
	return m.register(
		counter("mcp_auth_key_lookups_total", "Lookups of API keys created through the admin API that reached the store.",
			func() float64 { return float64(stats().KeyLookups) }),
		counter("mcp_auth_key_lookups_deferred_total", "Lookups of unknown API keys refused (503) because auth.apiKeyLookupsPerSecond was spent.",
			func() float64 { return float64(stats().LookupsDeferred) }),
		counter("mcp_auth_address_limited_total", "Requests refused (429) because their address had spent rateLimits.unauthenticated.",
			func() float64 { return float64(stats().AddressLimited) }),
	)
}

// register registers every collector.
func (m *metrics) register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
