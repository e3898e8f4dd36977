// Package storetest is the contract suite every store.Store
// implementation must pass: the in-memory store and the PostgreSQL store
// run the same tests, so a behaviour a client can notice never depends on
// which one a deployment uses.
//
// Run opens one store and shares it between parallel subtests; each
// subtest works in tenants of its own, which is also how the suite checks
// tenant isolation. Only the purge tests look across tenants, and they
// only touch rows no other subtest creates (expired entries, traces from
// before 2002).
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

// Run runs the contract suite against the store open returns. open must
// return a usable store that reads the time from clock
// (store.Options.Clock), which the suite controls; Run calls it once and
// closes nothing itself (open registers any cleanup with t.Cleanup).
func Run(t *testing.T, open func(t *testing.T, clock func() time.Time) store.Store) {
	// The clock starts at a fixed instant, so a failing run stamps the
	// same times when it is run again, and steps one microsecond, the
	// resolution both stores keep, at every reading: of two writes the
	// later one is stamped later however fast the machine runs (on the
	// wall clock two writes within a microsecond tie, and a tie goes to
	// the id, not to the order of the writes).
	c := testutil.NewClock(time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC), time.Microsecond)
	s := open(t, c.Now)
	h := &harness{s: s, clock: c, run: store.NewID()}

	groups := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"ping", testPing},
		{"memory", testMemory},
		{"memory validation", testMemoryValidation},
		{"JSON documents", testJSONDocuments},
		{"memory expiry", testMemoryExpiry},
		{"memory list", testMemoryList},
		{"memory search", testMemorySearch},
		{"memory delete", testMemoryDelete},
		{"memory recent", testMemoryRecent},
		{"sessions", testSessions},
		{"sessions list", testSessionsList},
		{"agents", testAgents},
		{"traces", testTraces},
		{"upstreams", testUpstreams},
		{"API keys", testAPIKeys},
		{"concurrency", testConcurrency},
		{"tenant isolation", testIsolation},
		{"cancelled context", testCancelled},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.fn(t, h)
		})
	}
}

// harness is the state the subtests share: the store under test, the
// clock it reads, and a source of tenant names no other subtest (or
// earlier run against the same database) uses.
type harness struct {
	s     store.Store
	clock *testutil.Clock
	run   string
	n     atomic.Int64
}

// tenant returns a fresh tenant name.
func (h *harness) tenant() string {
	return fmt.Sprintf("storetest-%s-%d", h.run, h.n.Add(1))
}

func ctx(t testing.TB) context.Context { return t.Context() }

// must takes a call's results and returns a function that fails the test
// on its error and otherwise returns its value: must(s.Get(…))(t). (Go
// does not let a multi-value call share an argument list with t.)
func must[T any](v T, err error) func(t testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

// noErr fails the test on err.
func noErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// wantIs fails the test unless errors.Is(err, target).
func wantIs(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want %v", err, target)
	}
}

// wantField fails the test unless err is a *store.FieldError on field.
func wantField(t testing.TB, err error, field string) {
	t.Helper()
	var fe *store.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("got error %v, want a *store.FieldError on %q", err, field)
	}
	if fe.Field != field {
		t.Fatalf("got a FieldError on %q (%v), want one on %q", fe.Field, fe, field)
	}
}

// jsonEqual compares JSON documents by meaning, since PostgreSQL's jsonb
// normalizes whitespace and key order.
func jsonEqual(t testing.TB, got, want json.RawMessage) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("returned JSON %q does not parse: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("expected JSON %q does not parse: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got JSON %s, want %s", got, want)
	}
}

// equal fails the test unless got and want are deeply equal.
func equal[T any](t testing.TB, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %#v, want %#v", what, got, want)
	}
}

func ptr[T any](v T) *T { return &v }

func testPing(t *testing.T, h *harness) {
	noErr(t, h.s.Ping(ctx(t)))
}

func testCancelled(t *testing.T, h *harness) {
	tn := h.tenant()
	c, cancel := context.WithCancel(ctx(t))
	cancel()
	if _, err := h.s.PutMemory(c, tn, store.PutMemory{Namespace: "ns", Key: "k", Value: json.RawMessage(`1`)}); err == nil {
		t.Fatal("PutMemory with a cancelled context succeeded")
	}
	_, err := h.s.GetMemory(ctx(t), tn, "ns", "k")
	wantIs(t, err, store.ErrNotFound)
	if _, err := h.s.CreateSession(c, tn, store.NewSession{Task: "t", Initiator: "a"}); err == nil {
		t.Fatal("CreateSession with a cancelled context succeeded")
	}
	page := must(h.s.ListSessions(ctx(t), tn, store.ListSessions{}))(t)
	if len(page.Items) != 0 {
		t.Fatalf("a cancelled CreateSession left %d sessions", len(page.Items))
	}
}
