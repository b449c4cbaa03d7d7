-- Retain and fact extraction: writing memory units, their entities and facts (engine/memory/retain.py, engine/memory/extraction.py).

-- entity_mentions_add --
-- Upsert the entities a batch of units mentions, adding to their mention counts; names come
-- sorted so that concurrent upserts of the same names cannot deadlock. An existing entity keeps
-- its name (the units keep the names returned: migration 012).
INSERT INTO entities (bank_id, name, canonical, kind, mention_count)
SELECT $1, n, c, k, m FROM unnest($2::text[], $3::text[], $4::text[], $5::int[]) AS t(n, c, k, m)
ORDER BY c
ON CONFLICT (bank_id, canonical) DO UPDATE SET mention_count = entities.mention_count + EXCLUDED.mention_count
RETURNING id, canonical, name;

-- memory_entities_link --
-- Link units to the entities they mention: both the bank's own (an imported file may name others').
INSERT INTO memory_entities (entity_id, memory_id, bank_id)
SELECT u.e, u.m, $3 FROM unnest($1::bigint[], $2::uuid[]) u(e, m)
JOIN entities e ON e.id = u.e AND e.bank_id = $3
JOIN memories m ON m.id = u.m AND m.bank_id = $3
ON CONFLICT DO NOTHING;

-- extraction_raw_units --
-- The raw units of a retain still waiting for extraction (not superseded, no facts yet), in order.
SELECT id, text, context, mentioned_at, tags, metadata, document_id, source_id, position, given_entities
FROM memories m
WHERE bank_id = $1 AND id = ANY($2::uuid[]) AND NOT superseded
  AND NOT EXISTS (SELECT 1 FROM fact_sources f WHERE f.raw_id = m.id)
ORDER BY source_id, position;

-- extraction_lock_raw_units --
-- Lock the raw units a group's facts replace, keeping those still waiting (deleted, replaced or done meanwhile drop out).
SELECT id FROM memories m
WHERE bank_id = $1 AND id = ANY($2::uuid[]) AND NOT superseded
  AND NOT EXISTS (SELECT 1 FROM fact_sources f WHERE f.raw_id = m.id)
FOR UPDATE;

-- fact_nearest --
-- The bank's closest existing fact to a new one, to merge duplicates instead of storing them twice;
-- only a fact still true: one invalidated or superseded must not swallow the same fact said again.
SELECT m.id, 1 - (m.embedding <=> $2) AS sim FROM memories m
WHERE m.bank_id = $1 AND NOT m.superseded AND m.valid_to IS NULL AND m.invalidated_at IS NULL AND EXISTS (SELECT 1 FROM fact_sources f WHERE f.fact_id = m.id)
ORDER BY m.embedding <=> $2 LIMIT 1;

-- fact_sources_link --
-- Link facts to the raw units they were extracted from: both the bank's own.
INSERT INTO fact_sources (fact_id, raw_id, bank_id)
SELECT u.f, u.r, $3 FROM unnest($1::uuid[], $2::uuid[]) u(f, r)
JOIN memories m ON m.id = u.f AND m.bank_id = $3
JOIN memories raw ON raw.id = u.r AND raw.bank_id = $3
ON CONFLICT DO NOTHING;

-- raw_units_supersede --
-- Raw units whose facts are stored are replaced by them in recall (kept, and listed).
UPDATE memories SET superseded = true WHERE bank_id = $1 AND id = ANY($2::uuid[]);

-- extraction_visible --
-- What a retain left in recall: the facts of its raw units, and the raw units that yielded none.
SELECT DISTINCT f.fact_id AS id FROM fact_sources f JOIN memories m ON m.id = f.fact_id
WHERE m.bank_id = $1 AND f.raw_id = ANY($2::uuid[])
UNION
SELECT m.id FROM memories m WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[]) AND NOT m.superseded;
