package upstream

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
	"github.com/mcp-runtime/mcp-runtime/internal/store/memstore"
)

func TestNewManagerValidatesDeclared(t *testing.T) {
	st := memstore.New(store.Options{})
	_, err := NewManager(Options{Store: st, Declared: []Config{cfg("a", "http://x"), cfg("b", "http://y"), cfg("c", "ftp://z")}})
	var fe *FieldError
	if err == nil || !strings.HasPrefix(err.Error(), "upstreams[2].url: ") || !errors.As(err, &fe) {
		t.Errorf("err = %v", err)
	}
	_, err = NewManager(Options{Store: st, Declared: []Config{cfg("a", "http://x"), cfg("a", "http://y")}})
	if err == nil || !strings.HasPrefix(err.Error(), "upstreams[1].id: ") {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := NewManager(Options{}); err == nil {
		t.Error("no store accepted")
	}
}

func TestAdminAPI(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	q := newPeer(t)
	q.tool("fetch", nil, nil)
	st := memstore.New(store.Options{})
	m := testManager(t, Options{Store: st, Declared: []Config{cfg("decl", p.url())}})
	start(t, m)
	c := ctx(t)

	if _, err := m.Create(c, cfg("decl", q.url())); !errors.Is(err, ErrExists) {
		t.Errorf("create over a declared id: %v", err)
	}
	var fe *FieldError
	if _, err := m.Create(c, Config{ID: "Bad!", URL: q.url()}); !errors.As(err, &fe) || fe.Field != "id" {
		t.Errorf("invalid: %v", err)
	}
	s, err := m.Create(c, cfg("api", q.url()))
	if err != nil || s.Source != SourceAPI || s.Config.Category != DefaultCategory {
		t.Fatalf("create: %+v %v", s, err)
	}
	if _, err := m.Create(c, cfg("api", q.url())); !errors.Is(err, ErrExists) {
		t.Errorf("create twice: %v", err)
	}
	recs, _ := st.ListUpstreams(c)
	if len(recs) != 1 || !strings.Contains(string(recs[0].Config), `"category":"execution"`) {
		t.Errorf("stored = %+v", recs)
	}
	waitState(t, m, "api", StateConnected)
	waitFor(t, "tools", func() bool {
		return slices.Equal(canonicals(m.Tools()), []string{"api.fetch", "decl.search"})
	})

	for _, err := range []error{
		func() error { _, err := m.Update(c, "decl", cfg("decl", q.url())); return err }(),
		m.Delete(c, "decl"),
		func() error { _, err := m.SetEnabled(c, "decl", false); return err }(),
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("declared changed: %v", err)
		}
	}
	if _, err := m.Update(c, "api", cfg("other", q.url())); !errors.As(err, &fe) || fe.Field != "id" {
		t.Errorf("update with another id: %v", err)
	}
	if _, err := m.Update(c, "nope", cfg("", q.url())); !errors.Is(err, ErrNotFound) {
		t.Errorf("update missing: %v", err)
	}
	// Update points it at another server: reconnects.
	s, err = m.Update(c, "api", Config{URL: p.url()})
	if err != nil || s.Config.ID != "api" {
		t.Fatalf("update: %+v %v", s, err)
	}
	waitFor(t, "updated tools", func() bool {
		return slices.Equal(canonicals(m.Tools()), []string{"api.search", "decl.search"})
	})
	list, _ := m.List(c)
	if len(list) != 2 || list[0].Config.ID != "api" || list[1].Source != SourceConfig {
		t.Errorf("list = %+v", list)
	}
	if err := m.Delete(c, "api"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(c, "api"); !errors.Is(err, ErrNotFound) {
		t.Errorf("get deleted: %v", err)
	}
	if got := canonicals(m.Tools()); !slices.Equal(got, []string{"decl.search"}) {
		t.Errorf("tools after delete: %v", got)
	}
}

// Another replica changes the store; SyncInterval picks it up.
func TestStoreSync(t *testing.T) {
	p := newPeer(t)
	p.tool("search", nil, nil)
	st := memstore.New(store.Options{})
	raw, _ := json.Marshal(cfg("early", p.url()))
	if _, err := st.CreateUpstream(ctx(t), "early", raw); err != nil {
		t.Fatal(err)
	}
	m := testManager(t, Options{Store: st, SyncInterval: 20 * time.Millisecond})
	start(t, m)
	waitState(t, m, "early", StateConnected)

	raw, _ = json.Marshal(cfg("late", p.url()))
	if _, err := st.CreateUpstream(ctx(t), "late", raw); err != nil {
		t.Fatal(err)
	}
	waitState(t, m, "late", StateConnected)
	if err := st.DeleteUpstream(ctx(t), "early"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "early removed", func() bool {
		_, err := m.Get(ctx(t), "early")
		return errors.Is(err, ErrNotFound)
	})
	waitFor(t, "tools", func() bool { return slices.Equal(canonicals(m.Tools()), []string{"late.search"}) })
}
