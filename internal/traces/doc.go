// Package traces records a store.Trace for every tools/call off the hot
// path (DESIGN.md, "A tools/call, end to end", step 9; ADR 0004 and 0031
// in docs/adr) and enforces their retention.
//
// # Hot path
//
// Record is a non-blocking send of the trace, by value, into a bounded
// channel. It shares no lock with the writer: when the channel is full the
// trace is dropped and counted, so a slow or dead database costs a tool
// call nothing but its trace. The only allocation is the trace id when the
// caller did not set one.
//
// # Sampling
//
// With SampleRate below 1, Record keeps a successful call's trace with
// that probability and every failed call's (any error code), so an
// operator can trace a busy deployment's failures in full and its
// successes in proportion. The decision is one call to a lock-free
// random source and a comparison, made before anything else: a
// sampled-out trace costs no id, no queue slot and no write. Sampled-out
// traces are counted (Stats.SampledOut), not dropped.
//
// # Writer
//
// One goroutine takes traces off the queue and writes them with
// Writer.InsertTraces in batches of up to BatchSize, or sooner when
// FlushInterval has passed since the first trace of the batch, each write
// bounded by WriteTimeout. It wakes once a batch, not once a trace: the
// first trace of a batch starts its timer, and Record tells the writer
// when a batch's worth is waiting. A failed batch is retried a bounded number of
// times with growing backoff while new traces keep queueing (and dropping
// once the queue is full); after the last try it is counted in
// Stats.LostInFailedBatches and discarded. Memory is bounded by QueueSize
// plus one batch, whatever the database does. A batch the store refuses
// as invalid (*store.FieldError) is not retried but halved until the
// invalid traces stand alone, so one bad trace does not cost a whole
// batch; those are counted in Stats.Rejected. Failures are logged at most
// once per few seconds, with the count since the previous line, so an
// outage does not flood the log.
//
// # Retention
//
// A second goroutine calls Writer.PurgeTraces(Now() - Retention) every
// PurgeInterval, the first time soon after start so a restarted process
// catches up at once. Its errors are logged and counted, never fatal.
//
// # Shutdown
//
// Close stops accepting traces, writes what is queued, and stops both
// goroutines (INV-MCP-XC-003). It honours its context: when the context
// ends first, the write in progress is cancelled, what is left is
// counted in Stats.Abandoned, and Close returns the context's error
// wrapped. Every accepted trace ends up in exactly one of Written,
// LostInFailedBatches, Rejected or Abandoned.
package traces
