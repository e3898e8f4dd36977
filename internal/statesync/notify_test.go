package statesync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// fakeDeliverer records what it is handed, from the notifier's delivery
// goroutine: read it after Close. A URI in fail fails.
type fakeDeliverer struct {
	got    []string
	listed []string
	n      int
	fail   string
}

func (f *fakeDeliverer) ResourcesListChanged(tenant string) {
	f.listed = append(f.listed, tenant)
	f.got = append(f.got, tenant+" list")
}

func (f *fakeDeliverer) ResourceUpdated(tenant, uri string) (int, error) {
	f.got = append(f.got, tenant+" "+uri)
	if uri == f.fail {
		return 0, errors.New("encode failed")
	}
	return f.n, nil
}

// Changed hands every update to the deliverer with the tenant of its
// context, in order with the list changes, and counts deliveries; a
// delivery failure is absorbed, not propagated.
func TestNotifierChanged(t *testing.T) {
	d := &fakeDeliverer{n: 3, fail: "agent://x"}
	n := NewNotifier(d, nil, zerolog.Nop())
	ctx := tenant.With(context.Background(), "acme")
	n.Changed(ctx, "memory://team/plan")
	n.Listed(ctx)
	n.Changed(ctx, "session://s1")
	n.Changed(ctx, "agent://x")
	n.Close()
	if want := []string{"acme memory://team/plan", "acme list", "acme session://s1", "acme agent://x"}; !slices.Equal(d.got, want) {
		t.Errorf("delivered %v, want %v", d.got, want)
	}
	if want := []string{"acme"}; !slices.Equal(d.listed, want) {
		t.Errorf("list changes told %v, want %v", d.listed, want)
	}
	if s := n.Stats(); s.Published != 3 || s.Delivered != 6 {
		t.Errorf("stats %+v, want 3 published, 6 delivered", s)
	}
	// After Close, an update is delivered by its caller.
	n.Changed(ctx, "memory://team/late")
	if last := d.got[len(d.got)-1]; last != "acme memory://team/late" {
		t.Errorf("after Close, last delivered %q", last)
	}
}

// blockingDeliverer holds every delivery until release is closed.
type blockingDeliverer struct {
	fakeDeliverer
	started chan struct{} // one value when the first delivery begins
	release chan struct{}
}

func (b *blockingDeliverer) ResourceUpdated(tenant, uri string) (int, error) {
	select {
	case b.started <- struct{}{}:
	default:
	}
	<-b.release
	return b.fakeDeliverer.ResourceUpdated(tenant, uri)
}

// A mutation does not wait for its notifications to be delivered; when
// the queue is full it waits for room, and nothing is dropped or
// reordered.
func TestNotifierDeliversOffTheCallPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &blockingDeliverer{fakeDeliverer: fakeDeliverer{n: 1}, started: make(chan struct{}, 1), release: make(chan struct{})}
		n := NewNotifier(d, nil, zerolog.Nop())
		ctx := tenant.With(context.Background(), "acme")
		n.Changed(ctx, "memory://team/0")
		<-d.started // the first is being delivered, and is held there
		for i := 1; i <= notifyQueue; i++ {
			n.Changed(ctx, fmt.Sprintf("memory://team/%d", i)) // returns at once: the queue has room
		}
		full := make(chan struct{})
		go func() {
			n.Changed(ctx, "memory://team/last")
			close(full)
		}()
		synctest.Wait() // every goroutine is blocked: the sender on the full queue
		select {
		case <-full:
			t.Fatal("an update was queued beyond the queue's bound")
		default:
		}
		if s := n.Stats(); s.Waiting != notifyQueue {
			t.Errorf("%d updates waiting, want %d", s.Waiting, notifyQueue)
		}
		close(d.release)
		<-full
		n.Close()
		if len(d.got) != notifyQueue+2 || d.got[0] != "acme memory://team/0" || d.got[len(d.got)-1] != "acme memory://team/last" {
			t.Fatalf("delivered %d updates, first %q, last %q", len(d.got), d.got[0], d.got[len(d.got)-1])
		}
		for i, g := range d.got[:notifyQueue+1] {
			if want := fmt.Sprintf("acme memory://team/%d", i); g != want {
				t.Fatalf("delivery %d is %q, want %q", i, g, want)
			}
		}
	})
}

// AfterCall announces stale://<pattern> for each pattern a successful
// mutation invalidated, and nothing for a failed call, a tool without a
// policy, or with the policy layer off.
func TestNotifierAfterCall(t *testing.T) {
	cfg := Config{Policies: []Policy{{Match: "memory.store", Invalidates: []string{"memory.*", "agent.list"}}}}
	layer := NewLayer(mustEngine(t, cfg))
	ctx := tenant.With(context.Background(), "acme")
	ok := func() *protocol.CallToolResult {
		return &protocol.CallToolResult{Content: []protocol.Content{protocol.TextContent("done")}}
	}
	for _, tt := range []struct {
		name  string
		layer *Layer
		tool  string
		res   *protocol.CallToolResult
		want  []string
	}{
		{"invalidating mutation", layer, "memory.store", ok(), []string{"acme stale://memory.*", "acme stale://agent.list"}},
		{"failed mutation", layer, "memory.store", protocol.ToolError("boom"), nil},
		{"no policy", layer, "memory.retrieve", ok(), nil},
		{"layer off", nil, "memory.store", ok(), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &fakeDeliverer{n: 1}
			n := NewNotifier(d, tt.layer, zerolog.Nop())
			blocks := len(tt.res.Content)
			got := n.AfterCall(ctx, tt.tool, tt.res)
			n.Close()
			if !slices.Equal(d.got, tt.want) {
				t.Errorf("delivered %v, want %v", d.got, tt.want)
			}
			if added := len(got.Content) - blocks; (added == 1) != (tt.want != nil) {
				t.Errorf("result has %d blocks more, want the invalidation block only when patterns were announced", added)
			}
		})
	}
}
