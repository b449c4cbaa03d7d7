-- Retained documents: the memories retained under a document_id and the text retained there (engine/memory/sources.py).

-- source_get --
-- The text retained under a document_id, with how many memories it holds.
SELECT d.*, (SELECT count(*) FROM memories m WHERE m.bank_id = d.bank_id AND m.document_id = d.id) AS n
FROM memory_documents d WHERE d.bank_id = $1 AND d.id = $2;

-- source_list --
-- A page of retained documents, last updated first, under the listing's conditions.
SELECT d.*, (SELECT count(*) FROM memories m WHERE m.bank_id = d.bank_id AND m.document_id = d.id) AS n
FROM memory_documents d WHERE d.bank_id = $1 /*where*/
ORDER BY d.updated_at DESC, d.id LIMIT $2 OFFSET $3;

-- source_count --
-- How many retained documents match source_list's conditions.
SELECT count(*) FROM memory_documents d WHERE d.bank_id = $1 /*where*/;

-- source_exists --
-- Whether text was retained under a document_id.
SELECT true FROM memory_documents WHERE bank_id = $1 AND id = $2;

-- source_entities_release --
-- The entities of a document_id's units lose those mentions (the units are deleted next).
UPDATE entities e SET mention_count = greatest(0, e.mention_count - x.n)
FROM (SELECT me.entity_id, count(*) AS n FROM memory_entities me JOIN memories m ON m.id = me.memory_id
      WHERE m.bank_id = $1 AND m.document_id = ANY($2::text[]) GROUP BY me.entity_id) x
WHERE e.bank_id = $1 AND e.id = x.entity_id;

-- source_memories_delete --
-- Delete the units retained under the given document_ids (retaining one again replaces them).
DELETE FROM memories WHERE bank_id = $1 AND document_id = ANY($2::text[]);

-- sources_delete --
-- Delete the text retained under the given document_ids.
DELETE FROM memory_documents WHERE bank_id = $1 AND id = ANY($2::text[]);

-- sources_delete_one --
-- Delete the text retained under one document_id (forgotten); no row when there was none.
DELETE FROM memory_documents WHERE bank_id = $1 AND id = $2 RETURNING id;

-- source_add --
-- Keep the text retained under a document_id, with its tags and metadata, for clients that read it back.
INSERT INTO memory_documents (bank_id, id, original_text, content_hash, tags, metadata)
VALUES ($1, $2, $3, $4, $5, $6::jsonb);

-- source_units --
-- The units a document_id's text was split into, in order (what Hindsight's clients call the
-- document's chunks): its own units, not the facts an LLM drew from them.
SELECT /*columns*/ FROM memories m
WHERE m.bank_id = $1 AND m.document_id = $2 AND NOT EXISTS (SELECT 1 FROM fact_sources f WHERE f.fact_id = m.id)
ORDER BY m.source_id, m.position LIMIT $3 OFFSET $4;

-- source_unit_count --
-- How many units source_units pages through.
SELECT count(*) FROM memories m
WHERE m.bank_id = $1 AND m.document_id = $2 AND NOT EXISTS (SELECT 1 FROM fact_sources f WHERE f.fact_id = m.id);

-- source_tags_set --
-- New tags for the text retained under a document_id; no row when nothing was retained under it.
UPDATE memory_documents SET tags = $3, updated_at = now() WHERE bank_id = $1 AND id = $2 RETURNING id;

-- source_memories_tags_set --
-- The same tags on every memory retained under the document_id, its facts included.
UPDATE memories SET tags = $3 WHERE bank_id = $1 AND document_id = $2;

-- source_reprocess_input --
-- What a document_id was retained with, to retain it again: its text, tags and metadata, and the
-- context and earliest mention time of its units.
SELECT d.original_text, d.tags, d.metadata,
       (SELECT m.context FROM memories m WHERE m.bank_id = d.bank_id AND m.document_id = d.id
        ORDER BY m.source_id, m.position LIMIT 1) AS context,
       (SELECT min(m.mentioned_at) FROM memories m WHERE m.bank_id = d.bank_id AND m.document_id = d.id) AS mentioned_at
FROM memory_documents d WHERE d.bank_id = $1 AND d.id = $2;

-- source_unit_find --
-- One unit of a retained document by its id (what Hindsight's clients call a chunk), among the
-- banks given ($2; NULL: any bank), with its place among the document's units.
SELECT m.bank_id, m.document_id, m.text, m.created_at,
       (SELECT count(*) FROM memories o
        WHERE o.bank_id = m.bank_id AND o.document_id = m.document_id
          AND NOT EXISTS (SELECT 1 FROM fact_sources f WHERE f.fact_id = o.id)
          AND (o.source_id, o.position) < (m.source_id, m.position)) AS chunk_index
FROM memories m
WHERE m.id = $1 AND ($2::text[] IS NULL OR m.bank_id = ANY($2::text[])) AND m.document_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM fact_sources f WHERE f.fact_id = m.id);
