package traces

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-runtime/mcp-runtime/internal/store"
)

// Writer is what the Recorder needs from the store; store.Store satisfies
// it. Both methods must return soon after ctx is done: Close relies on it
// to stop within its context.
type Writer interface {
	// InsertTraces writes batch. It must not keep batch after it returns:
	// the Recorder reuses the slice for the next batch.
	InsertTraces(ctx context.Context, batch []store.Trace) error
	// PurgeTraces deletes the traces started before cutoff and reports
	// how many.
	PurgeTraces(ctx context.Context, cutoff time.Time) (int64, error)
}

// closedBit marks the gate closed; the bits below it count the Record
// calls between their check of the gate and the end of their send.
const closedBit = int64(1) << 62

// abortGrace is how long Close waits for the goroutines after its context
// ended and their store calls were cancelled. Only a Writer that ignores
// its context needs it; Close must not hang on one.
const abortGrace = time.Second

// Recorder queues traces and writes them in batches; see the package
// documentation. Its methods are safe for concurrent use.
type Recorder struct {
	w     Writer
	opts  Options
	queue chan store.Trace
	// full tells the writer that a batch's worth waits (Record sends
	// without waiting; one token is enough to wake it). unflushed counts
	// the traces accepted and not yet handed to a write, in the queue or
	// in the writer's open batch: Record adds after its send, the writer
	// subtracts a batch once it took it, so when unflushed reaches
	// BatchSize the batch can be filled.
	full      chan struct{}
	unflushed atomic.Int64

	// sampling: successful calls are traced only when Rand returns less
	// than keepBelow (SampleRate scaled to 2^64).
	sampling  bool
	keepBelow uint64

	// gate is closedBit once Close began, plus the Records in flight, so
	// that Close can wait for them without a lock on the hot path.
	gate       atomic.Int64
	recorded   atomic.Int64
	dropped    atomic.Int64
	sampledOut atomic.Int64

	written     atomic.Int64
	batches     atomic.Int64
	writeErrors atomic.Int64
	lost        atomic.Int64
	abandoned   atomic.Int64
	rejected    atomic.Int64
	purged      atomic.Int64
	purgeErrors atomic.Int64

	// stopCtx is cancelled when Close begins: the writer drains and exits,
	// the purger cancels its purge and exits.
	stopCtx context.Context
	stop    context.CancelFunc
	// abortCtx is cancelled when Close's context ends first: it cancels
	// the write in progress and the backoff between tries.
	abortCtx context.Context
	abort    context.CancelFunc

	purgerDone chan struct{}
	done       chan struct{} // both goroutines have exited
	closeOnce  sync.Once

	// unwrittenAtClose is LostInFailedBatches + Abandoned when Close
	// began; what they grow by until done is what Close failed to flush.
	unwrittenAtClose int64
	// lastErr is the last failed write's error. The writer sets it before
	// closing done; Close reads it only after.
	lastErr error
}

// New validates opts, fills in the defaults and starts the writer and
// the retention loop. Close stops them.
func New(w Writer, opts Options) (*Recorder, error) {
	if w == nil {
		return nil, errors.New("traces: new: nil Writer")
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("traces: new: %w", err)
	}
	opts = opts.withDefaults()
	r := &Recorder{
		w:          w,
		opts:       opts,
		queue:      make(chan store.Trace, opts.QueueSize),
		full:       make(chan struct{}, 1),
		purgerDone: make(chan struct{}),
		done:       make(chan struct{}),
	}
	if rate := opts.SampleRate; rate != nil && *rate < 1 {
		// Below 1, rate·2^64 fits a uint64.
		r.sampling, r.keepBelow = true, uint64(math.Ldexp(*rate, 64))
	}
	r.stopCtx, r.stop = context.WithCancel(context.Background())
	r.abortCtx, r.abort = context.WithCancel(context.Background())
	go r.runWriter()
	go r.runPurger()
	return r, nil
}

