-- Banks: cheap rows whose deletion cascades to everything in them (engine/banks/registry.py).

-- bank_ensure --
-- A bank comes into being at its first write (retain, import, mental model); nothing happens if it exists.
INSERT INTO banks (id) VALUES ($1) ON CONFLICT (id) DO NOTHING;

-- bank_lock_writes --
-- The bank's write lock, held to the end of the transaction (why: engine/runtime.lock_writes).
SELECT pg_advisory_xact_lock(hashtextextended($1, 1));

-- bank_create --
-- create_bank is idempotent ("create or retrieve"): a new bank, or no row when the id is taken.
INSERT INTO banks (id, name, mission, config) VALUES ($1, $2, $3, $4::jsonb)
ON CONFLICT (id) DO NOTHING
RETURNING id, name, mission, disposition, config, created_at, updated_at;

-- bank_get --
-- One bank's own row.
SELECT id, name, mission, disposition, config, created_at, updated_at FROM banks WHERE id = $1;

-- bank_exists --
-- Whether the bank was ever written: a bank that was not reads as empty.
SELECT true FROM banks WHERE id = $1;

-- bank_stats --
-- The counts shown with one bank (memories, live entities, retained documents, last memory).
SELECT (SELECT count(*) FROM memories WHERE bank_id = $1) AS memories,
       (SELECT count(*) FROM entities WHERE bank_id = $1 AND mention_count > 0) AS entities,
       (SELECT count(DISTINCT document_id) FROM memories WHERE bank_id = $1 AND document_id IS NOT NULL) AS documents,
       (SELECT max(created_at) FROM memories WHERE bank_id = $1) AS last_memory_at;

-- bank_counts_by_kind --
-- A bank's memories by type (world, experience).
SELECT kind, count(*) AS n FROM memories WHERE bank_id = $1 GROUP BY kind;

-- bank_link_counts --
-- A bank's links: entity mentions of its memories, and the sources of its extracted facts.
SELECT (SELECT count(*) FROM memory_entities me JOIN memories m ON m.id = me.memory_id WHERE m.bank_id = $1) AS entity,
       (SELECT count(*) FROM fact_sources f JOIN memories m ON m.id = f.fact_id WHERE m.bank_id = $1) AS source;

-- bank_operation_counts --
-- A bank's operations by status.
SELECT status, count(*) AS n FROM operations WHERE bank_id = $1 GROUP BY status;

-- bank_list --
-- A page of the banks (every bank for an admin key or no keys at all; $1 the banks a scoped key
-- may see), those whose id or name holds $2 in any case, by id; each row carries how many match
-- in all, and an empty page one row of nulls with that count.
WITH matching AS (
    SELECT id, name, mission, disposition, config, created_at, updated_at FROM banks
    WHERE ($1::text[] IS NULL OR id = ANY($1::text[]))
      AND ($2::text IS NULL OR strpos(lower(id), lower($2)) > 0 OR strpos(lower(coalesce(name, '')), lower($2)) > 0)
), page AS (
    SELECT * FROM matching ORDER BY id LIMIT $3 OFFSET $4
)
SELECT t.total, p.* FROM (SELECT count(*) AS total FROM matching) t LEFT JOIN page p ON true ORDER BY p.id;

-- bank_lock --
-- The bank's row, held until the transaction ends, so a change computed from it is not lost to another.
SELECT id, name, mission, disposition, config, created_at, updated_at FROM banks WHERE id = $1 FOR UPDATE;

-- bank_memory_counts --
-- Memory counts and last write of the listed banks, in one pass for a whole bank list.
SELECT bank_id, count(*) AS n, max(created_at) AS last FROM memories
WHERE bank_id = ANY($1::text[]) GROUP BY bank_id;

-- bank_entity_counts --
-- Entity counts (those still mentioned) of the listed banks.
SELECT bank_id, count(*) AS n FROM entities
WHERE bank_id = ANY($1::text[]) AND mention_count > 0 GROUP BY bank_id;

-- bank_update --
-- Set what a PATCH names ($2, $4, $6 say whether name, mission, disposition were given); config merges.
UPDATE banks SET name = CASE WHEN $2 THEN $3 ELSE name END,
                 mission = CASE WHEN $4 THEN $5 ELSE mission END,
                 disposition = CASE WHEN $6 THEN $7::jsonb ELSE disposition END,
                 config = config || $8::jsonb,
                 updated_at = now()
WHERE id = $1
RETURNING id, name, mission, disposition, config, created_at, updated_at;

-- bank_memory_count --
-- How many memories a bank holds, reported when it is deleted.
SELECT count(*) FROM memories WHERE bank_id = $1;

-- bank_delete_grants --
-- The bank's OAuth connections go with it (their tokens by cascade): the OAuth tables refer to no
-- bank's row, as a reference table under Citus may not (migration 021).
DELETE FROM oauth_grants WHERE bank_id = $1;

-- bank_delete --
-- Delete a bank; its rows go by cascade.
DELETE FROM banks WHERE id = $1 RETURNING id;

-- bank_profile --
-- What reflect says in the bank's voice: its mission and disposition.
SELECT mission, disposition FROM banks WHERE id = $1;
