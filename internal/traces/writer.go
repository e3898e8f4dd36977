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
	failing := false         // the latest batch was lost
	flush := func() {
		timer.Stop()
		due = nil
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
		select {
		case t := <-r.queue:
			batch = append(batch, t)
			if len(batch) == 1 {
				timer.Reset(r.opts.FlushInterval)
				due = timer.C
			}
			if len(batch) == r.opts.BatchSize {
				flush()
			}
		case <-due:
			flush()
		case <-r.stopCtx.Done():
			r.drain(batch, failing, rep)
			return
		}
	}
}

// drain writes batch and everything still queued, in batches. Close has
// closed the gate, so the queue no longer grows. Once a batch is lost
// (failing: the latest one before Close was), the rest is abandoned
// without a try: spending the retry schedule on every remaining batch
// would hold the shutdown hostage to a dead database.
func (r *Recorder) drain(batch []store.Trace, failing bool, rep *reporter) {
	for {
	fill:
		for len(batch) < r.opts.BatchSize {
			select {
			case t := <-r.queue:
				batch = append(batch, t)
			default:
				break fill
			}
		}
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
