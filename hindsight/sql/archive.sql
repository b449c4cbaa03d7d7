-- Documents in Hindsight's transfer archive (engine/transfer/archive.py).

-- archive_sources --
-- A page of the bank's retained documents (all, or those named in $2), by id after $3.
SELECT id, original_text, tags, created_at FROM memory_documents
WHERE bank_id = $1 AND ($2::text[] IS NULL OR id = ANY($2::text[])) AND id > $3
ORDER BY id LIMIT $4;

-- archive_units --
-- Every memory retained under the given document_ids, in order: whether it is a fact (and the
-- first raw unit it came from), whether it is still true, and its entities' names.
SELECT m.id, m.document_id, m.source_id, m.text, m.kind, m.context, m.occurred_start, m.occurred_end,
       m.mentioned_at, m.tags, m.metadata, m.created_at, m.superseded, m.valid_to, m.invalidated_at,
       coalesce(m.entity_names, /*linked_names*/) AS entities,
       EXISTS (SELECT 1 FROM fact_sources f WHERE f.fact_id = m.id) AS is_fact,
       (SELECT f.raw_id FROM fact_sources f JOIN memories r ON r.id = f.raw_id AND r.bank_id = m.bank_id
        WHERE f.fact_id = m.id ORDER BY r.source_id, r.position LIMIT 1) AS source_unit
FROM memories m
WHERE m.bank_id = $1 AND m.document_id = ANY($2::text[])
ORDER BY m.document_id, m.source_id, m.position, m.created_at, m.id;

-- archive_loose_sources --
-- A page of the items the bank's memories were retained from without a document_id, by source after $2.
SELECT source_id, min(created_at) AS created_at FROM memories
WHERE bank_id = $1 AND document_id IS NULL AND source_id > $2
GROUP BY source_id ORDER BY source_id LIMIT $3;

-- archive_loose_units --
-- Every memory retained without a document_id from the given items, as archive_units reads them.
SELECT m.id, m.document_id, m.source_id, m.text, m.kind, m.context, m.occurred_start, m.occurred_end,
       m.mentioned_at, m.tags, m.metadata, m.created_at, m.superseded, m.valid_to, m.invalidated_at,
       coalesce(m.entity_names, /*linked_names*/) AS entities,
       EXISTS (SELECT 1 FROM fact_sources f WHERE f.fact_id = m.id) AS is_fact,
       (SELECT f.raw_id FROM fact_sources f JOIN memories r ON r.id = f.raw_id AND r.bank_id = m.bank_id
        WHERE f.fact_id = m.id ORDER BY r.source_id, r.position LIMIT 1) AS source_unit
FROM memories m
WHERE m.bank_id = $1 AND m.document_id IS NULL AND m.source_id = ANY($2::text[])
ORDER BY m.source_id, m.position, m.created_at, m.id;

-- archive_document_taken --
-- Whether a document_id already holds something in the bank: its text, or memories.
SELECT EXISTS (SELECT 1 FROM memory_documents WHERE bank_id = $1 AND id = $2)
    OR EXISTS (SELECT 1 FROM memories WHERE bank_id = $1 AND document_id = $2);
