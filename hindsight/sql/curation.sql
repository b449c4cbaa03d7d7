-- Curating memories: edits, invalidation, supersession and their history (engine/memory/curation.py).

-- curation_lock --
-- The memory as it stands, locked for the change (the caller holds the bank's write lock too).
SELECT m.id, m.text, m.kind, m.context, m.occurred_start, m.occurred_end, m.mentioned_at, m.tags,
       m.valid_from, m.valid_to, m.superseded_by, m.invalidated_at, m.invalidation_reason, m.given_entities,
       /*linked_names*/ AS entities
FROM memories m WHERE m.bank_id = $1 AND m.id = $2 FOR UPDATE;

-- curation_update --
-- Apply an edit: the columns it changes fill /*set*/ (names are ours, values bound after $2).
UPDATE memories m SET changed_at = now() /*set*/ WHERE m.bank_id = $1 AND m.id = $2;

-- curation_lexemes_remove --
-- Before an edit of its text: the memory's lexemes leave the bank's counts (migration 004), as on
-- delete; a word no other memory holds leaves them whole (migration 017), so that the text an edit
-- replaced keeps no trace there.
WITH words AS (
    SELECT DISTINCT l FROM memories m, unnest(tsvector_to_array(m.tsv)) l WHERE m.bank_id = $1 AND m.id = $2
), gone AS (
    DELETE FROM bank_lexemes b USING words w WHERE b.bank_id = $1 AND b.lexeme = w.l AND b.n <= 1 RETURNING b.lexeme
)
UPDATE bank_lexemes b SET n = b.n - 1
FROM words w
WHERE b.bank_id = $1 AND b.lexeme = w.l AND b.n > 1;

-- curation_lexemes_add --
-- After an edit of its text: the memory's new lexemes join the bank's counts, as on insert.
INSERT INTO bank_lexemes (bank_id, lexeme, n)
SELECT $1, l, 1 FROM (SELECT DISTINCT l FROM memories m, unnest(tsvector_to_array(m.tsv)) l
                      WHERE m.bank_id = $1 AND m.id = $2) x ORDER BY l
ON CONFLICT (bank_id, lexeme) DO UPDATE SET n = bank_lexemes.n + 1;

-- curation_unlink_entities --
-- A memory's entity links, dropped before its new ones are written (mentions released first).
DELETE FROM memory_entities WHERE bank_id = $1 AND memory_id = $2;

-- curation_entity_names --
-- After its links changed: the memory keeps its entities' names again (migration 012).
UPDATE memories m SET entity_names = /*linked_names*/ WHERE m.bank_id = $1 AND m.id = $2;

-- curation_version_add --
-- Record one change of a memory as its next version.
INSERT INTO memory_versions (bank_id, memory_id, version, action, changes, reason, actor)
SELECT $1, m.id, coalesce((SELECT max(v.version) FROM memory_versions v WHERE v.bank_id = $1 AND v.memory_id = m.id), 0) + 1,
       $3, $4::jsonb, $5, $6
FROM memories m WHERE m.bank_id = $1 AND m.id = $2
RETURNING version, at;

-- curation_versions --
-- A memory's recorded changes, oldest first.
SELECT version, action, changes, reason, actor, at FROM memory_versions
WHERE bank_id = $1 AND memory_id = $2 ORDER BY version;

-- curation_predecessors --
-- The memories this one superseded, oldest first.
SELECT id FROM memories WHERE bank_id = $1 AND superseded_by = $2 ORDER BY valid_to, id;

-- curation_existing --
-- Which of these ids are memories of the bank (a retain item's `supersedes`).
SELECT id FROM memories WHERE bank_id = $1 AND id = ANY($2::uuid[]);

-- curation_supersede --
-- End memories that a newer one ($3) replaces, from when it became true ($4) (never before they
-- began), and the facts extracted from any of them that is a raw unit (the raw unit itself has
-- left recall for its facts); memories already ended, invalidated or the newer one itself are
-- left as they are.
UPDATE memories m SET valid_to = greatest(coalesce(m.valid_from, least(m.occurred_start, m.mentioned_at), m.created_at), $4),
                      superseded_by = $3, changed_at = now()
WHERE m.bank_id = $1 AND m.id <> $3 AND m.valid_to IS NULL AND m.invalidated_at IS NULL
  AND (m.id = ANY($2::uuid[])
       OR m.id IN (SELECT f.fact_id FROM fact_sources f JOIN memories r ON r.id = f.raw_id AND r.bank_id = $1
                   WHERE f.raw_id = ANY($2::uuid[])))
RETURNING m.id, m.valid_to;

-- curation_successors_of_raw --
-- Raw units being extracted that a newer memory already superseded: their facts end with them.
SELECT id, superseded_by, valid_to FROM memories
WHERE bank_id = $1 AND id = ANY($2::uuid[]) AND superseded_by IS NOT NULL;

-- curation_predecessors_restore --
-- A memory invalidated or deleted ($2): the memories it superseded are true again.
UPDATE memories SET valid_to = NULL, superseded_by = NULL, changed_at = now()
WHERE bank_id = $1 AND superseded_by = $2
RETURNING id, valid_to;

-- curation_versions_restored --
-- Record each restoration of a predecessor as its next version.
INSERT INTO memory_versions (bank_id, memory_id, version, action, changes, reason, actor)
SELECT $1, u.id, coalesce((SELECT max(v.version) FROM memory_versions v WHERE v.bank_id = $1 AND v.memory_id = u.id), 0) + 1,
       'restored', jsonb_build_object('superseded_by', jsonb_build_array($3::text, NULL)), $4, $5
FROM unnest($2::uuid[]) AS u(id)
JOIN memories m ON m.id = u.id AND m.bank_id = $1;

-- curation_versions_superseded --
-- Record each supersession as the next version of the memory it ended.
INSERT INTO memory_versions (bank_id, memory_id, version, action, changes, reason, actor)
SELECT $1, u.id, coalesce((SELECT max(v.version) FROM memory_versions v WHERE v.bank_id = $1 AND v.memory_id = u.id), 0) + 1,
       'superseded', jsonb_build_object('valid_to', jsonb_build_array(NULL, u.t), 'superseded_by', jsonb_build_array(NULL, $3::text)),
       $4, $5
FROM unnest($2::uuid[], $6::timestamptz[]) AS u(id, t)
JOIN memories m ON m.id = u.id AND m.bank_id = $1;

-- curation_candidates --
-- What the LLM compares each raw unit's new facts with, to say which they update: the bank's
-- current facts about the same entities (tier 0), nearest first, then the nearest in meaning
-- (tier 1, at least $3 similar), at most $4 of each per unit (engine/memory/extraction.py keeps $4 in all).
-- Facts sharing an entity come first: among a hundred people's "X moved to Y", the facts about
-- this person are the ones a new fact about them can update.
SELECT raw.id AS raw_id, c.id, c.text, c.tier, c.d
FROM memories raw
CROSS JOIN LATERAL (
    (SELECT f.id, f.text, 0 AS tier, f.embedding <=> raw.embedding AS d
     FROM memories f
     WHERE f.bank_id = $1 AND NOT f.superseded AND f.valid_to IS NULL AND f.invalidated_at IS NULL
       AND EXISTS (SELECT 1 FROM fact_sources s WHERE s.fact_id = f.id)
       AND NOT EXISTS (SELECT 1 FROM fact_sources s WHERE s.fact_id = f.id AND s.raw_id = raw.id)
       AND EXISTS (SELECT 1 FROM memory_entities a JOIN memory_entities b ON a.entity_id = b.entity_id
                   WHERE a.memory_id = raw.id AND b.memory_id = f.id)
     ORDER BY d LIMIT $4)
    UNION ALL
    (SELECT f.id, f.text, 1 AS tier, f.embedding <=> raw.embedding AS d
     FROM memories f
     WHERE f.bank_id = $1 AND NOT f.superseded AND f.valid_to IS NULL AND f.invalidated_at IS NULL
       AND EXISTS (SELECT 1 FROM fact_sources s WHERE s.fact_id = f.id)
       AND NOT EXISTS (SELECT 1 FROM fact_sources s WHERE s.fact_id = f.id AND s.raw_id = raw.id)
     ORDER BY f.embedding <=> raw.embedding LIMIT $4)
) c
WHERE raw.bank_id = $1 AND raw.id = ANY($2::uuid[]) AND (c.tier = 0 OR 1 - c.d >= $3)
ORDER BY raw.id, c.tier, c.d;

-- curation_repoint --
-- Memories superseded by a retained item's raw unit ($2) now point to its first fact ($3): the
-- raw unit itself has left recall, replaced by its facts.
UPDATE memories m SET superseded_by = u.fact
FROM unnest($2::uuid[], $3::uuid[]) AS u(raw, fact)
WHERE m.bank_id = $1 AND m.superseded_by = u.raw;
