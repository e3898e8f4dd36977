// Package sessiontest is the contract every session store of the
// transport keeps, with its replicator, whether sessions live in this
// process or are shared between replicas (transport.Sharing): one suite,
// run against each implementation — the in-memory store by the
// transport's tests, a shared one by its own package's — so that they
// cannot drift apart on what the transport core relies on, as storetest
// does for the stores. Options and Serve make the test transports of
// both.
package sessiontest

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/mcp-runtime/mcp-runtime/internal/handlers"
	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/transport"
	"github.com/mcp-runtime/mcp-runtime/internal/transport/transporttest"
)

// NewTransport makes a transport on the session store under test, with
// the harness's settings changed by mods, served by the harness of
// package transporttest; both close with t.
type NewTransport func(t *testing.T, mods ...func(*transport.Options)) (*transport.Transport, *transporttest.Harness)

// Options are the settings a test transport starts from: small, so that
// the tests reach the bounds (package transporttest's).
func Options() transport.Options {
	return transport.Options{
		MaxBodyBytes:       transporttest.MaxBodyBytes,
		SessionIdleTimeout: transporttest.SessionIdleTimeout,
		KeepAliveInterval:  transporttest.KeepAliveInterval,
		EventLogSize:       transporttest.EventLogSize,
		MaxSessions:        transporttest.MaxSessions,
		Logger:             transporttest.Logger(),
	}
}

// Serve makes a transport with o and serves it with the harness of
// package transporttest; both close with tb.
func Serve(tb testing.TB, o transport.Options) (*transport.Transport, *transporttest.Harness) {
	tb.Helper()
	var tr *transport.Transport
	h := transporttest.New(tb, transporttest.Config{}, func(srv *handlers.Server) (transporttest.Transport, error) {
		var err error
		tr, err = transport.New(srv, o)
		return tr, err
	})
	return tr, h
}

// Run runs the contract against the transports newTransport makes, each
// case on a transport of its own, in parallel.
func Run(t *testing.T, newTransport NewTransport) {
	for _, tc := range contract() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newTransport)
		})
	}
}

// create makes a session of principal in tenant directly in tr's store.
func create(tr *transport.Transport, tenant, principal string) (*transport.ClientSession, error) {
	return tr.Sessions().Create(context.Background(), transport.SessionInit{
		Version: protocol.LatestVersion, EventLogSize: 16, Tenant: tenant, Principal: principal,
	})
}

