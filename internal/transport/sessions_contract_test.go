package transport

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	th "github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// The contract every session store and its replicator keep, whether
// sessions live in this process or are shared through Redis: one suite,
// run against each implementation, so that the two cannot drift apart
// on what the transport core relies on.

// sessionBackend makes a transport on one session-store implementation.
type sessionBackend struct {
	name string
	make func(t *testing.T, mods ...func(*Options)) *harness
}

func sessionBackends() []sessionBackend {
	return []sessionBackend{
		{"memory", func(t *testing.T, mods ...func(*Options)) *harness {
			return newHarness(t, withOpts(func(o *Options) {
				for _, m := range mods {
					m(o)
				}
			}))
		}},
		{"redis", func(t *testing.T, mods ...func(*Options)) *harness {
			rdb := testRedis(t, testRedisAddr)
			return replica(t, rdb, testPrefix(t, rdb), mods...)
		}},
	}
}

func TestSessionStoreContract(t *testing.T) {
	for _, b := range sessionBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range sessionContract {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, b.make)
				})
			}
		})
	}
}

// create makes a session of principal in tenant directly in h's store.
func create(t *testing.T, h *harness, tenant, principal string) (*ClientSession, error) {
	t.Helper()
	return h.tr.Sessions().Create(context.Background(), SessionInit{
		Version: protocol.LatestVersion, EventLogSize: 16, Tenant: tenant, Principal: principal, index: h.tr.subs,
	})
}

func mustCreate(t *testing.T, h *harness, tenant, principal string) *ClientSession {
	t.Helper()
	s, err := create(t, h, tenant, principal)
	if err != nil {
		t.Fatalf("create a session of %s/%s: %v", tenant, principal, err)
	}
	return s
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

var sessionContract = []struct {
	name string
	run  func(t *testing.T, newH func(*testing.T, ...func(*Options)) *harness)
}{
	{"created, found, deleted", func(t *testing.T, newH func(*testing.T, ...func(*Options)) *harness) {
		h := newH(t)
		store, ctx := h.tr.Sessions(), context.Background()
		s := mustCreate(t, h, "t1", "p1")
		if !possibleSessionID(s.ID()) {
			t.Fatalf("session id %q is not one NewSessionID makes", s.ID())
		}
		if got, err := store.Get(ctx, s.ID()); err != nil || got != s {
			t.Fatalf("Get: %p, %v; want the created session", got, err)
		}
		var seen []string
		store.Each(func(c *ClientSession) bool { seen = append(seen, c.ID()); return true })
		if !slices.Equal(seen, []string{s.ID()}) || store.Len() != 1 {
			t.Fatalf("Each saw %v, Len %d; want the one session", seen, store.Len())
		}
		if err := store.Delete(ctx, s.ID()); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if !s.Ended() {
			t.Fatal("a deleted session has not ended")
		}
		_, err := store.Get(ctx, s.ID())
		wantErr(t, "Get after Delete", err, ErrSessionNotFound)
		wantErr(t, "Delete again", store.Delete(ctx, s.ID()), ErrSessionNotFound)
		if n := store.Len(); n != 0 {
			t.Fatalf("Len after Delete: %d", n)
		}
	}},
	{"unknown ids are not found", func(t *testing.T, newH func(*testing.T, ...func(*Options)) *harness) {
		h := newH(t)
		id, err := NewSessionID()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{id, "not-a-session-id", ""} {
			_, err := h.tr.Sessions().Get(context.Background(), id)
			wantErr(t, "Get "+id, err, ErrSessionNotFound)
		}
	}},
	{"shares per principal and per tenant", func(t *testing.T, newH func(*testing.T, ...func(*Options)) *harness) {
		h := newH(t, func(o *Options) { o.MaxSessionsPerPrincipal, o.MaxSessionsPerTenant = 2, 3 })
		sessionCapSteps(t, h.tr.Sessions())
	}},
	{"the session limit", func(t *testing.T, newH func(*testing.T, ...func(*Options)) *harness) {
		h := newH(t, func(o *Options) { o.MaxSessions = 2 })
		mustCreate(t, h, "t1", "p1")
		mustCreate(t, h, "t1", "p2")
		_, err := create(t, h, "t1", "p3")
		wantErr(t, "a session over the limit", err, ErrTooManySessions)
	}},
	{"no sessions after Close", func(t *testing.T, newH func(*testing.T, ...func(*Options)) *harness) {
		h := newH(t)
		s := mustCreate(t, h, "t1", "p1")
		h.tr.Sessions().Close()
		if !s.Ended() {
			t.Fatal("Close left a session running")
		}
		_, err := create(t, h, "t1", "p1")
		wantErr(t, "Create after Close", err, ErrClosed)
	}},
	{"subscribers are found", func(t *testing.T, newH func(*testing.T, ...func(*Options)) *harness) {
		h := newH(t)
		ctx := context.Background()
		s := mustCreate(t, h, "t1", "p1")
		const uri = "test://contract"
		if err := s.Subscribe(uri); err != nil {
			t.Fatal(err)
		}
		subscribers := func(tenant string) []string {
			t.Helper()
			ids, err := h.tr.Subscribers(ctx, tenant, uri)
			if err != nil {
				t.Fatalf("Subscribers: %v", err)
			}
			return ids
		}
		if got := subscribers("t1"); !slices.Equal(got, []string{s.ID()}) {
			t.Fatalf("subscribers after Subscribe: %v", got)
		}
		if got := subscribers("t2"); len(got) != 0 {
			t.Fatalf("another tenant's subscribers: %v", got)
		}
		s.Unsubscribe(uri)
		if got := subscribers("t1"); len(got) != 0 {
			t.Fatalf("subscribers after Unsubscribe: %v", got)
		}
	}},
	{"a resource update reaches the subscriber's stream", func(t *testing.T, newH func(*testing.T, ...func(*Options)) *harness) {
		h := newH(t)
		sid := h.Initialize(t)
		const uri = "test://contract-update"
		h.Subscribe(t, sid, uri)
		c := h.OpenGET(t, sid)
		defer c.Close()
		if _, err := h.tr.ResourceUpdated("", uri); err != nil {
			t.Fatal(err)
		}
		if _, m := c.NextMessage(t); m.Method != protocol.NotificationResourcesUpdated {
			t.Fatalf("GET stream got %q, want %s", m.Method, protocol.NotificationResourcesUpdated)
		}
	}},
	{"a list change reaches every session once", func(t *testing.T, newH func(*testing.T, ...func(*Options)) *harness) {
		h := newH(t)
		sid := h.Initialize(t)
		c := h.OpenGET(t, sid)
		defer c.Close()
		if n, err := h.tr.ToolsListChanged(); err != nil || n != 1 {
			t.Fatalf("ToolsListChanged: %d, %v; want 1 session told", n, err)
		}
		if _, m := c.NextMessage(t); m.Method != protocol.NotificationToolsListChanged {
			t.Fatalf("GET stream got %q, want %s", m.Method, protocol.NotificationToolsListChanged)
		}
	}},
	{"a response or cancellation nothing waits for is accepted", func(t *testing.T, newH func(*testing.T, ...func(*Options)) *harness) {
		h := newH(t)
		sid := h.Initialize(t)
		for _, body := range [][]byte{
			[]byte(`{"jsonrpc":"2.0","id":"s12345","result":{}}`),
			th.RPC(nil, protocol.NotificationCancelled, map[string]any{"requestId": 99}),
		} {
			if r := h.Post(t, sid, body); r.Status != http.StatusAccepted {
				t.Fatalf("POST %s: %s", body, r)
			}
		}
	}},
}
