-- The initial schema. Every table is scoped by tenant, and tenant leads
-- every primary key and index so that each query touches one tenant's
-- rows only.
--
-- Identifier columns use COLLATE "C": keyset pagination compares them
-- with row comparisons, and byte order is what the in-memory store's Go
-- string comparison gives. Declaring the collation on the column (rather
-- than only in queries) keeps the btree indexes usable for those
-- comparisons and ORDER BYs.

-- +goose Up

-- memory_search_text prepares an identifier (a key or a tag) for the
-- English text-search parser. The parser keeps "notes/2024/plan.md" or
-- "a.b" as one file or host token, so a search for "plan" would miss
-- them; we append a copy with ASCII punctuation turned into spaces. The
-- original stays so that a query for the whole token still matches.
-- Hyphens are left alone: the parser already indexes a hyphenated word
-- as the compound and its parts, and a query for one is a phrase of
-- those. The class is spelled as ASCII ranges, not [[:punct:]], so the
-- result does not depend on the database's locale, which is what makes
-- IMMUTABLE (required by a generated column) true.
CREATE FUNCTION memory_search_text(s text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE
        WHEN s ~ '[!-,./:-@[-`{-~]' THEN s || ' ' || regexp_replace(s, '[!-,./:-@[-`{-~]+', ' ', 'g')
        ELSE s
    END;

-- memory_tags_text joins the tags, each prepared as above, into one text
-- ('' when there are none: a NULL would make the whole tsvector NULL).
-- It is a function because a generated column cannot hold a subquery,
-- and declared IMMUTABLE because its parts are for text[] even though
-- array-handling functions in general are only STABLE.
CREATE FUNCTION memory_tags_text(tags text[]) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN coalesce((SELECT string_agg(memory_search_text(t), ' ') FROM unnest(tags) AS t), '');

CREATE TABLE memory_entries (
    tenant     text COLLATE "C" NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    value      jsonb NOT NULL,
    tags       text[] COLLATE "C" NOT NULL DEFAULT '{}',
    version    bigint NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    expires_at timestamptz,
    -- Key words weigh most (A), then tags (B), then the string values
    -- anywhere inside the JSON value (C); numbers, booleans and object
    -- keys of the value are not searchable.
    search tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, memory_search_text(key)), 'A') ||
        setweight(to_tsvector('english'::regconfig, memory_tags_text(tags)), 'B') ||
        setweight(jsonb_to_tsvector('english'::regconfig, value, '["string"]'), 'C')
    ) STORED,
    PRIMARY KEY (tenant, namespace, key)
);

CREATE INDEX memory_entries_tags_idx ON memory_entries USING gin (tags);
CREATE INDEX memory_entries_search_idx ON memory_entries USING gin (search);
-- The purge looks across tenants, so this one does not lead with tenant.
CREATE INDEX memory_entries_expiry_idx ON memory_entries (expires_at)
    WHERE expires_at IS NOT NULL;
-- RecentMemory: (updated_at, namespace, key) descending, read in index order.
CREATE INDEX memory_entries_recent_idx
    ON memory_entries (tenant, updated_at DESC, namespace DESC, key DESC);

CREATE TABLE sessions (
    tenant        text COLLATE "C" NOT NULL,
    id            text COLLATE "C" NOT NULL,
    task          text NOT NULL,
    initiator     text COLLATE "C" NOT NULL,
    status        text NOT NULL CHECK (status IN ('active', 'completed', 'failed')),
    metadata      jsonb,
    summary       text NOT NULL DEFAULT '',
    error_code    text,
    error_message text,
    version       bigint NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    ended_at      timestamptz,
    PRIMARY KEY (tenant, id)
);

CREATE INDEX sessions_created_idx ON sessions (tenant, created_at DESC, id DESC);
CREATE INDEX sessions_updated_idx ON sessions (tenant, updated_at DESC, id DESC);

CREATE TABLE session_participants (
    tenant     text COLLATE "C" NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    agent_id   text COLLATE "C" NOT NULL,
    role       text NOT NULL,
    joined_at  timestamptz NOT NULL,
    -- Join order: joined_at can tie within a microsecond, seq cannot.
    seq        bigint GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (tenant, session_id, agent_id),
    FOREIGN KEY (tenant, session_id) REFERENCES sessions (tenant, id) ON DELETE CASCADE
);

CREATE TABLE agents (
    tenant       text COLLATE "C" NOT NULL,
    id           text COLLATE "C" NOT NULL,
    description  text NOT NULL,
    display_name text NOT NULL DEFAULT '',
    capabilities text[] COLLATE "C" NOT NULL DEFAULT '{}',
    tags         text[] COLLATE "C" NOT NULL DEFAULT '{}',
    metadata     jsonb,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE INDEX agents_tags_idx ON agents USING gin (tags);
CREATE INDEX agents_capabilities_idx ON agents USING gin (capabilities);
CREATE INDEX agents_updated_idx ON agents (tenant, updated_at DESC, id DESC);

CREATE TABLE traces (
    tenant         text COLLATE "C" NOT NULL,
    id             text COLLATE "C" NOT NULL,
    tool           text COLLATE "C" NOT NULL,
    client_session text NOT NULL DEFAULT '',
    status         text NOT NULL,
    error_code     text COLLATE "C" NOT NULL DEFAULT '',
    duration_ms    double precision NOT NULL,
    arg_bytes      bigint NOT NULL,
    result_bytes   bigint NOT NULL,
    started_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE INDEX traces_started_idx ON traces (tenant, started_at DESC, id DESC);
CREATE INDEX traces_tool_idx ON traces (tenant, tool, started_at DESC);
-- The retention purge looks across tenants.
CREATE INDEX traces_purge_idx ON traces (started_at);

-- +goose Down

DROP TABLE traces;
DROP TABLE agents;
DROP TABLE session_participants;
DROP TABLE sessions;
DROP TABLE memory_entries;
DROP FUNCTION memory_tags_text(text[]);
DROP FUNCTION memory_search_text(text);