func mustCreate(t *testing.T, tr *transport.Transport, tenant, principal string) *transport.ClientSession {
	t.Helper()
	s, err := create(tr, tenant, principal)
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

// madeByNewSessionID reports whether id has the form of the ids
// transport.NewSessionID makes: 16 bytes in unpadded base64url.
func madeByNewSessionID(id string) bool {
	var b [16]byte
	n, err := base64.RawURLEncoding.Strict().Decode(b[:], []byte(id))
	return err == nil && n == len(b) && len(id) == base64.RawURLEncoding.EncodedLen(len(b))
}

type contractCase struct {
	name string
	run  func(t *testing.T, newTransport NewTransport)
}

func contract() []contractCase {
	return []contractCase{
		{"created, found, deleted", func(t *testing.T, newTransport NewTransport) {
			tr, _ := newTransport(t)
			store, ctx := tr.Sessions(), context.Background()
			s := mustCreate(t, tr, "t1", "p1")
			if !madeByNewSessionID(s.ID()) {
				t.Fatalf("session id %q is not one NewSessionID makes", s.ID())
			}
			if got, err := store.Get(ctx, s.ID()); err != nil || got != s {
				t.Fatalf("Get: %p, %v; want the created session", got, err)
			}
			var seen []string
			store.Each(func(c *transport.ClientSession) bool { seen = append(seen, c.ID()); return true })
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
			wantErr(t, "Get after Delete", err, transport.ErrSessionNotFound)
			wantErr(t, "Delete again", store.Delete(ctx, s.ID()), transport.ErrSessionNotFound)
			if n := store.Len(); n != 0 {
				t.Fatalf("Len after Delete: %d", n)
			}
		}},
		{"unknown ids are not found", func(t *testing.T, newTransport NewTransport) {
			tr, _ := newTransport(t)
			id, err := transport.NewSessionID()
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{id, "not-a-session-id", ""} {
				_, err := tr.Sessions().Get(context.Background(), id)
				wantErr(t, "Get "+id, err, transport.ErrSessionNotFound)
			}
		}},
		{"shares per principal and per tenant", func(t *testing.T, newTransport NewTransport) {
			tr, _ := newTransport(t, func(o *transport.Options) { o.MaxSessionsPerPrincipal, o.MaxSessionsPerTenant = 2, 3 })
			CapSteps(t, tr.Sessions())
		}},
		{"the session limit", func(t *testing.T, newTransport NewTransport) {
			tr, _ := newTransport(t, func(o *transport.Options) { o.MaxSessions = 2 })
			mustCreate(t, tr, "t1", "p1")
			mustCreate(t, tr, "t1", "p2")
			_, err := create(tr, "t1", "p3")
			wantErr(t, "a session over the limit", err, transport.ErrTooManySessions)
		}},
		{"no sessions after Close", func(t *testing.T, newTransport NewTransport) {
			tr, _ := newTransport(t)
			s := mustCreate(t, tr, "t1", "p1")
			tr.Sessions().Close()
			if !s.Ended() {
				t.Fatal("Close left a session running")
			}
			_, err := create(tr, "t1", "p1")
			wantErr(t, "Create after Close", err, transport.ErrClosed)
		}},
		{"subscribers are found", func(t *testing.T, newTransport NewTransport) {
			tr, _ := newTransport(t)
			ctx := context.Background()
			s := mustCreate(t, tr, "t1", "p1")
			const uri = "test://contract"
			if err := s.Subscribe(uri); err != nil {
				t.Fatal(err)
			}
			subscribers := func(tenant string) []string {
				t.Helper()
				ids, err := tr.Subscribers(ctx, tenant, uri)
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
		{"a resource update reaches the subscriber's stream", func(t *testing.T, newTransport NewTransport) {
			tr, h := newTransport(t)
			sid := h.Initialize(t)
			const uri = "test://contract-update"
			h.Subscribe(t, sid, uri)
			c := h.OpenGET(t, sid)
			defer c.Close()
			if _, err := tr.ResourceUpdated("", uri); err != nil {
				t.Fatal(err)
			}
			if _, m := c.NextMessage(t); m.Method != protocol.NotificationResourcesUpdated {
				t.Fatalf("GET stream got %q, want %s", m.Method, protocol.NotificationResourcesUpdated)
			}
		}},
		{"a list change reaches every session once", func(t *testing.T, newTransport NewTransport) {
			tr, h := newTransport(t)
			sid := h.Initialize(t)
			c := h.OpenGET(t, sid)
			defer c.Close()
			if n, err := tr.ToolsListChanged(); err != nil || n != 1 {
				t.Fatalf("ToolsListChanged: %d, %v; want 1 session told", n, err)
			}
			if _, m := c.NextMessage(t); m.Method != protocol.NotificationToolsListChanged {
				t.Fatalf("GET stream got %q, want %s", m.Method, protocol.NotificationToolsListChanged)
			}
		}},
		{"a response or cancellation nothing waits for is accepted", func(t *testing.T, newTransport NewTransport) {
			_, h := newTransport(t)
			sid := h.Initialize(t)
			for _, body := range [][]byte{
				[]byte(`{"jsonrpc":"2.0","id":"s12345","result":{}}`),
				transporttest.RPC(nil, protocol.NotificationCancelled, map[string]any{"requestId": 99}),
			} {
				if r := h.Post(t, sid, body); r.Status != http.StatusAccepted {
					t.Fatalf("POST %s: %s", body, r)
				}
			}
		}},
	}
}

// CapSteps drives a store whose caps are 2 per principal and 3 per
// tenant (docs/adr/0027-session-caps.md): a principal's third session is
// refused, then its tenant's fourth, whoever asks; another tenant is
// unaffected; a DELETE frees a place in both. Given several stores
// (replicas sharing their sessions), it alternates between them.
func CapSteps(t *testing.T, stores ...transport.SessionStore) {
	t.Helper()
	ctx := context.Background()
	n := 0
	create := func(principal, tenant string) (*transport.ClientSession, error) {
		n++ // alternate between the stores (replicas)
		return stores[n%len(stores)].Create(ctx, transport.SessionInit{Version: "2025-11-25", Principal: principal, Tenant: tenant, EventLogSize: 8})
	}
	first, err := create("apikey:a", "t1")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		principal, tenant string
		want              error
	}{
		{"apikey:a", "t1", nil},
		{"apikey:a", "t1", transport.ErrPrincipalSessions},
		{"apikey:a", "t1", transport.ErrPrincipalSessions},
		{"apikey:b", "t1", nil},
		{"apikey:b", "t1", transport.ErrTenantSessions},
		{"apikey:c", "t1", transport.ErrTenantSessions},
		{"apikey:d", "t2", nil},
		{"apikey:d", "t2", nil},
	}
	for i, st := range steps {
		if _, err := create(st.principal, st.tenant); !errors.Is(err, st.want) || (st.want == nil) != (err == nil) {
			t.Fatalf("step %d: %s in %s: %v, want %v", i, st.principal, st.tenant, err, st.want)
		}
	}
	// DELETE, as the transport serves it: the session looked up, then
	// ended (on the other replica than the one that made it).
	if _, err := stores[0].Get(ctx, first.ID()); err != nil {
		t.Fatal(err)
	}
	if err := stores[0].Delete(ctx, first.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := create("apikey:b", "t1"); err != nil {
		t.Fatalf("after DELETE freed a place in the tenant: %v", err)
	}
	if _, err := create("apikey:a", "t1"); !errors.Is(err, transport.ErrTenantSessions) {
		t.Fatalf("the principal's freed place taken by another of its tenant: %v, want ErrTenantSessions", err)
	}
}
