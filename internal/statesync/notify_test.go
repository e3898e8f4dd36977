package statesync

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/mcp-runtime/mcp-runtime/internal/protocol"
	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

type fakeDeliverer struct {
	got    []string
	listed []string
	n      int
	err    error
}

func (f *fakeDeliverer) ResourcesListChanged(tenant string) {
	f.listed = append(f.listed, tenant)
}

func (f *fakeDeliverer) ResourceUpdated(tenant, uri string) (int, error) {
	f.got = append(f.got, tenant+" "+uri)
	return f.n, f.err
}

// Changed hands every update to the deliverer with the tenant of its
// context and counts deliveries; a delivery failure is absorbed, not
// propagated.
func TestNotifierChanged(t *testing.T) {
	d := &fakeDeliverer{n: 3}
	n := NewNotifier(d, nil, zerolog.Nop())
	ctx := tenant.With(context.Background(), "acme")
	n.Changed(ctx, "memory://team/plan")
	n.Changed(ctx, "session://s1")
	d.err = errors.New("encode failed")
	n.Changed(ctx, "agent://x")
	if want := []string{"acme memory://team/plan", "acme session://s1", "acme agent://x"}; !slices.Equal(d.got, want) {
		t.Errorf("delivered %v, want %v", d.got, want)
	}
	n.Listed(ctx)
	if want := []string{"acme"}; !slices.Equal(d.listed, want) {
		t.Errorf("list changes told %v, want %v", d.listed, want)
	}
	if s := n.Stats(); s.Published != 3 || s.Delivered != 6 {
		t.Errorf("stats %+v, want 3 published, 6 delivered", s)
	}
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
			if !slices.Equal(d.got, tt.want) {
				t.Errorf("delivered %v, want %v", d.got, tt.want)
			}
			if added := len(got.Content) - blocks; (added == 1) != (tt.want != nil) {
				t.Errorf("result has %d blocks more, want the invalidation block only when patterns were announced", added)
			}
		})
	}
}
