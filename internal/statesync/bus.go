package statesync

import (
	"context"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// Deliverer hands an update to this process's subscribers; the transport
// is one.
type Deliverer interface {
	ResourceUpdated(tenant, uri string) (int, error)
}

// LocalBus carries resource updates (notifications/resources/updated) to
// the client sessions subscribed to them, through this process's
// transport. It is all a deployment needs, with one replica or several:
// with shared client sessions the transport's delivery, on the replica
// where the update happened, reaches every subscriber's log in Redis,
// whichever replica holds its stream (issue 7, point 2). Publish never
// blocks on a slow subscriber: delivery appends to the subscriber's
// stream log, which its connection drains.
type LocalBus struct {
	d         Deliverer
	log       zerolog.Logger
	published atomic.Int64
	delivered atomic.Int64
}

// NewLocalBus returns a bus that delivers through d.
func NewLocalBus(d Deliverer, log zerolog.Logger) *LocalBus { return &LocalBus{d: d, log: log} }

// Publish delivers uri's update to its subscribers in tenant. A failure
// is logged, never returned: a notification that cannot be sent must not
// fail the mutation that caused it.
func (b *LocalBus) Publish(_ context.Context, tenant, uri string) {
	b.published.Add(1)
	n, err := b.d.ResourceUpdated(tenant, uri)
	if err != nil {
		// Not the URI: it holds what a tool call named (a memory key),
		// which the log never carries.
		b.log.Warn().Err(err).Msg("resource update not delivered")
		return
	}
	b.delivered.Add(int64(n))
}

// BusStats counts what a LocalBus did.
type BusStats struct {
	Published int64 // updates published
	Delivered int64 // notifications queued to subscribers
}

// Stats returns the counters.
func (b *LocalBus) Stats() BusStats {
	return BusStats{Published: b.published.Load(), Delivered: b.delivered.Load()}
}
