-- 017: forgetting reaches every copy of what was forgotten, and every access to a bank is on the
-- record (issue 53).
-- Why: a memory deleted through the API left its words behind. The per-bank lexeme counts
-- (migrations 004 and 014) kept a row for every word a bank ever held, at 0 once no memory held it,
-- so a made-up name from a forgotten memory stayed in `bank_lexemes`; an entity whose memories were
-- all deleted stayed in `entities` with no mention; a mental model kept a summary written from a
-- forgotten memory. And nobody could tell afterwards who read or changed a bank.
--
-- Lexeme counts: a word's row goes when no memory (chunk) of the bank holds it any more; the row of
-- the empty lexeme (the bank's count) stays. Rows already at 0 go now.
--
-- Entities: an entity goes with its last link (a statement trigger on memory_entities, so every
-- path that removes links reaches it: a memory forgotten, an edit that names other entities, a
-- retained document replaced). Entities already without a link go now.
--
-- Mental models: `stale_since` says a memory the model drew from was forgotten after its content
-- was written; its content is withdrawn when it quoted the forgotten text, and a refresh that no
-- longer sees the memory clears it (engine/forgetting/erase.py, engine/reflection/mental_models.py).
--
-- audit_logs: one row per request that read or changed a bank (or its keys and connected apps):
-- when, who (an API key id, an OAuth connection, a token's subject; never a secret), which bank,
-- what operation, its outcome and the request id, never memory content. Rows are written in
-- batches by COPY off the request's path (engine/audit/trail.py) and outlive the bank they name:
-- they hold no content, and the deletion of a bank is itself on the record. `bank_id` is '' for a
-- request that named no bank (keys, bank listings), so that the key includes it (Citus-ready).

CREATE OR REPLACE FUNCTION bank_lexemes_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE bank_lexemes b SET n = b.n - x.c
    FROM (
        SELECT bank_id, lexeme, sum(c)::int AS c FROM (
            SELECT r.bank_id, l AS lexeme, 1 AS c FROM removed r, unnest(tsvector_to_array(r.tsv)) l
            UNION ALL
            SELECT r.bank_id, '', 1 FROM removed r
        ) y GROUP BY bank_id, lexeme
    ) x
    WHERE b.bank_id = x.bank_id AND b.lexeme = x.lexeme;
    DELETE FROM bank_lexemes b
    USING (SELECT DISTINCT r.bank_id, l AS lexeme FROM removed r, unnest(tsvector_to_array(r.tsv)) l) x
    WHERE b.bank_id = x.bank_id AND b.lexeme = x.lexeme AND b.n <= 0;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION chunk_lexemes_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE chunk_lexemes b SET n = b.n - x.c
    FROM (
        SELECT bank_id, lexeme, sum(c)::int AS c FROM (
            SELECT r.bank_id, l AS lexeme, 1 AS c FROM removed r, unnest(tsvector_to_array(r.tsv)) l
            UNION ALL
            SELECT r.bank_id, '', 1 FROM removed r
        ) y GROUP BY bank_id, lexeme
    ) x
    WHERE b.bank_id = x.bank_id AND b.lexeme = x.lexeme;
    DELETE FROM chunk_lexemes b
    USING (SELECT DISTINCT r.bank_id, l AS lexeme FROM removed r, unnest(tsvector_to_array(r.tsv)) l) x
    WHERE b.bank_id = x.bank_id AND b.lexeme = x.lexeme AND b.n <= 0;
    RETURN NULL;
END $$;

DELETE FROM bank_lexemes WHERE n <= 0 AND lexeme <> '';
DELETE FROM chunk_lexemes WHERE n <= 0 AND lexeme <> '';

CREATE FUNCTION entities_unlinked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM entities e
    USING (SELECT DISTINCT entity_id FROM removed) x
    WHERE e.id = x.entity_id AND NOT EXISTS (SELECT 1 FROM memory_entities me WHERE me.entity_id = e.id);
    RETURN NULL;
END $$;

CREATE TRIGGER memory_entities_unlinked AFTER DELETE ON memory_entities
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION entities_unlinked();

DELETE FROM entities e WHERE NOT EXISTS (SELECT 1 FROM memory_entities me WHERE me.entity_id = e.id);

ALTER TABLE mental_models ADD COLUMN stale_since timestamptz;

CREATE TABLE audit_logs (
    bank_id     text NOT NULL,
    id          uuid NOT NULL,
    started_at  timestamptz NOT NULL,
    duration_ms integer NOT NULL,
    -- http (REST, /v1/default, the console), mcp (a tool call), system (the scheduler's retention)
    transport   text NOT NULL,
    -- the operation: a REST route's name, an MCP tool's, or the scheduler's job
    action      text NOT NULL,
    method      text,
    -- the route's template (/v1/banks/{bank_id}/memories/{memory_id}), never the path with its values
    route       text,
    status      integer NOT NULL,
    -- ok, or the error's code (forbidden, not_found, ...)
    outcome     text NOT NULL,
    -- an API key id, oauth:<connection>, jwt:<subject>, env (the admin key of the environment),
    -- open (no keys configured), scheduler; NULL when the request was not authenticated
    principal   text,
    request_id  text NOT NULL,
    -- counts a system action reports (memories a retention batch forgot); never content
    detail      jsonb,
    PRIMARY KEY (bank_id, id)
);
CREATE INDEX audit_logs_bank_time ON audit_logs (bank_id, started_at DESC);
CREATE INDEX audit_logs_time ON audit_logs (started_at);
