package traces

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/rs/zerolog"
)

// Defaults for the zero values of Options.
const (
	DefaultQueueSize     = 10_000
	DefaultBatchSize     = 500
	DefaultFlushInterval = 200 * time.Millisecond
	DefaultWriteTimeout  = 5 * time.Second
	DefaultRetention     = 7 * 24 * time.Hour
	DefaultPurgeInterval = time.Hour
)

// Bounds Validate enforces. Each says why the value beyond it is absurd.
const (
	// A trace is about 150 bytes in the queue, so a million is ~150 MB
	// held in memory before anything reaches the database.
	maxQueueSize = 1_000_000
	// PostgreSQL allows 65,535 bind parameters per statement and a trace
	// row takes 10, so a multi-row insert cannot go much beyond 6,500.
	maxBatchSize = 5_000
	// Traces not written for longer than a minute are invisible to
	// trace.list and trace.analyze for too long to be useful.
	maxFlushInterval = time.Minute
	// A write that takes longer than this is a dead database; retrying
	// sooner is better.
	maxWriteTimeout = 5 * time.Minute
	// Retention comes in whole days from YAML: at least one.
	minRetention = 24 * time.Hour
	maxRetention = 3650 * 24 * time.Hour
	// Purging more than once a second hammers the database with DELETEs;
	// less than weekly lets the table grow far past the retention.
	minPurgeInterval = time.Second
	maxPurgeInterval = 7 * 24 * time.Hour
)

// Options configure a Recorder. Zero values mean the defaults.
type Options struct {
	// QueueSize bounds the traces waiting to be written (traces.queueSize).
	QueueSize int
	// BatchSize is the most traces per InsertTraces call; a batch is
	// written when it is full or FlushInterval after its first trace
	// (traces.batchSize).
	BatchSize int
	// FlushInterval (traces.flushIntervalMs).
	FlushInterval time.Duration
	// WriteTimeout bounds each InsertTraces call (traces.writeTimeoutMs).
	WriteTimeout time.Duration
	// Retention: traces that started longer ago are purged
	// (traces.retentionDays).
	Retention time.Duration
	// PurgeInterval is the time between purges (traces.purgeIntervalMs).
	PurgeInterval time.Duration
	// SampleRate is the share of successful calls whose trace is kept
	// (traces.sampleRate), from 0 to 1; a failed call's trace is always
	// kept. nil keeps every trace. A pointer because 0, keeping failed
	// calls only, is a setting of its own.
	SampleRate *float64
	// Rand is sampling's random source, uniform over uint64. nil is
	// math/rand/v2's Uint64, which takes no lock and allocates nothing;
	// tests give a deterministic one.
	Rand func() uint64
	// Log receives write failures (rate-limited) and purge results. The
	// zero Logger discards everything.
	Log zerolog.Logger
	// Now is the clock for StartedAt, purge cutoffs and log rate
	// limiting; time.Now when nil.
	Now func() time.Time
}

// An OptionError reports one invalid option. Validate returns one per
// problem, joined with errors.Join; use errors.As to inspect them.
type OptionError struct {
	// Key is the camelCase YAML key, e.g. "traces.queueSize".
	Key string
	// Value is the rejected value, in the key's unit.
	Value any
	// Want says what would have been accepted.
	Want string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("%s: invalid value %v: want %s", e.Key, e.Value, e.Want)
}

// Validate reports every invalid option by its YAML key, not just the
// first, so an operator fixes a bad file in one round trip.
func (o Options) Validate() error {
	var errs []error
	bad := func(key string, v any, want string) {
		errs = append(errs, &OptionError{Key: key, Value: v, Want: want})
	}
	// Durations are shown in the key's unit, as written in YAML, with the
	// duration itself for the values no YAML integer can produce.
	in := func(d, unit time.Duration) string {
		v := strconv.FormatFloat(float64(d)/float64(unit), 'f', -1, 64)
		if d%unit != 0 {
			v += " (" + d.String() + ")"
		}
		return v
	}
	ms := func(d time.Duration) string { return in(d, time.Millisecond) }
	// outside: 0 is the default; anything else, negatives included, must
	// lie in [lo, hi].
	outside := func(d, lo, hi time.Duration) bool { return d != 0 && (d < lo || d > hi) }
	msRange := func(def, lo, hi time.Duration) string {
		return fmt.Sprintf("0 (default %d) or %d to %d milliseconds", def.Milliseconds(), lo.Milliseconds(), hi.Milliseconds())
	}

	queueOK := o.QueueSize >= 0 && o.QueueSize <= maxQueueSize
	if !queueOK {
		bad("traces.queueSize", o.QueueSize, fmt.Sprintf("0 (default %d) or 1 to %d", DefaultQueueSize, maxQueueSize))
	}
	if o.BatchSize < 0 || o.BatchSize > maxBatchSize {
		bad("traces.batchSize", o.BatchSize, fmt.Sprintf("0 (default %d) or 1 to %d", DefaultBatchSize, maxBatchSize))
	} else if q := o.withDefaults().QueueSize; queueOK && o.BatchSize > q {
		// A batch larger than the queue could never fill, so every write
		// would wait for FlushInterval: almost certainly a mistake. (The
		// default batch size shrinks to the queue instead.)
		bad("traces.batchSize", o.BatchSize, fmt.Sprintf("at most traces.queueSize (%d)", q))
	}
	if outside(o.FlushInterval, time.Millisecond, maxFlushInterval) {
		bad("traces.flushIntervalMs", ms(o.FlushInterval), msRange(DefaultFlushInterval, time.Millisecond, maxFlushInterval))
	}
	if outside(o.WriteTimeout, time.Millisecond, maxWriteTimeout) {
		bad("traces.writeTimeoutMs", ms(o.WriteTimeout), msRange(DefaultWriteTimeout, time.Millisecond, maxWriteTimeout))
	}
	if outside(o.Retention, minRetention, maxRetention) {
		bad("traces.retentionDays", in(o.Retention, 24*time.Hour),
			fmt.Sprintf("0 (default %d) or 1 to %d days", int(DefaultRetention.Hours()/24), int(maxRetention.Hours()/24)))
	}
	if outside(o.PurgeInterval, minPurgeInterval, maxPurgeInterval) {
		bad("traces.purgeIntervalMs", ms(o.PurgeInterval), msRange(DefaultPurgeInterval, minPurgeInterval, maxPurgeInterval))
	}
	if r := o.SampleRate; r != nil && !(*r >= 0 && *r <= 1) { // NaN too
		bad("traces.sampleRate", *r, "a number from 0 (failed calls only) to 1 (every call)")
	}
	return errors.Join(errs...)
}

// withDefaults fills every zero value.
func (o Options) withDefaults() Options {
	if o.QueueSize == 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.BatchSize == 0 {
		o.BatchSize = min(DefaultBatchSize, o.QueueSize)
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.PurgeInterval == 0 {
		o.PurgeInterval = DefaultPurgeInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Uint64
	}
	return o
}
