package transport

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The subscription index delivers a resource update to exactly the
// sessions subscribed to that URI in that tenant, and forgets a session's
// subscriptions when it unsubscribes or ends — nothing leaks.
func TestSubscriptionIndex(t *testing.T) {
	index := newSubscriptions()
	newSession := func(id, tn string) *ClientSession {
		return NewClientSession(context.Background(), id, SessionInit{EventLogSize: 8, Tenant: tn, index: index}, time.Now())
	}
	a, b, other := newSession("a", "t1"), newSession("b", "t1"), newSession("c", "t2")
	for _, s := range []*ClientSession{a, b, other} {
		if err := s.Subscribe("memory://team/plan"); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Subscribe("stale://memory.*"); err != nil {
		t.Fatal(err)
	}
	_ = a.Subscribe("stale://memory.*") // twice: still one entry
	count := func(tn, uri string) (got map[string]bool) {
		got = map[string]bool{}
		index.each(tn, uri, func(s *ClientSession) { got[s.ID()] = true })
		return got
	}
	tests := []struct {
		name, tenant, uri string
		want              []string
	}{
		{"both subscribers of t1", "t1", "memory://team/plan", []string{"a", "b"}},
		{"the other tenant's subscriber only", "t2", "memory://team/plan", []string{"c"}},
		{"exact URI only", "t1", "memory://team/plan2", nil},
		{"pattern URI", "t1", "stale://memory.*", []string{"a"}},
	}
	for _, tt := range tests {
		got := count(tt.tenant, tt.uri)
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
		for _, id := range tt.want {
			if !got[id] {
				t.Errorf("%s: %s missing from %v", tt.name, id, got)
			}
		}
	}
	b.Unsubscribe("memory://team/plan")
	if got := count("t1", "memory://team/plan"); len(got) != 1 || !got["a"] {
		t.Errorf("after b unsubscribed: %v", got)
	}
	a.Terminate()
	other.Terminate()
	if n := index.len(); n != 0 {
		t.Errorf("%d index entries left after every subscriber is gone", n)
	}
	if err := a.Subscribe("memory://late"); err == nil {
		t.Error("an ended session could subscribe")
	}
}

// A resource update fanned out to many subscribers is held once: each
// subscribed stream's resumption log keeps a pointer to the one encoded
// notification, so 10,000 subscribers with full logs of 1,024 events
// hold 80 MB, not 320 MB (stream.go, frame). Resumption still gives
// every stream its own consecutive event ids.
func TestFanoutFootprint(t *testing.T) {
	const sessions, updates, logSize = 1000, 64, 64
	index := newSubscriptions()
	fan := localFanout{subs: index}
	all := make([]*ClientSession, sessions)
	for i := range all {
		all[i] = NewClientSession(context.Background(), strconv.Itoa(i), SessionInit{EventLogSize: logSize, Tenant: "t", index: index}, time.Now())
		if err := all[i].Subscribe("memory://t/fan"); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range updates {
		if n, err := fan.ResourceUpdated("t", "memory://t/fan"); err != nil || n != sessions {
			t.Fatalf("delivered to %d (%v), want %d", n, err, sessions)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perEvent := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (sessions * updates)
	t.Logf("%.1f bytes per event per stream", perEvent)
	if perEvent > 12 {
		t.Errorf("%.1f bytes per event per stream, want at most 12: the update is copied per subscriber", perEvent)
	}
	for _, s := range []*ClientSession{all[0], all[sessions-1]} {
		evs, _, lost := s.standalone.next(updates-3, nil)
		if lost || len(evs) != 3 {
			t.Fatalf("after event %d: %d events (lost %v), want 3", updates-3, len(evs), lost)
		}
		for i, ev := range evs {
			if want := uint64(updates - 2 + i); ev.Seq != want || !strings.Contains(string(ev.Data), "memory://t/fan") {
				t.Errorf("event %d: seq %d %s, want seq %d of the update", i, ev.Seq, ev.Data, want)
			}
		}
	}
	runtime.KeepAlive(all)
}
