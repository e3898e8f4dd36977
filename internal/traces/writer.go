package traces

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// Retry schedule for a failed batch: maxTries in all, the n-th retry
// after retryBackoff × 4^(n-1) (100ms, 400ms). Short enough that a
// database blip loses nothing, bounded so an outage costs one batch per
// ~0.5 s plus write timeouts, not an ever-growing backlog.
const (
	maxTries     = 3
	retryBackoff = 100 * time.Millisecond
)

// runWriter is the writer goroutine: it batches the queue until Close,
// then drains it.
func (r *Recorder) runWriter() {
	rep := newReporter(r.opts.Log, r.opts.Now, &r.dropped)
	defer func() {
		rep.flush()
		// The purger exits promptly once stopped (its purge is
		// cancelled), so done means every goroutine has returned.
		<-r.purgerDone
		r.abort() // releases the context; nothing uses it any more
		close(r.done)
	}()

	batch := make([]store.Trace, 0, r.opts.BatchSize)
	timer := time.NewTimer(r.opts.FlushInterval)
	timer.Stop()
	defer timer.Stop()
	var due <-chan time.Time // the timer's channel while a batch is open
	expired := false         // the open batch's FlushInterval has passed
	failing := false         // the latest batch was lost
	flush := func() {
		timer.Stop()
		due, expired = nil, false
		r.unflushed.Add(-int64(len(batch)))
		failing = r.write(batch, rep) != nil // counted and reported inside
		batch = batch[:0]
	}
	for {
		// Stopping wins over a non-empty queue, which select alone would
		// pick at random: the drain, not this loop, decides what a
		// shutdown still tries to write.
		select {
		case <-r.stopCtx.Done():
			r.drain(batch, failing, rep)
			return
		default:
		}
		// The queue is received from only while no batch is open: the
		// first trace opens one and starts its timer, and the rest are
		// taken when the timer fires or Record says a batch's worth is
		// queued. Receiving each trace as it came woke this goroutine
		// once per tool call, which cost the call path more than the
		// write itself (docs/adr/0056-cheap-by-default.md).
		var next <-chan store.Trace
		if len(batch) == 0 {
			next = r.queue
		}
		select {
		case t := <-next:
			batch = append(batch, t)
			timer.Reset(r.opts.FlushInterval)
			due = timer.C
		case <-due:
			due, expired = nil, true
		case <-r.full:
		case <-r.stopCtx.Done():
			r.drain(batch, failing, rep)
			return
		}
		// Full batches are written at once, a due one as it is; a
		// shutdown stops this at the next batch, for the drain to decide.
		for r.stopCtx.Err() == nil {
			batch = r.fill(batch)
			if len(batch) < r.opts.BatchSize && !(expired && len(batch) > 0) {
				break
			}
			flush()
		}
		if len(batch) > 0 && due == nil {
			// What a flush left queued opens the next batch now.
			timer.Reset(r.opts.FlushInterval)
			due = timer.C
		}
	}
}

// fill moves queued traces into batch, without waiting, until it holds
// BatchSize.
func (r *Recorder) fill(batch []store.Trace) []store.Trace {
	for len(batch) < r.opts.BatchSize {
		select {
		case t := <-r.queue:
			batch = append(batch, t)
		default:
			return batch
		}
	}
	return batch
}

// drain writes batch and everything still queued, in batches. Close has
// closed the gate, so the queue no longer grows. Once a batch is lost
// (failing: the latest one before Close was), the rest is abandoned
// without a try: spending the retry schedule on every remaining batch
// would hold the shutdown hostage to a dead database.
func (r *Recorder) drain(batch []store.Trace, failing bool, rep *reporter) {
	for {
		batch = r.fill(batch)
		if len(batch) == 0 {
			return
		}
		if failing {
			r.abandoned.Add(int64(len(batch)))
		} else {
			failing = r.write(batch, rep) != nil
		}
		batch = batch[:0]
	}
}

// write inserts batch, retrying on failure, and counts the outcome. It
// returns the last error when every try failed and the batch is lost.
func (r *Recorder) write(batch []store.Trace, rep *reporter) error {
	if len(batch) == 0 {
		return nil
	}
	n := int64(len(batch))
	if err := r.abortCtx.Err(); err != nil {
		// Close's context has ended: every try would fail at once.
		r.abandoned.Add(n)
		return fmt.Errorf("abandon %d traces: %w", n, err)
	}
	var err error
	for try := 0; try < maxTries; try++ {
		if try > 0 && !r.sleep(retryBackoff<<(2*(try-1))) {
			break
		}
		if err = r.insert(batch, rep); err == nil {
			return nil
		}
		if isInvalid(err) {
			// The store refused a trace, not the batch: retrying cannot
			// help, writing around the bad trace does.
			return r.isolate(batch, rep)
		}
		if r.abortCtx.Err() != nil {
			break // Close gave up waiting; a retry would fail the same way
		}
	}
	return r.lose(batch, err, rep)
}

// insert makes one InsertTraces call and counts it.
func (r *Recorder) insert(batch []store.Trace, rep *reporter) error {
	ctx, cancel := context.WithTimeout(r.abortCtx, r.opts.WriteTimeout)
	defer cancel()
	if err := r.w.InsertTraces(ctx, batch); err != nil {
		r.writeErrors.Add(1)
		rep.failed(err)
		return err
	}
	r.written.Add(int64(len(batch)))
	r.batches.Add(1)
	rep.wrote()
	return nil
}

// lose counts batch as lost to err and returns err wrapped.
func (r *Recorder) lose(batch []store.Trace, err error, rep *reporter) error {
	n := int64(len(batch))
	err = fmt.Errorf("insert %d traces: %w", n, err)
	r.lastErr = err
	r.lost.Add(n)
	rep.lostBatch(n)
	return err
}

// sleep waits d, or less if Close's context ends; it reports whether the
// whole d passed.
func (r *Recorder) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.abortCtx.Done():
		return false
	}
}
