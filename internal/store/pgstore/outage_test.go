package pgstore

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/netfault"
	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/pgtest"
	"github.com/mcp-runtime/mcp-runtime/internal/testutil"
)

func TestOutageAndRecovery(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	px := netfault.NewProxy(t, u.Host)
	u.Host = px.Addr()
	s := must(Open(t.Context(), u.String(), store.Options{}))(t)
	t.Cleanup(s.Close)
	put := func(ctx context.Context, key string) error {
		_, err := s.PutMemory(ctx, "t", store.PutMemory{Namespace: "ns", Key: key, Value: []byte(`1`)})
		return err
	}
	if err := put(t.Context(), "before"); err != nil {
		t.Fatal(err)
	}

	px.Cut()
	for _, key := range []string{"during-1", "during-2", "during-3"} {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		start := time.Now()
		err := put(ctx, key)
		cancel()
		if !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("put during the outage: got %v, want ErrUnavailable", err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("put during the outage took %v", took)
		}
	}

	px.Restore()
	// The pool has no signal of its own for a database that came back:
	// it finds out when a call gets a connection through.
	testutil.Eventually(t, testutil.Wait, "the store to recover after the database came back", func() bool {
		err := put(t.Context(), "after")
		if err != nil && !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("put after the database came back: got %v, want success or ErrUnavailable", err)
		}
		return err == nil
	})
	for _, key := range []string{"during-1", "during-2", "during-3"} {
		if _, err := s.GetMemory(t.Context(), "t", "ns", key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a put refused during the outage left %s: %v", key, err)
		}
	}
}
