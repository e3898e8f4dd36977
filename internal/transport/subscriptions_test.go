package transport

import (
	"context"
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
