package transport

import (
	"context"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/tenant"
)

// A listen's resourceSubscriptions may name resources an upstream
// offers (the federation's): those are subscribed on the upstream, as a
// client session's resources/subscribe is, under the listen's key, and
// the upstream's notifications/resources/updated reach the listen through
// ResourceUpdated like any other (docs/adr/0054-listen-across-replicas.md).
// A replica holds its listens' upstream subscriptions itself; the
// federation's sweeper keeps them while Subscribers names the listen.

// unsubscribeTimeout bounds the upstream unsubscriptions of a listen that
// ended: they are best effort, and the sweeper drops what they miss.
const unsubscribeTimeout = 5 * time.Second

// subscribeUpstream subscribes l's upstream URIs before its
// acknowledgement, which then honours only those that could be: a URI
// whose upstream refused or failed is taken out of l's filter (and of the
// index), so the acknowledgement does not promise updates that cannot
// come.
func (t *Transport) subscribeUpstream(ctx context.Context, l *listener) {
	var failed []string
	for _, uri := range l.filter.ResourceSubscriptions {
		handled, err := t.srv.SubscribeUpstream(ctx, l.key, uri)
		switch {
		case !handled:
		case err != nil:
			failed = append(failed, uri)
			t.log.Debug().Err(err).Msg("transport: a listen's upstream resource could not be subscribed; it is not honoured")
		default:
			l.upstream = append(l.upstream, uri)
		}
	}
	if len(failed) > 0 {
		t.listens.drop(l, failed)
	}
}

// unsubscribeUpstream drops l's upstream subscriptions.
func (t *Transport) unsubscribeUpstream(l *listener) {
	if len(l.upstream) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(tenant.With(context.Background(), l.tenant), unsubscribeTimeout)
	defer cancel()
	for _, uri := range l.upstream {
		t.srv.UnsubscribeUpstream(ctx, l.key, uri)
	}
}
