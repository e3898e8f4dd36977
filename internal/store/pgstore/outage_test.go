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
	deadline := time.Now().Add(10 * time.Second)
	for put(t.Context(), "after") != nil {
		if time.Now().After(deadline) {
			t.Fatal("the store did not recover after the database came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, key := range []string{"during-1", "during-2", "during-3"} {
		if _, err := s.GetMemory(t.Context(), "t", "ns", key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a put refused during the outage left %s: %v", key, err)
		}
	}
}
