package traces

import (
	"context"
	"time"
)

const (
	// firstPurgeDelay: a restarted process catches up on retention soon,
	// but not while start-up is still busy.
	firstPurgeDelay = time.Minute
	// purgeTimeout bounds one PurgeTraces call: a DELETE of an interval's
	// worth of traces, generous but still finite when the database hangs.
	purgeTimeout = time.Minute
)

// runPurger is the retention goroutine.
func (r *Recorder) runPurger() {
	defer close(r.purgerDone)
	t := time.NewTimer(min(firstPurgeDelay, r.opts.PurgeInterval))
	defer t.Stop()
	for {
		select {
		case <-r.stopCtx.Done():
			return
		case <-t.C:
		}
		r.purge()
		// Reset after the purge, not on a ticker, so a slow purge is
		// never followed at once by the next one.
		t.Reset(r.opts.PurgeInterval)
	}
}

// purge deletes the traces older than Retention. A failure is logged and
// counted; the next interval tries again. Close cancels a purge in
// progress: it is idempotent, and the next start catches up.
func (r *Recorder) purge() {
	cutoff := r.opts.Now().Add(-r.opts.Retention)
	ctx, cancel := context.WithTimeout(r.stopCtx, purgeTimeout)
	n, err := r.w.PurgeTraces(ctx, cutoff)
	cancel()
	if err != nil {
		if r.stopCtx.Err() != nil {
			return // cancelled by Close, not a failure of the store
		}
		r.purgeErrors.Add(1)
		r.opts.Log.Warn().Err(err).Time("cutoff", cutoff).Msg("trace purge failed")
		return
	}
	r.purged.Add(n)
	r.opts.Log.Debug().Int64("purged", n).Time("cutoff", cutoff).Msg("traces purged")
}
