package main

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/redisconn"
)

// readyTimeout bounds each readiness check: a probe that hangs is a
// failed probe anyway, and must not pile up requests on a sick database.
const readyTimeout = 2 * time.Second

// check is one line of the readiness answer.
type check struct {
	Status string `json:"status"` // ok, error, degraded or disabled
	Error  string `json:"error,omitempty"`
}

// readiness is the body of /readyz.
type readiness struct {
	Status string           `json:"status"` // ready or not ready
	Checks map[string]check `json:"checks"`
}

// healthz answers while the process serves requests (liveness).
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

// readyz answers 200 when this replica can serve calls: the store answers
// and (PostgreSQL) its schema has every migration this binary needs.
// Redis trouble is reported but does not fail readiness: calls degrade to
// the database, and taking every replica out of the Service because the
// cache is down would turn a slowdown into an outage (INV-MCP-XC-002).
// Error texts are generic: the body is unauthenticated, and a database
// error can name hosts.
func (a *app) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	res := readiness{Status: "ready", Checks: map[string]check{}}
	fail := func(name, msg string) {
		res.Status = "not ready"
		res.Checks[name] = check{Status: "error", Error: msg}
	}
	if err := a.state.backend.Ping(ctx); err != nil {
		a.log.Warn().Err(err).Msg("readiness: the store does not answer")
		fail("store", "the store does not answer")
	} else {
		res.Checks["store"] = check{Status: "ok"}
	}
	switch {
	case a.state.pg == nil:
		res.Checks["migrations"] = check{Status: "disabled"}
	default:
		ok, err := a.state.pg.MigrationsApplied(ctx)
		switch {
		case err != nil:
			a.log.Warn().Err(err).Msg("readiness: cannot read the schema version")
			fail("migrations", "cannot read the schema version")
		case !ok:
			fail("migrations", "the database schema is older than this binary needs")
		default:
			res.Checks["migrations"] = check{Status: "ok"}
		}
	}
	switch {
	case a.state.redis == nil:
		res.Checks["redis"] = check{Status: "disabled"}
	default:
		// Through the connection: while its breaker is open this answers
		// at once, as every call does, and a ping that fails counts
		// towards Redis's health like any other operation.
		conn := a.state.redis
		if err := conn.Do(ctx, redisconn.Session, func(ctx context.Context) error { return conn.Client().Ping(ctx).Err() }); err != nil {
			res.Checks["redis"] = check{Status: "degraded", Error: "Redis does not answer; calls use the database and this replica's own state"}
		} else {
			res.Checks["redis"] = check{Status: "ok"}
		}
	}
	status := http.StatusOK
	if res.Status != "ready" {
		status = http.StatusServiceUnavailable
	}
	body, _ := json.Marshal(res) // strings only
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
