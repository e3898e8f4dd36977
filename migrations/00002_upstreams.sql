-- Upstream MCP servers registered through the admin API. They belong to
-- the deployment, so unlike every other table there is no tenant. The id
-- is COLLATE "C" so ORDER BY id is byte order, as in the in-memory store;
-- config is opaque here (package upstream validates it).

-- +goose Up

CREATE TABLE upstreams (
    id         text COLLATE "C" PRIMARY KEY,
    config     jsonb NOT NULL,
    version    bigint NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

-- +goose Down

DROP TABLE upstreams;
