-- Forgetting: memories erased with everything drawn from them (engine/forgetting/), retention, and
-- the vacuum that follows an erasure (db/vacuum.py).

-- forget_closure --
-- What forgetting these memories of the bank erases: the memories themselves and every fact
-- extracted from any of them (shared with other raw units or not: its text came from this one).
SELECT m.id FROM memories m WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[])
UNION
SELECT f.fact_id FROM fact_sources f JOIN memories m ON m.id = f.fact_id
WHERE m.bank_id = $1 AND f.raw_id = ANY($2::uuid[]);

-- forget_sources_of --
-- The raw units these facts of the bank were extracted from (include_sources forgets them too).
SELECT DISTINCT f.raw_id FROM fact_sources f JOIN memories m ON m.id = f.raw_id
WHERE m.bank_id = $1 AND f.fact_id = ANY($2::uuid[]);

-- forget_candidates --
-- What a dry run lists of the memories it would forget, oldest first.
SELECT m.id, m.text, m.kind, m.created_at, m.document_id, m.invalidated_at FROM memories m
WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[]) ORDER BY m.created_at, m.id;

-- forget_kept_sources --
-- The raw units outside the erased set that erased facts were extracted from: they keep their
-- text (the caller is told), and return to recall if no fact of theirs is left.
SELECT DISTINCT f.raw_id FROM fact_sources f JOIN memories m ON m.id = f.raw_id
WHERE m.bank_id = $1 AND f.fact_id = ANY($2::uuid[]) AND NOT (f.raw_id = ANY($2::uuid[]));

-- forget_texts --
-- What the erased memories say and said (each edit's earlier text, from their history), and their
-- retained documents: what a mental model may have quoted, and whose words may now leave the bank.
SELECT m.id, m.text, m.document_id,
       ARRAY(SELECT v.changes -> 'text' ->> 0 FROM memory_versions v
             WHERE v.bank_id = $1 AND v.memory_id = m.id AND jsonb_typeof(v.changes -> 'text' -> 0) = 'string') AS earlier
FROM memories m WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[]);

-- forget_lexemes --
-- The words of the erased memories as the bank counts them (migration 004), earlier texts included.
SELECT DISTINCT l FROM memories m, unnest(tsvector_to_array(m.tsv)) l WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[])
UNION
SELECT DISTINCT l FROM memory_versions v,
     unnest(tsvector_to_array(to_tsvector('english', v.changes -> 'text' ->> 0) || cjk_grams(v.changes -> 'text' ->> 0))) l
WHERE v.bank_id = $1 AND v.memory_id = ANY($2::uuid[]) AND jsonb_typeof(v.changes -> 'text' -> 0) = 'string';

-- forget_entities_linked --
-- The entities the erased memories mention (to count those that go with their last mention).
SELECT DISTINCT me.entity_id FROM memory_entities me JOIN memories m ON m.id = me.memory_id
WHERE m.bank_id = $1 AND me.memory_id = ANY($2::uuid[]);

-- forget_entities_left --
-- How many of these entities of the bank are still there after an erasure.
SELECT count(*) FROM entities WHERE bank_id = $1 AND id = ANY($2::bigint[]);

-- forget_predecessors_restore --
-- Memories an erased memory had superseded are true again (what it replaced stands), unless they
-- are erased too; returns each with the successor it had.
WITH restored AS (
    SELECT m.id, m.superseded_by FROM memories m
    WHERE m.bank_id = $1 AND m.superseded_by = ANY($2::uuid[]) AND NOT (m.id = ANY($2::uuid[]))
)
UPDATE memories m SET valid_to = NULL, superseded_by = NULL, changed_at = now()
FROM restored r WHERE m.bank_id = $1 AND m.id = r.id
RETURNING m.id, r.superseded_by;

-- forget_versions_restored --
-- Record each restoration as the next version of the memory restored (its successor was forgotten).
INSERT INTO memory_versions (bank_id, memory_id, version, action, changes, reason, actor)
SELECT $1, u.id, coalesce((SELECT max(v.version) FROM memory_versions v WHERE v.bank_id = $1 AND v.memory_id = u.id), 0) + 1,
       'restored', jsonb_build_object('superseded_by', jsonb_build_array(u.successor::text, NULL)),
       'its successor ' || u.successor::text || ' was forgotten', $4
