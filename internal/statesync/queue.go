package statesync

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// A mutation used to deliver its notifications before answering: with
// 10,000 subscribers of one URI that took 150 ms of every write
// (BENCHMARKS.md, "10,000 subscribers on one replica"). Now it queues
// them and answers, and one goroutine delivers them
// (docs/adr/0056-cheap-by-default.md).
//
// Each tenant has its own queue, and the goroutine takes one update from
// each tenant in turn: a tenant whose fan-out is slow (thousands of
// subscribers) delays its own notifications, not every other tenant's.
// Within a tenant updates are delivered in the order they were queued.
// When a tenant's queue is full, the mutation delivers its update itself,
// as it did before: it pays for its own fan-out, nobody else waits, and
// nothing is dropped. That update may overtake its tenant's queued ones;
// each says only that a resource (or a list) changed, so the client
// re-reads either way.

// tenantQueue bounds the updates one tenant may have waiting.
const tenantQueue = 1024

// notice is one queued update: a resource's, or, with no uri, a change
// of tenant's resource list.
type notice struct {
	tenant, uri string
	// cause is the span of the mutation that published it, which the
	// delivery's span links to (docs/adr/0046-opentelemetry.md); zero
	// when tracing is off or the mutation was not sampled.
	cause trace.SpanContext
}

// queue holds the waiting notices by tenant, and the tenants' turns.
type queue struct {
	mu      sync.Mutex
	byTen   map[string][]notice // in the order queued
	turn    []string            // tenants with notices waiting, next first
	waiting int
	closed  bool
	abandon bool          // Close ran out of time: drop what waits
	wake    chan struct{} // capacity 1: "something to do"
	done    chan struct{} // closed when run returns
}

func (q *queue) init() {
	q.byTen, q.wake, q.done = make(map[string][]notice), make(chan struct{}, 1), make(chan struct{})
}

// add queues nt; false when the notifier is closed or nt's tenant's
// queue is full, and the caller is to deliver it.
func (q *queue) add(nt notice) bool {
	q.mu.Lock()
	waiting := q.byTen[nt.tenant]
	if q.closed || len(waiting) >= tenantQueue {
		q.mu.Unlock()
		return false
	}
	if len(waiting) == 0 {
		q.turn = append(q.turn, nt.tenant)
	}
	q.byTen[nt.tenant] = append(waiting, nt)
	q.waiting++
	q.mu.Unlock()
	q.poke()
	return true
}

func (q *queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next takes the first notice of the tenant whose turn it is, and puts
// that tenant last if it has more. ok is false when nothing waits; stop
// is true when run is to return (closed and empty, or abandoned), and
// then dropped is how many notices it leaves.
func (q *queue) next() (nt notice, ok, stop bool, dropped int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.abandon {
		dropped, q.waiting = q.waiting, 0
		clear(q.byTen)
		q.turn = nil
		return notice{}, false, true, dropped
	}
	if len(q.turn) == 0 {
		return notice{}, false, q.closed, 0
	}
	tn := q.turn[0]
	q.turn = q.turn[1:]
	waiting := q.byTen[tn]
	nt = waiting[0]
	if len(waiting) == 1 {
		delete(q.byTen, tn)
	} else {
		q.byTen[tn] = waiting[1:]
		q.turn = append(q.turn, tn)
	}
	q.waiting--
	return nt, true, false, 0
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting
}

// run delivers the queued notices until Close.
func (n *Notifier) run() {
	defer close(n.q.done)
	for {
		nt, ok, stop, dropped := n.q.next()
		switch {
		case stop:
			n.dropped.Add(int64(dropped))
			return
		case ok:
			n.deliver(nt)
		default:
			<-n.q.wake
		}
	}
}

// enqueue queues nt for delivery, or delivers it now when its tenant's
// queue is full or the notifier is closed.
func (n *Notifier) enqueue(nt notice) {
	if !n.q.add(nt) {
		n.deliver(nt)
	}
}

// Close delivers what is queued, until ctx ends, and stops the delivery
// goroutine; what is still queued then is dropped and counted (the
// replica is going away: its listen streams with it). Updates published
// after Close are delivered by their caller.
func (n *Notifier) Close(ctx context.Context) error {
	n.q.mu.Lock()
	n.q.closed = true
	n.q.mu.Unlock()
	n.q.poke()
	select {
	case <-n.q.done:
		return nil
	case <-ctx.Done():
	}
	n.q.mu.Lock()
	n.q.abandon = true
	n.q.mu.Unlock()
	n.q.poke()
	<-n.q.done // after the delivery under way
	if d := n.dropped.Load(); d > 0 {
		n.log.Warn().Int64("dropped", d).Msg("stateSync: notifications still queued at shutdown were dropped")
		return fmt.Errorf("state sync notifier: %d queued notifications dropped: %w", d, ctx.Err())
	}
	return nil
}
