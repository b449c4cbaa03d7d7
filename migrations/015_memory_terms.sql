-- 015: the keyword arm reads a narrow copy of what it needs from each memory (issue 27).
-- Why: on a big bank the keyword arm reads ~1,000 candidate rows a recall to test every query
-- word and the truth filters. A memory's row is ~2 KB (its vector stays in the row, migration
-- 013), three to four to a page, and the tsvector and truth columns sit after the vector, so
-- each candidate cost a page of its own in a 243 MB table. Here each memory's words and the
-- columns recall filters on most take ~0.3 KB, ~22 to a page (37 MB at 100,000 memories): the
-- arm on the 100,000-memory bank took 2.1 instead of 3.0 ms for the same 256 LoCoMo questions,
-- with the same lists (bench/README.md, "Keyword arm: a narrow table of its own"). Putting the
-- same columns first in `memories` gained half as much and meant rewriting the table.
-- The keyword arm reads this table when a request's filters name only its columns (the usual
-- case: what is true now, tags, types, entities, times); a filter on another column (context,
-- text, document, metadata) reads `memories` as before, through its own full-text index.
-- Triggers keep it equal to `memories` on every path that writes memories (COPY on retain,
-- inserts on import, curation's updates, deletes, cascades from a deleted bank). Rows are
-- written in the same transaction as the memory, so a recall never sees one without the other.
-- Writers are held off while the copy is made (another process on the same database may still
-- run the code before this migration), so no write falls between the copy and the triggers.
-- fillfactor 90 leaves room on each page for an update (a raw unit marked superseded when its
-- facts are extracted) to stay on its page, without touching the indexes.
-- A later migration that rewrites `memories` without firing triggers (a new generated tsv, as
-- 010 did) must refresh this copy in the same migration.

LOCK TABLE memories IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE memory_terms (
    bank_id        text NOT NULL,
    id             uuid NOT NULL,
    kind           text NOT NULL,
    tags           text[] NOT NULL,
    superseded     boolean NOT NULL,
    invalidated_at timestamptz,
    valid_from     timestamptz,
    valid_to       timestamptz,
    occurred_start timestamptz,
    occurred_end   timestamptz,
    mentioned_at   timestamptz,
    created_at     timestamptz NOT NULL,
    tsv            tsvector NOT NULL
) WITH (fillfactor = 90);

-- A bank's rows together, oldest first, as retain appends them; the indexes built after the copy.
INSERT INTO memory_terms
SELECT bank_id, id, kind, tags, superseded, invalidated_at, valid_from, valid_to, occurred_start, occurred_end,
       mentioned_at, created_at, tsv
FROM memories ORDER BY bank_id, created_at;
ALTER TABLE memory_terms ADD PRIMARY KEY (bank_id, id);
CREATE INDEX memory_terms_tsv ON memory_terms USING gin (tsv) WITH (gin_pending_list_limit = 256);
CREATE FUNCTION memory_terms_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_terms
    SELECT r.bank_id, r.id, r.kind, r.tags, r.superseded, r.invalidated_at, r.valid_from, r.valid_to,
           r.occurred_start, r.occurred_end, r.mentioned_at, r.created_at, r.tsv
    FROM added r;
    RETURN NULL;
END $$;

CREATE FUNCTION memory_terms_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_terms t USING removed r WHERE t.bank_id = r.bank_id AND t.id = r.id;
    RETURN NULL;
END $$;

CREATE FUNCTION memory_terms_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_terms t
    SET bank_id = NEW.bank_id, id = NEW.id, kind = NEW.kind, tags = NEW.tags, superseded = NEW.superseded,
        invalidated_at = NEW.invalidated_at, valid_from = NEW.valid_from, valid_to = NEW.valid_to,
        occurred_start = NEW.occurred_start, occurred_end = NEW.occurred_end, mentioned_at = NEW.mentioned_at,
        created_at = NEW.created_at, tsv = NEW.tsv
    WHERE t.bank_id = OLD.bank_id AND t.id = OLD.id;
    RETURN NULL;
END $$;

CREATE FUNCTION memory_terms_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE memory_terms;
    RETURN NULL;
END $$;

CREATE TRIGGER memories_terms_add AFTER INSERT ON memories
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION memory_terms_add();
CREATE TRIGGER memories_terms_remove AFTER DELETE ON memories
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION memory_terms_remove();
-- Only writes to these columns change the copy (tsv follows text); re-embedding and entity
-- names (most updates) leave it alone.
CREATE TRIGGER memories_terms_change AFTER UPDATE OF bank_id, id, text, kind, tags, superseded, invalidated_at,
    valid_from, valid_to, occurred_start, occurred_end, mentioned_at, created_at ON memories
    FOR EACH ROW EXECUTE FUNCTION memory_terms_change();
CREATE TRIGGER memories_terms_clear AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION memory_terms_clear();

ANALYZE memory_terms;
