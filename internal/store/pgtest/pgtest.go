// Package pgtest gives tests a PostgreSQL database of their own. It is a
// normal package so tests of several packages can share it; nothing
// outside _test.go files should import it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvAdminURL names the variable holding the URL of a database on the
// test server with the right to create databases.
const EnvAdminURL = "MCP_TEST_DATABASE_URL"

// DefaultAdminURL is the local server the development machines run.
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL returns the admin URL tests use.
func AdminURL() string {
	if u := os.Getenv(EnvAdminURL); u != "" {
		return u
	}
	return DefaultAdminURL
}

// NewDatabase creates an empty database with a random name, drops it
// (closing any connection left open) when the test ends, and returns its
// URL. It fails the test with instructions if PostgreSQL is not running.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := AdminURL()
	name := "mcp_test_" + randomHex(8)
	if err := exec(admin, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		// FORCE closes connections a test left open (a pool not yet
		// closed, a backend of a failed test) instead of failing.
		if err := exec(admin, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	dbURL, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dbURL
}

// exec runs one statement on a fresh admin connection: CREATE and DROP
// DATABASE cannot run inside a transaction block, and a connection of
// our own keeps them out of any pool's state.
func exec(admin, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("cannot connect to PostgreSQL at %s (set %s to another admin URL): %w\n"+
			"start the local server with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start",
			redact(admin), EnvAdminURL, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// withDatabase returns admin with its database replaced by name; admin
// may be a URL or a keyword/value connection string.
func withDatabase(admin, name string) (string, error) {
	if !strings.Contains(admin, "://") {
		return admin + " dbname=" + name, nil
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", EnvAdminURL, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// redact drops a password from a URL before it goes into a test log.
func redact(admin string) string {
	u, err := url.Parse(admin)
	if err != nil || u.User == nil {
		return admin
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