FROM unnest($2::uuid[], $3::uuid[]) AS u(id, successor)
JOIN memories m ON m.id = u.id AND m.bank_id = $1;

-- forget_raw_units_return --
-- Raw units whose facts were all erased are in recall again (a raw unit is left out only while
-- facts of it exist).
UPDATE memories m SET superseded = false
WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[]) AND m.superseded
  AND NOT EXISTS (SELECT 1 FROM fact_sources f WHERE f.raw_id = m.id);

-- forget_source_rebuild --
-- The text retained under these document_ids becomes what their remaining units say, in order:
-- the forgotten part leaves it (its formatting between units is not kept).
UPDATE memory_documents d
SET original_text = r.text, content_hash = encode(sha256(convert_to(r.text, 'UTF8')), 'hex'), updated_at = now()
FROM (SELECT m.document_id, string_agg(m.text, E'\n\n' ORDER BY m.source_id, m.position) AS text
      FROM memories m
      WHERE m.bank_id = $1 AND m.document_id = ANY($2::text[])
        AND NOT EXISTS (SELECT 1 FROM fact_sources f WHERE f.fact_id = m.id)
      GROUP BY m.document_id) r
WHERE d.bank_id = $1 AND d.id = r.document_id
RETURNING d.id;

-- forget_sources_emptied --
-- The text retained under these document_ids goes when none of their memories is left.
DELETE FROM memory_documents d
WHERE d.bank_id = $1 AND d.id = ANY($2::text[])
  AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.bank_id = $1 AND m.document_id = d.id)
RETURNING d.id;

-- forget_vanished --
-- Of these words, those no memory of the bank holds any more (their counts are gone).
SELECT l FROM unnest($2::text[]) l
WHERE NOT EXISTS (SELECT 1 FROM bank_lexemes b WHERE b.bank_id = $1 AND b.lexeme = l);

-- forget_retain_payloads --
-- Finished retains of the bank keep how many items they had, not their text (a failed or
-- cancelled one still held it; one that succeeded drops it when it finishes).
UPDATE operations SET payload = jsonb_build_object('actor', payload -> 'actor', 'item_count', jsonb_array_length(payload -> 'items'))
WHERE bank_id = $1 AND type = $2 AND status IN ('succeeded', 'failed', 'cancelled') AND jsonb_typeof(payload -> 'items') = 'array';

-- forget_entity_find --
-- The bank's entity of this canonical name.
SELECT id, name FROM entities WHERE bank_id = $1 AND canonical = $2;

-- forget_entity_memories --
-- A page of the bank's memories that name an entity: linked to it ($2), or holding its name as
-- words ($3, a phrase query), or, for a name in CJK script ($4), holding it anywhere; oldest first.
SELECT m.id, m.text, m.kind, m.created_at, m.document_id,
       EXISTS (SELECT 1 FROM memory_entities me WHERE me.memory_id = m.id AND me.entity_id = $2) AS linked
FROM memories m
WHERE m.bank_id = $1
  AND (m.id IN (SELECT me.memory_id FROM memory_entities me WHERE me.entity_id = $2)
       OR m.tsv @@ phraseto_tsquery('english', $3)
       OR ($4 AND strpos(m.text, $3) > 0))
ORDER BY m.created_at, m.id LIMIT $5;

-- forget_entity_count --
-- How many memories forget_entity_memories finds in all.
SELECT count(*) FROM memories m
WHERE m.bank_id = $1
  AND (m.id IN (SELECT me.memory_id FROM memory_entities me WHERE me.entity_id = $2)
       OR m.tsv @@ phraseto_tsquery('english', $3)
       OR ($4 AND strpos(m.text, $3) > 0));

-- forget_purgeable --
-- A batch of the bank's memories that are no longer true: invalidated ($2), or ended by a newer
-- one or an end date ($3), oldest first.
SELECT m.id FROM memories m
WHERE m.bank_id = $1
  AND (($2 AND m.invalidated_at IS NOT NULL) OR ($3 AND m.valid_to IS NOT NULL AND m.valid_to <= now()))
ORDER BY m.created_at, m.id LIMIT $4;

