package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// upstreamID returns an upstream id no other subtest uses: upstreams are
// not scoped by tenant, so the subtests share one id space.
func (h *harness) upstreamID() string {
	return fmt.Sprintf("up-%s-%d", h.run, h.n.Add(1))
}

// createUpstream stores an upstream with config.
func createUpstream(t testing.TB, h *harness, id, config string) store.UpstreamRecord {
	t.Helper()
	return must(h.s.CreateUpstream(ctx(t), id, json.RawMessage(config)))(t)
}

// sameUpstream fails the test unless got is want, comparing configs by
// meaning.
func sameUpstream(t testing.TB, what string, got, want store.UpstreamRecord) {
	t.Helper()
	jsonEqual(t, got.Config, want.Config)
	got.Config = want.Config
	equal(t, what, got, want)
}

func testUpstreams(t *testing.T, h *harness) {
	t.Run("create then get", func(t *testing.T) {
		t.Parallel()
		id := h.upstreamID()
		config := `{"url": "https://mcp.example/a", "headers": {"X-Key": "v"}, "maxRetries": 2}`
		before := h.clock.Now()
		got := createUpstream(t, h, id, config)
		equal(t, "id", got.ID, id)
		jsonEqual(t, got.Config, json.RawMessage(config))
		equal(t, "version", got.Version, int64(1))
		if got.CreatedAt.Before(before) || !got.UpdatedAt.Equal(got.CreatedAt) {
			t.Fatalf("createdAt %v / updatedAt %v: want both equal and not before %v", got.CreatedAt, got.UpdatedAt, before)
		}
		if got.CreatedAt.Location() != time.UTC {
			t.Fatalf("createdAt %v is not in UTC", got.CreatedAt)
		}
		var compact bytes.Buffer
		noErr(t, json.Compact(&compact, got.Config))
		if !bytes.Equal(compact.Bytes(), got.Config) {
			t.Fatalf("config %s is not compact", got.Config)
		}
		sameUpstream(t, "get after create", must(h.s.GetUpstream(ctx(t), id))(t), got)
	})

	t.Run("update bumps version and updatedAt", func(t *testing.T) {
		t.Parallel()
		id := h.upstreamID()
		first := createUpstream(t, h, id, `{"url": "https://one"}`)
		prev := first
		for i, ifVersion := range []*int64{nil, ptr(int64(2))} {
			before := h.clock.Now()
			config := fmt.Sprintf(`{"url": "https://two", "n": %d}`, i)
			got := must(h.s.UpdateUpstream(ctx(t), id, json.RawMessage(config), ifVersion))(t)
			equal(t, "version", got.Version, prev.Version+1)
			equal(t, "createdAt", got.CreatedAt, first.CreatedAt)
			if got.UpdatedAt.Before(before) {
				t.Fatalf("update %d: updatedAt %v is before %v", i, got.UpdatedAt, before)
			}
			jsonEqual(t, got.Config, json.RawMessage(config))
			sameUpstream(t, "get after update", must(h.s.GetUpstream(ctx(t), id))(t), got)
			prev = got
		}
	})

	t.Run("a stale ifVersion conflicts and changes nothing", func(t *testing.T) {
		t.Parallel()
		id := h.upstreamID()
		createUpstream(t, h, id, `{"v": 1}`)
		want := must(h.s.UpdateUpstream(ctx(t), id, json.RawMessage(`{"v": 2}`), nil))(t) // version 2
		for _, v := range []int64{0, 1, 3, -1} {
			_, err := h.s.UpdateUpstream(ctx(t), id, json.RawMessage(`{"v": "stale"}`), ptr(v))
			wantIs(t, err, store.ErrConflict)
		}
		sameUpstream(t, "after conflicts", must(h.s.GetUpstream(ctx(t), id))(t), want)
	})

	t.Run("creating a taken id fails and changes nothing", func(t *testing.T) {
		t.Parallel()
		id := h.upstreamID()
		first := createUpstream(t, h, id, `{"url": "https://first"}`)
		_, err := h.s.CreateUpstream(ctx(t), id, json.RawMessage(`{"url": "https://second"}`))
		wantIs(t, err, store.ErrAlreadyExists)
		sameUpstream(t, "kept", must(h.s.GetUpstream(ctx(t), id))(t), first)
	})

	t.Run("delete removes it for every purpose", func(t *testing.T) {
		t.Parallel()
		id := h.upstreamID()
		createUpstream(t, h, id, `{"v": 1}`)
		noErr(t, h.s.DeleteUpstream(ctx(t), id))
		_, err := h.s.GetUpstream(ctx(t), id)
		wantIs(t, err, store.ErrNotFound)
		wantIs(t, h.s.DeleteUpstream(ctx(t), id), store.ErrNotFound)
		for _, ifVersion := range []*int64{nil, ptr(int64(1))} {
			_, err = h.s.UpdateUpstream(ctx(t), id, json.RawMessage(`{"v": 2}`), ifVersion)
			wantIs(t, err, store.ErrNotFound)
		}
		for _, u := range must(h.s.ListUpstreams(ctx(t)))(t) {
			if u.ID == id {
				t.Fatalf("a deleted upstream is listed: %+v", u)
			}
		}
		again := createUpstream(t, h, id, `{"v": 3}`)
		equal(t, "version of a re-created upstream", again.Version, int64(1))
	})

	t.Run("list returns every upstream in id byte order", func(t *testing.T) {
		t.Parallel()
		prefix := h.upstreamID() + "/"
		// Upper case before lower, "a-" before "aa", non-ASCII last: byte
		// order, whatever the database's collation.
		names := []string{"é", "b", "aa", "a-", "a", "Z", "B"}
		for _, n := range names {
			createUpstream(t, h, prefix+n, fmt.Sprintf(`{"name": %q}`, n))
		}
		all := must(h.s.ListUpstreams(ctx(t)))(t)
		// Other subtests add upstreams concurrently: check the whole
		// listing's order, and this subtest's items within it.
		if !slices.IsSortedFunc(all, func(a, b store.UpstreamRecord) int { return strings.Compare(a.ID, b.ID) }) {
			t.Fatalf("listing is not in id order: %v", upstreamIDs(all))
		}
		var mine []string
		for _, u := range all {
			if n, ok := strings.CutPrefix(u.ID, prefix); ok {
				mine = append(mine, n)
				jsonEqual(t, u.Config, json.RawMessage(fmt.Sprintf(`{"name": %q}`, n)))
				equal(t, "version", u.Version, int64(1))
			}
		}
		equal(t, "listed", mine, []string{"B", "Z", "a", "a-", "aa", "b", "é"})
	})

	t.Run("unknown ids are not found", func(t *testing.T) {
		t.Parallel()
		id := h.upstreamID()
		_, err := h.s.GetUpstream(ctx(t), id)
		wantIs(t, err, store.ErrNotFound)
		_, err = h.s.UpdateUpstream(ctx(t), id, json.RawMessage(`{}`), nil)
		wantIs(t, err, store.ErrNotFound)
		wantIs(t, h.s.DeleteUpstream(ctx(t), id), store.ErrNotFound)
	})

	t.Run("bad input is refused and stores nothing", func(t *testing.T) {
		t.Parallel()
		ok := h.upstreamID()
		big := `{"a":"` + strings.Repeat("x", store.MaxUpstreamConfigLen-len(`{"a":""}`)) + `"}`
		cases := []struct {
			name   string
			id     string
			config string
			field  string
		}{
			{"no id", "", `{}`, "id"},
			{"over-long id", strings.Repeat("u", store.MaxUpstreamIDLen+1), `{}`, "id"},
			{"control character in id", "up\nstream", `{}`, "id"},
			{"invalid UTF-8 id", "up\xffstream", `{}`, "id"},
			{"no config", ok, ``, "config"},
			{"blank config", ok, "  \n", "config"},
			{"null config", ok, `null`, "config"},
			{"array config", ok, `[{"url": "x"}]`, "config"},
			{"string config", ok, `"https://x"`, "config"},
			{"number config", ok, `1`, "config"},
			{"malformed config", ok, `{"url":`, "config"},
			{"over-long config", ok, big[:len(big)-2] + `x"}`, "config"},
			{"NUL in config", ok, `{"a": "\u0000"}`, "/config/a"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				_, err := h.s.CreateUpstream(ctx(t), c.id, json.RawMessage(c.config))
				wantField(t, err, c.field)
				_, err = h.s.UpdateUpstream(ctx(t), c.id, json.RawMessage(c.config), nil)
				wantField(t, err, c.field)
			})
		}
		_, err := h.s.GetUpstream(ctx(t), ok)
		wantIs(t, err, store.ErrNotFound)
		_, err = h.s.GetUpstream(ctx(t), "")
		wantField(t, err, "id")
		wantField(t, h.s.DeleteUpstream(ctx(t), strings.Repeat("u", store.MaxUpstreamIDLen+1)), "id")

		// The bounds themselves are allowed.
		longID := ok + strings.Repeat("u", store.MaxUpstreamIDLen-len(ok))
		createUpstream(t, h, longID, big)
		got := must(h.s.GetUpstream(ctx(t), longID))(t)
		jsonEqual(t, got.Config, json.RawMessage(big))
	})

	t.Run("returned configs are the caller's", func(t *testing.T) {
		t.Parallel()
		id := h.upstreamID()
		in := []byte(`{"url":"https://kept"}`)
		created := must(h.s.CreateUpstream(ctx(t), id, in))(t)
		scribble := func(b []byte) {
			for i := range b {
				b[i] = 'X'
			}
		}
		scribble(in)
		scribble(created.Config)
		got := must(h.s.GetUpstream(ctx(t), id))(t)
		jsonEqual(t, got.Config, json.RawMessage(`{"url":"https://kept"}`))
		scribble(got.Config)
		for _, u := range must(h.s.ListUpstreams(ctx(t)))(t) {
			scribble(u.Config)
		}
		in = []byte(`{"url":"https://updated"}`)
		updated := must(h.s.UpdateUpstream(ctx(t), id, in, nil))(t)
		scribble(in)
		scribble(updated.Config)
		got = must(h.s.GetUpstream(ctx(t), id))(t)
		jsonEqual(t, got.Config, json.RawMessage(`{"url":"https://updated"}`))
	})

	t.Run("concurrent updates with one ifVersion: exactly one wins", func(t *testing.T) {
		t.Parallel()
		id := h.upstreamID()
		createUpstream(t, h, id, `{"n": -1}`)
		const writers = 20
		errs := make([]error, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				<-start
				_, errs[i] = h.s.UpdateUpstream(ctx(t), id, json.RawMessage(fmt.Sprintf(`{"n": %d}`, i)), ptr(int64(1)))
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("updates %d and %d both won", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("update %d: got %v, want success or ErrConflict", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no update won")
		}
		got := must(h.s.GetUpstream(ctx(t), id))(t)
		equal(t, "version", got.Version, int64(2))
		jsonEqual(t, got.Config, json.RawMessage(fmt.Sprintf(`{"n": %d}`, winner)))
	})

	t.Run("a cancelled context writes nothing", func(t *testing.T) {
		t.Parallel()
		id := h.upstreamID()
		c, cancel := context.WithCancel(ctx(t))
		cancel()
		if _, err := h.s.CreateUpstream(c, id, json.RawMessage(`{}`)); err == nil {
			t.Fatal("CreateUpstream with a cancelled context succeeded")
		}
		_, err := h.s.GetUpstream(ctx(t), id)
		wantIs(t, err, store.ErrNotFound)
	})
}

// upstreamIDs returns the ids of records, in order.
func upstreamIDs(records []store.UpstreamRecord) []string {
	out := make([]string, len(records))
	for i, u := range records {
		out[i] = u.ID
	}
	return out
}
