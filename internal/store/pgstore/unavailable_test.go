package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// unreachableStore returns a store whose pool points at addr, where no
// PostgreSQL answers. Pools connect lazily, so creating it succeeds.
func unreachableStore(t *testing.T, addr string) *Store {
	t.Helper()
	cfg := must(pgxpoolConfig(fmt.Sprintf("postgres://postgres@%s/nowhere?sslmode=disable", addr)))(t)
	pool := newPoolFromConfig(t, cfg)
	return must(newStore(pool, store.Options{}))(t)
}

// closedPort returns a local address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// silentServer accepts connections and never answers, like a database
// host that is up but hung.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); l.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return l.Addr().String()
}

// wantUnavailable checks that a call failed as ErrUnavailable without
// naming where the database is.
func wantUnavailable(t *testing.T, what string, err error, addr string) {
	t.Helper()
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("%s: got %v, want ErrUnavailable", what, err)
	}
	host, port, _ := net.SplitHostPort(addr)
	if msg := err.Error(); strings.Contains(msg, host) || strings.Contains(msg, port) || strings.Contains(msg, "nowhere") {
		t.Fatalf("%s: error text %q names the database", what, msg)
	}
}

func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		addr func(*testing.T) string
	}{
		{"closed port", closedPort},
		{"server that never answers", silentServer},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := c.addr(t)
			s := unreachableStore(t, addr)
			calls := map[string]func(ctx context.Context) error{
				"ping": s.Ping,
				"get memory": func(ctx context.Context) error {
					_, err := s.GetMemory(ctx, "t", "ns", "k")
					return err
				},
				"create session": func(ctx context.Context) error {
					_, err := s.CreateSession(ctx, "t", store.NewSession{Task: "x", Initiator: "a"})
					return err
				},
				"insert traces": func(ctx context.Context) error {
					return s.InsertTraces(ctx, []store.Trace{{Tenant: "t", ID: "1", Tool: "x", Status: store.TraceOK}})
				},
			}
			for what, call := range calls {
				t.Run(what, func(t *testing.T) {
					t.Parallel()
					const deadline = 500 * time.Millisecond
					ctx, cancel := context.WithTimeout(t.Context(), deadline)
					defer cancel()
					start := time.Now()
					err := call(ctx)
					if took := time.Since(start); took > deadline+time.Second {
						t.Errorf("took %v with a %v deadline", took, deadline)
					}
					wantUnavailable(t, what, err, addr)
				})
			}
		})
	}
}

// After the server drops every connection (a restart, a failover), the
// pool must recover on its own: a call may fail as unavailable, but a
// later one on the same store succeeds.
func TestStoreRecoversAfterBackendsAreTerminated(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	s := must(Open(t.Context(), dbURL, store.Options{}))(t)
	t.Cleanup(s.Close)
	ctx := t.Context()
	// Hold several connections so there is more than one to lose.
	for i := range 4 {
		must(s.PutMemory(ctx, "t", store.PutMemory{Namespace: "ns", Key: fmt.Sprint(i), Value: []byte(`1`)}))(t)
	}
	dbName := must(pgx.ParseConfig(dbURL))(t).Database
	admin := must(pgx.Connect(ctx, pgtest.AdminURL()))(t)
	defer admin.Close(context.Background())
	var killed int
	err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = $1 AND pid <> pg_backend_pid()`, dbName).Scan(&killed)
	if err != nil || killed == 0 {
		t.Fatalf("terminated %d backends: %v", killed, err)
	}
	_, err = s.GetMemory(ctx, "t", "ns", "0")
	if err != nil && !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("first call after the backends died: got %v, want success or ErrUnavailable", err)
	}
	// The pool drops a dead connection when a call fails on it; there is
	// no signal to wait for, only calls that eventually succeed.
	testutil.Eventually(t, testutil.Wait, "the store to recover", func() bool {
		_, err := s.GetMemory(ctx, "t", "ns", "0")
		if err != nil && !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("the store did not recover: %v", err)
		}
		return err == nil
	})
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("ping after recovery: %v", err)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"no rows", pgx.ErrNoRows, false},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"cannot connect now", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), true},
		{"caller cancelled", fmt.Errorf("query: %w", context.Canceled), false},
		{"connection reset", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
	}
	for _, c := range cases {
		got := errors.Is(classify(c.err), store.ErrUnavailable)
		if got != c.unavailable {
			t.Errorf("%s: unavailable = %v, want %v", c.name, got, c.unavailable)
		}
		if !errors.Is(classify(c.err), c.err) {
			t.Errorf("%s: the cause is not kept in the chain", c.name)
		}
	}
	if msg := classify(&pgconn.PgError{Code: "57P01", Message: "db.internal:5432"}).Error(); strings.Contains(msg, "db.internal") {
		t.Errorf("unavailable error text %q carries the cause's", msg)
	}
}

// Open's errors are for the operator: they must still match
// ErrUnavailable, and say why.
func TestOpenOfUnreachableDatabaseSaysWhy(t *testing.T) {
	t.Parallel()
	addr := closedPort(t)
	_, err := Open(t.Context(), fmt.Sprintf("postgres://postgres@%s/x?sslmode=disable", addr), store.Options{})
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("got %v, want ErrUnavailable naming the cause", err)
	}
}

// A statement PostgreSQL refuses fails with an error whose text names the
// operation and the class of the failure, and never quotes the input: the
// tools log such errors, and PostgreSQL's messages can carry the key or
// part of the value (here a trigger puts both in its message, as the
// server's own input-syntax errors do).
func TestRefusedStatementQuotesNoInput(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := t.Context()
	_, err := s.pool.Exec(ctx, `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused %/%: %', NEW.namespace, NEW.key, NEW.value USING ERRCODE = '22023'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON memory_entries FOR EACH ROW EXECUTE FUNCTION refuse();
		ALTER TABLE agents ADD CONSTRAINT no_secret CHECK (id <> 'agent-secret-id')`)
	if err != nil {
		t.Fatal(err)
	}
	_, putErr := s.PutMemory(ctx, "t", store.PutMemory{Namespace: "ns-secret", Key: "key-secret", Value: json.RawMessage(`"value-secret"`)})
	_, regErr := s.RegisterAgent(ctx, "t", store.Agent{ID: "agent-secret-id", Description: "d"})
	for _, c := range []struct {
		err        error
		op, class  string
		mustNotSay []string
	}{
		{putErr, "put memory entry", "SQLSTATE 22023", []string{"secret"}},
		{regErr, "register agent", "SQLSTATE 23514 on table agents, constraint no_secret", []string{"agent-secret-id"}},
	} {
		var pgErr *pgconn.PgError
		if c.err == nil || !errors.As(c.err, &pgErr) {
			t.Fatalf("got %v, want an error carrying PostgreSQL's", c.err)
		}
		msg := c.err.Error()
		if !strings.Contains(msg, c.op) || !strings.Contains(msg, c.class) {
			t.Errorf("error %q does not name the operation %q and the class %q", msg, c.op, c.class)
		}
		for _, secret := range c.mustNotSay {
			if strings.Contains(msg, secret) {
				t.Errorf("error %q quotes the input (%q)", msg, secret)
			}
		}
	}
}
