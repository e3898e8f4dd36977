-- traces.otel_trace_id is the OpenTelemetry trace a tool call was part
-- of, when that trace was sampled (docs/adr/0046-opentelemetry.md), so
-- that trace_get leads from the project's own trace to the distributed
-- one. Empty for every row written before, and for what a replica of the
-- previous version writes during a rolling upgrade: adding a column with
-- a constant default rewrites nothing.

--
-- Only the catalogue changes: a column with a constant default and no
-- CHECK to verify, so the exclusive lock is held for no longer than that
-- however many traces there are. The form of the id is checked where
-- traces are written (store.CheckTraces).

-- +goose Up
ALTER TABLE traces ADD COLUMN otel_trace_id text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE traces DROP COLUMN otel_trace_id;
