package statesync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// fakeDeliverer records what it is handed, from the notifier's delivery
// goroutine: read it after Close. A URI in fail fails.
type fakeDeliverer struct {
	mu     sync.Mutex // the delivery goroutine and a caller delivering its own
	got    []string
	listed []string
	n      int
	fail   string
}

func (f *fakeDeliverer) ResourcesListChanged(_ context.Context, tenant string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listed = append(f.listed, tenant)
	f.got = append(f.got, tenant+" list")
}

func (f *fakeDeliverer) ResourceUpdatedContext(_ context.Context, tenant, uri string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
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
	n := NewNotifier(d, nil, zerolog.Nop(), nil)
	ctx := tenant.With(context.Background(), "acme")
	n.Changed(ctx, "memory://team/plan")
	n.Listed(ctx)
	n.Changed(ctx, "session://s1")
	n.Changed(ctx, "agent://x")
	n.Close(context.Background())
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

func (b *blockingDeliverer) ResourceUpdatedContext(ctx context.Context, tenant, uri string) (int, error) {
	select {
	case b.started <- struct{}{}:
	default:
	}
	<-b.release
	return b.fakeDeliverer.ResourceUpdatedContext(ctx, tenant, uri)
}

// A mutation does not wait for its notifications to be delivered; when
// its tenant's queue is full it delivers its own, and nothing is
// dropped.
func TestNotifierDeliversOffTheCallPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &blockingDeliverer{fakeDeliverer: fakeDeliverer{n: 1}, started: make(chan struct{}, 1), release: make(chan struct{})}
		n := NewNotifier(d, nil, zerolog.Nop(), nil)
		ctx := tenant.With(context.Background(), "acme")
		n.Changed(ctx, "memory://team/0")
		<-d.started // the first is being delivered, and is held there
		for i := 1; i <= tenantQueue; i++ {
			n.Changed(ctx, fmt.Sprintf("memory://team/%d", i)) // returns at once: the queue has room
		}
		if s := n.Stats(); s.Waiting != tenantQueue {
			t.Errorf("%d updates waiting, want %d", s.Waiting, tenantQueue)
		}
		own := make(chan struct{})
		go func() {
			n.Changed(ctx, "memory://team/last") // the queue is full: delivered here
			close(own)
		}()
		synctest.Wait()
		select {
		case <-own:
			t.Fatal("an update beyond the full queue was neither queued nor delivered by its caller")
		default: // blocked in the deliverer, as the caller delivers it
		}
		close(d.release)
		<-own
		if err := n.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := slices.Clone(d.got)
		if len(got) != tenantQueue+2 {
			t.Fatalf("delivered %d updates, want %d", len(got), tenantQueue+2)
		}
		slices.Sort(got)
		if i, ok := slices.BinarySearch(got, "acme memory://team/last"); !ok || i < 0 {
			t.Error("the caller's own update was not delivered")
		}
	})
}

// slowTenantDeliverer takes 10 ms for every update of tenant "noisy",
// as a fan-out to a thousand subscribers does, and records when it
// delivered tenant "quiet"'s.
type slowTenantDeliverer struct {
	mu      sync.Mutex
	quietAt time.Time
}

func (d *slowTenantDeliverer) ResourceUpdatedContext(_ context.Context, tn, _ string) (int, error) {
	if tn == "noisy" {
		time.Sleep(10 * time.Millisecond)
		return 1000, nil
	}
	d.mu.Lock()
	d.quietAt = time.Now()
	d.mu.Unlock()
	return 1, nil
}

func (*slowTenantDeliverer) ResourcesListChanged(context.Context, string) {}

// A tenant whose fan-out is slow and who writes without pause delays
// neither another tenant's writes nor its notifications.
func TestNotifierTenantsDoNotWaitForEachOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &slowTenantDeliverer{}
		n := NewNotifier(d, nil, zerolog.Nop(), nil)
		noisy, quiet := tenant.With(context.Background(), "noisy"), tenant.With(context.Background(), "quiet")
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 64 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					n.Changed(noisy, fmt.Sprintf("memory://x/%d-%d", w, i))
				}
			})
		}
		time.Sleep(time.Minute) // the noisy tenant's queue is full long before
		start := time.Now()
		n.Changed(quiet, "memory://team/plan")
		waited := time.Since(start)
		time.Sleep(time.Second)
		close(stop)
		wg.Wait()
		_ = n.Close(context.Background())
		if waited > 0 {
			t.Errorf("quiet's mutation waited %v to queue its update", waited)
		}
		if lag := d.quietAt.Sub(start); d.quietAt.IsZero() || lag > 50*time.Millisecond {
			t.Errorf("quiet's update was delivered %v after it was made (zero: not at all)", lag)
		}
	})
}

// Close delivers what is queued until its context ends, then drops the
// rest and says how many: shutdown keeps its grace period.
func TestNotifierCloseKeepsTheGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNotifier(&slowTenantDeliverer{}, nil, zerolog.Nop(), nil)
		noisy := tenant.With(context.Background(), "noisy")
		for i := range tenantQueue {
			n.Changed(noisy, fmt.Sprintf("memory://x/%d", i))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := n.Close(ctx)
		if d := time.Since(start); d > time.Second+10*time.Millisecond {
			t.Errorf("Close took %v with a second of grace", d)
		}
		if s := n.Stats(); err == nil || s.Dropped == 0 || s.Dropped+s.Delivered/1000 != tenantQueue || s.Waiting != 0 {
			t.Errorf("Close: %v; stats %+v, want the undelivered counted as dropped", err, s)
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
			n := NewNotifier(d, tt.layer, zerolog.Nop(), nil)
			blocks := len(tt.res.Content)
			got := n.AfterCall(ctx, tt.tool, tt.res)
			n.Close(context.Background())
			if !slices.Equal(d.got, tt.want) {
				t.Errorf("delivered %v, want %v", d.got, tt.want)
			}
			if added := len(got.Content) - blocks; (added == 1) != (tt.want != nil) {
				t.Errorf("result has %d blocks more, want the invalidation block only when patterns were announced", added)
			}
		})
	}
}