-- forget_purgeable_count --
-- How many memories forget_purgeable finds in all.
SELECT count(*) FROM memories m
WHERE m.bank_id = $1
  AND (($2 AND m.invalidated_at IS NOT NULL) OR ($3 AND m.valid_to IS NOT NULL AND m.valid_to <= now()));

-- forget_source_memories --
-- A batch of the memories retained under a document_id (its units, and the facts drawn from them).
SELECT m.id FROM memories m WHERE m.bank_id = $1 AND m.document_id = $2 ORDER BY m.source_id, m.position LIMIT $3;

-- forget_source_count --
-- How many memories were retained under a document_id (its units and the facts drawn from them).
SELECT count(*) FROM memories WHERE bank_id = $1 AND document_id = $2;

-- forget_all_memories --
-- A batch of the bank's memories, optionally of one type ($2), oldest first (clearing a bank).
SELECT m.id FROM memories m WHERE m.bank_id = $1 AND ($2::text IS NULL OR m.kind = $2)
ORDER BY m.created_at, m.id LIMIT $3;

-- retention_banks --
-- The banks with a retention policy (banks.config), for the scheduler's sweep.
SELECT id, config FROM banks
WHERE jsonb_typeof(config -> 'retention_days') = 'number' OR config -> 'retention_by_tag' <> '{}'::jsonb;

-- retention_expired --
-- A batch of the bank's memories older than their retention, oldest first: the shortest number of
-- days set for any of their tags ($3 tags, $4 days), else the bank's ($2; NULL: none). $5, the
-- shortest of all, bounds the read through memories_bank_created.
SELECT m.id FROM memories m
WHERE m.bank_id = $1 AND m.created_at < now() - make_interval(days => $5)
  AND m.created_at < now() - make_interval(days => coalesce(
        (SELECT min(t.d) FROM unnest($3::text[], $4::int[]) AS t(tag, d) WHERE t.tag = ANY(m.tags)), $2))
ORDER BY m.created_at LIMIT $6;

-- vacuum_after_erasure --
-- After an erasure: dead rows of the tables it touched are removed and their index entries with
-- them (INDEX_CLEANUP ON: never skipped for being few), GIN pending lists are merged, and the
-- planner's statistics (which keep sample values of text columns) are sampled again.
-- db/vacuum.ERASED_TABLES lists the same tables.
VACUUM (ANALYZE, INDEX_CLEANUP ON) memories, memory_terms, bank_lexemes, memory_versions, memory_entities, entities,
    fact_sources, memory_documents, mental_models, mental_model_versions, operations, chunks, chunk_lexemes, documents,
    document_uploads

-- vacuum_full_after_erasure --
-- As vacuum_after_erasure, rewriting each table and its indexes whole (HINDSIGHT_API_ERASURE_VACUUM_FULL):
-- plain VACUUM leaves a removed row's bytes in its page's free space until they are written
-- over, and a word in a GIN index's keys; a rewrite leaves neither. Each table is locked
-- against every reader and writer while it is rewritten.
VACUUM (FULL, ANALYZE) memories, memory_terms, bank_lexemes, memory_versions, memory_entities, entities,
    fact_sources, memory_documents, mental_models, mental_model_versions, operations, chunks, chunk_lexemes, documents,
    document_uploads

-- vacuum_clear_emptied_stats --
-- ANALYZE leaves the last statistics of a table it finds empty in place (sample values of its
-- text columns among them): those of the erased tables now empty ($1) are cleared (PostgreSQL 18's
-- pg_clear_attribute_stats; earlier versions keep them until the table holds rows again).
SELECT count(pg_clear_attribute_stats(n.nspname::text, c.relname::text, a.attname::text, false))
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname = current_schema() AND c.relname = ANY($1::text[]) AND c.reltuples = 0
  AND EXISTS (SELECT 1 FROM pg_statistic s WHERE s.starelid = c.oid AND s.staattnum = a.attnum)

-- vacuum_statistics --
-- Last, the statistics' own table: the rows ANALYZE replaced and those cleared above are dead rows
-- that held sample values (skipped with a warning unless the server's role may maintain it).
VACUUM pg_catalog.pg_statistic

-- vacuum_full_statistics --
-- As vacuum_statistics, rewriting it (HINDSIGHT_API_ERASURE_VACUUM_FULL).
VACUUM FULL pg_catalog.pg_statistic
