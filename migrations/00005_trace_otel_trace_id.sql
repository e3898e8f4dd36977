-- traces.otel_trace_id is the OpenTelemetry trace a tool call was part
-- of, when that trace was sampled (docs/adr/0046-opentelemetry.md), so
-- that trace_get leads from the project's own trace to the distributed
-- one. Empty for every row written before, and for what a replica of the
-- previous version writes during a rolling upgrade: adding a column with
-- a constant default rewrites nothing.

-- +goose Up
ALTER TABLE traces ADD COLUMN otel_trace_id text NOT NULL DEFAULT ''
    CHECK (otel_trace_id = '' OR otel_trace_id ~ '^[0-9a-f]{32}$');

-- +goose Down
ALTER TABLE traces DROP COLUMN otel_trace_id;