// Record queues t without blocking and reports whether it was accepted.
// A successful call's trace is first sampled (SampleRate): one not kept
// is counted in Stats.SampledOut, before it costs anything else. It
// fills an empty ID with store.NewID() and an empty StartedAt with
// Now. StartedAt is stored in UTC at microsecond precision, which is what
// PostgreSQL keeps, so both stores hold the same value. When the queue is
// full, or Close has begun, t is dropped and counted in Stats.Dropped.
func (r *Recorder) Record(t store.Trace) bool {
	if r.sampling && t.Status == store.TraceOK && t.ErrorCode == "" && r.opts.Rand() >= r.keepBelow {
		r.sampledOut.Add(1)
		return false
	}
	if t.ID == "" {
		t.ID = store.NewID()
	}
	if t.StartedAt.IsZero() {
		t.StartedAt = r.opts.Now()
	}
	t.StartedAt = t.StartedAt.UTC().Truncate(time.Microsecond)

	if r.gate.Add(1)&closedBit != 0 {
		r.gate.Add(-1)
		r.dropped.Add(1)
		return false
	}
	ok := true
	select {
	case r.queue <- t:
	default:
		ok = false
	}
	r.gate.Add(-1)
	if ok {
		r.recorded.Add(1)
		if r.unflushed.Add(1) >= int64(r.opts.BatchSize) {
			select {
			case r.full <- struct{}{}:
			default:
			}
		}
	} else {
		r.dropped.Add(1)
	}
	return ok
}

// Stats are the Recorder's counters since New. Every accepted trace ends
// up, once written or given up, in exactly one of Written,
// LostInFailedBatches, Rejected and Abandoned; until then it is Queued or
// in the batch being written.
type Stats struct {
	Recorded            int64 // accepted by Record
	Dropped             int64 // refused by Record: queue full or closed
	SampledOut          int64 // successful calls Record did not keep (SampleRate)
	Written             int64 // traces in batches the store accepted
	Batches             int64 // successful InsertTraces calls
	WriteErrors         int64 // failed InsertTraces calls, each try counted
	LostInFailedBatches int64 // traces of batches whose every try failed
	Abandoned           int64 // queued at Close, never tried: ctx ended or store failing
	Rejected            int64 // refused by the store as invalid (*store.FieldError)
	Purged              int64 // traces deleted by retention
	PurgeErrors         int64 // failed PurgeTraces calls
	Queued              int   // waiting in the queue now (a gauge)
}

// Stats returns the counters. Each is read atomically; together they are
// not one snapshot.
func (r *Recorder) Stats() Stats {
	return Stats{
		Recorded:            r.recorded.Load(),
		Dropped:             r.dropped.Load(),
		SampledOut:          r.sampledOut.Load(),
		Written:             r.written.Load(),
		Batches:             r.batches.Load(),
		WriteErrors:         r.writeErrors.Load(),
		LostInFailedBatches: r.lost.Load(),
		Abandoned:           r.abandoned.Load(),
		Rejected:            r.rejected.Load(),
		Purged:              r.purged.Load(),
		PurgeErrors:         r.purgeErrors.Load(),
		Queued:              len(r.queue),
	}
}

// Close stops accepting traces, writes the queued ones and stops the
// goroutines (INV-MCP-XC-003). If ctx ends first, it cancels the write in
// progress, abandons the rest and returns ctx.Err() wrapped; if the store
// fails the final writes, it returns that error wrapped. Either way it
// returns. Calling Close again waits for the same shutdown.
func (r *Recorder) Close(ctx context.Context) error {
	r.closeOnce.Do(r.shut)
	select {
	case <-r.done:
	case <-ctx.Done():
		r.abort()
		select {
		case <-r.done:
		case <-time.After(abortGrace):
			return fmt.Errorf("traces: close: writer still running %v after cancellation: %w", abortGrace, ctx.Err())
		}
		if n := r.unwritten(); n > 0 {
			return fmt.Errorf("traces: close: %d traces not written: %w", n, ctx.Err())
		}
	}
	if n := r.unwritten(); n > 0 {
		cause := r.lastErr
		if cause == nil { // abandoned because another Close's ctx ended
			cause = r.abortCtx.Err()
		}
		return fmt.Errorf("traces: close: %d traces not written: %w", n, cause)
	}
	return nil
}

// unwritten is how many traces were lost or abandoned since Close began.
func (r *Recorder) unwritten() int64 {
	return r.lost.Load() + r.abandoned.Load() - r.unwrittenAtClose
}

// shut closes the gate and waits for the Records already past it before
// telling the goroutines to stop. Their sends do not block, so the wait
// is brief; after it the queue only shrinks, and the writer's final drain
// sees every accepted trace.
func (r *Recorder) shut() {
	r.gate.Or(closedBit)
	for r.gate.Load() != closedBit {
		runtime.Gosched()
	}
	r.unwrittenAtClose = r.lost.Load() + r.abandoned.Load()
	r.stop()
}
