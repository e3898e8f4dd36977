-- traces.client_session holds a handle of the client session, no longer
-- its id. An Mcp-Session-Id is a bearer credential, and every caller of a
-- tenant can read this column (trace_list, trace_get, trace://). The
-- handle is 'cs.' and the first 16 hex digits of the SHA-256 of the id,
-- the formula of store.ClientSessionHandle, so the calls of one client
-- session keep one handle across this conversion.
--
-- The rows written before are converted. A trigger converts what a
-- replica of the previous version still writes during a rolling upgrade;
-- this version writes handles, which the trigger leaves as they are.
-- Converting is one pass over the table; a large one needs the
-- statement timeout lifted, as below.

-- +goose Up

SET LOCAL statement_timeout = 0;

-- +goose StatementBegin
CREATE FUNCTION mcp_client_session_handle(id text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN id = '' OR id ~ '^cs\.[0-9a-f]{16}$' THEN id
                ELSE 'cs.' || left(encode(sha256(convert_to(id, 'UTF8')), 'hex'), 16) END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION traces_client_session_handle() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.client_session := mcp_client_session_handle(NEW.client_session);
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER traces_client_session_handle
    BEFORE INSERT OR UPDATE OF client_session ON traces
    FOR EACH ROW EXECUTE FUNCTION traces_client_session_handle();

UPDATE traces SET client_session = mcp_client_session_handle(client_session)
WHERE client_session <> '' AND client_session !~ '^cs\.[0-9a-f]{16}$';

-- +goose Down

-- The ids converted cannot be brought back; the handles stay.
DROP TRIGGER traces_client_session_handle ON traces;
DROP FUNCTION traces_client_session_handle();
DROP FUNCTION mcp_client_session_handle(text);
