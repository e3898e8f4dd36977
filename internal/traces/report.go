package traces

import (
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// reportEvery is the least time between two log lines about failed writes
// or dropped traces. A dead database fails a batch every half second or
// so and a full queue drops on every call; a line each time would bury
// every other log line and cost the I/O we are trying to spare.
const reportEvery = 5 * time.Second

// reporter logs the writer's trouble, rate-limited: one line at most every
// reportEvery, with the counts since the previous line, so nothing is
// silent (INV-MCP-XC-001) and nothing floods. Only the writer goroutine
// uses it, so it needs no lock.
type reporter struct {
	log     zerolog.Logger
	now     func() time.Time
	dropped *atomic.Int64 // the Recorder's counter, read for its growth

	last        time.Time // of the previous line; zero before the first
	failures    int64     // failed tries since the previous line
	lost        int64     // traces of lost batches since the previous line
	rejected    int64     // traces the store refused since the previous line
	lastErr     error
	droppedSeen int64 // dropped at the previous line
	writing     bool  // the latest try succeeded
}

func newReporter(log zerolog.Logger, now func() time.Time, dropped *atomic.Int64) *reporter {
	return &reporter{log: log, now: now, dropped: dropped, writing: true}
}

func (p *reporter) failed(err error) {
	p.failures++
	p.lastErr = err
	p.writing = false
	p.maybe()
}

func (p *reporter) lostBatch(n int64) {
	p.lost += n
	p.maybe()
}

func (p *reporter) rejectedTrace() {
	p.rejected++
	p.maybe()
}

func (p *reporter) wrote() {
	p.writing = true
	p.maybe()
}

// maybe logs when there is something to say and the last line is old
// enough.
func (p *reporter) maybe() {
	if !p.last.IsZero() && p.now().Sub(p.last) < reportEvery {
		return
	}
	p.flush()
}

// flush logs what happened since the previous line, if anything, now.
func (p *reporter) flush() {
	dropped := p.dropped.Load() - p.droppedSeen
	if p.failures == 0 && p.lost == 0 && p.rejected == 0 && dropped == 0 {
		return
	}
	p.log.Warn().
		Int64("writeFailures", p.failures).
		Int64("lostTraces", p.lost).
		Int64("rejectedTraces", p.rejected).
		Int64("droppedTraces", dropped).
		Bool("writing", p.writing).
		AnErr("lastError", p.lastErr).
		Msg("trace recording degraded")
	p.last = p.now()
	p.failures, p.lost, p.rejected, p.lastErr = 0, 0, 0, nil
	p.droppedSeen += dropped
}
