package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
	"github.com/mcp-runtime/mcp-runtime/internal/store/redistest"
)

func getReadyz(t *testing.T, url string) (int, readiness) {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r readiness
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("decode /readyz: %v", err)
	}
	return resp.StatusCode, r
}

// /readyz is 200 while the store answers and the schema is current; Redis
// down is reported as degraded but keeps the replica in the Service; a
// schema older than the binary needs takes it out (503).
func TestReadyz(t *testing.T) {
	t.Run("embedded store", func(t *testing.T) {
		url, _ := runServer(t, config.Default(), io.Discard)
		code, r := getReadyz(t, url)
		if code != 200 || r.Status != "ready" || r.Checks["store"].Status != "ok" || r.Checks["migrations"].Status != "disabled" || r.Checks["redis"].Status != "disabled" {
			t.Fatalf("%d %+v", code, r)
		}
	})
	t.Run("PostgreSQL and Redis, then Redis down, then an old schema", func(t *testing.T) {
		srv := redistest.Start(t)
		cfg := pgConfig(t)
		cfg.RedisURL = "redis://" + srv.Addr() + "/0"
		url, _ := runServer(t, cfg, io.Discard)
		if code, r := getReadyz(t, url); code != 200 || r.Checks["migrations"].Status != "ok" || r.Checks["redis"].Status != "ok" {
			t.Fatalf("all up: %d %+v", code, r)
		}
		srv.Stop()
		if code, r := getReadyz(t, url); code != 200 || r.Checks["redis"].Status != "degraded" {
			t.Fatalf("Redis down: %d %+v, want 200 with redis degraded", code, r)
		}
		conn, err := pgx.Connect(context.Background(), cfg.DatabaseURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), `DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version)`); err != nil {
			t.Fatal(err)
		}
		if code, r := getReadyz(t, url); code != 503 || r.Status != "not ready" || r.Checks["migrations"].Status != "error" {
			t.Fatalf("old schema: %d %+v, want 503 with migrations error", code, r)
		}
	})
}
