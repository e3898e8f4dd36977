package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcp-runtime/mcp-runtime/internal/transport"
)

// registerSharedSessionMetrics exports the counters of the Redis-shared
// client sessions (issue 7): what the origin replica queued for the
// subscribers' logs, what it appended, and what a full queue dropped —
// the one place a notification can be lost while Redis is up. They stay
// at zero without REDIS_URL.
func registerSharedSessionMetrics(reg prometheus.Registerer, tr *transport.Transport) error {
	counter := func(name, help string, v func(transport.RedisStats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v(tr.RedisStats())) })
	}
	for _, c := range []prometheus.Collector{
		counter("mcp_shared_session_updates_total",
			"Resource updates this replica queued for the Redis logs of subscribed shared client sessions.",
			func(s transport.RedisStats) int64 { return s.Updates }),
		counter("mcp_shared_session_notifications_total",
			"Notifications this replica appended to shared client sessions' Redis logs.",
			func(s transport.RedisStats) int64 { return s.Notified }),
		counter("mcp_shared_session_dropped_total",
			"Writes to shared client sessions' Redis logs dropped because the queue was full.",
			func(s transport.RedisStats) int64 { return s.Dropped }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
