-- API keys created through the admin API (issue 8). Like upstreams they
-- belong to the deployment; tenant is the tenant a key acts on. Only the
-- key's SHA-256 is stored, unique, so a request's key is found by one
-- index lookup. A revoked key stays, for the record.

-- +goose Up

CREATE TABLE api_keys (
    id         text COLLATE "C" PRIMARY KEY,
    hash       text NOT NULL UNIQUE,
    tenant     text NOT NULL,
    scopes     text[] NOT NULL,
    admin      boolean NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);

-- +goose Down

DROP TABLE api_keys;
