package statesync

import (
	"context"
	"errors"
	"testing"

	"github.com/rs/zerolog"
)

type fakeDeliverer struct {
	got []string
	n   int
	err error
}

func (f *fakeDeliverer) ResourceUpdated(tenant, uri string) (int, error) {
	f.got = append(f.got, tenant+" "+uri)
	return f.n, f.err
}

// The local bus hands every update to the deliverer with its tenant and
// counts deliveries; a delivery failure is absorbed, not propagated.
func TestLocalBus(t *testing.T) {
	d := &fakeDeliverer{n: 3}
	b := NewLocalBus(d, zerolog.Nop())
	b.Publish(context.Background(), "acme", "memory://team/plan")
	b.Publish(context.Background(), "acme", StaleURI("memory.*"))
	d.err = errors.New("encode failed")
	b.Publish(context.Background(), "acme", "agent://x")
	if len(d.got) != 3 || d.got[1] != "acme stale://memory.*" {
		t.Errorf("delivered %v", d.got)
	}
	if s := b.Stats(); s.Published != 3 || s.Delivered != 6 {
		t.Errorf("stats %+v, want 3 published, 6 delivered", s)
	}
}
