-- Bank export and import (engine/transfer/portable.py). Export reads one consistent snapshot, each kind
-- in an order that puts referenced rows first; every row is one JSON text. /*table*/ and
-- /*columns*/ are names of ours: tables from the importer's own list, columns from the catalogue.

-- export_bank --
-- The bank's own row (its id is the target's on import).
SELECT (to_jsonb(b) - 'id')::text FROM banks b WHERE id = $1;

-- export_entities --
-- The bank's entities.
SELECT (to_jsonb(t) - 'bank_id')::text FROM entities t WHERE bank_id = $1 ORDER BY id;

-- export_memories --
-- The bank's memories, with their vectors (the full-text vector and the entity names are derived, so they stay behind).
SELECT (to_jsonb(t) - 'bank_id' - 'tsv' - 'entity_names')::text FROM memories t WHERE bank_id = $1
ORDER BY created_at, source_id, position;

-- export_memory_entities --
-- Which memories mention which entities.
SELECT to_jsonb(x)::text FROM (SELECT me.entity_id, me.memory_id FROM memory_entities me
                               JOIN memories m ON m.id = me.memory_id WHERE m.bank_id = $1) x;

-- export_fact_sources --
-- Which raw units each fact came from.
SELECT to_jsonb(x)::text FROM (SELECT f.fact_id, f.raw_id FROM fact_sources f
                               JOIN memories m ON m.id = f.fact_id WHERE m.bank_id = $1) x;

-- export_memory_documents --
-- The text retained under each document_id.
SELECT (to_jsonb(t) - 'bank_id')::text FROM memory_documents t WHERE bank_id = $1 ORDER BY id;

-- export_documents --
-- The knowledge base's documents.
SELECT (to_jsonb(t) - 'bank_id')::text FROM documents t WHERE bank_id = $1 ORDER BY source_name;

-- export_chunks --
-- The documents' chunks, with their vectors.
SELECT (to_jsonb(t) - 'bank_id' - 'tsv')::text FROM chunks t WHERE bank_id = $1 ORDER BY document_id, position;

-- export_mental_models --
-- The bank's mental models.
SELECT (to_jsonb(t) - 'bank_id')::text FROM mental_models t WHERE bank_id = $1 ORDER BY id;

-- export_mental_model_versions --
-- Their previous contents.
SELECT (to_jsonb(t) - 'bank_id')::text FROM mental_model_versions t WHERE bank_id = $1 ORDER BY model_id, version;

-- export_memory_versions --
-- The recorded changes of its memories.
SELECT (to_jsonb(t) - 'bank_id')::text FROM memory_versions t WHERE bank_id = $1 ORDER BY memory_id, version;

-- import_successors --
-- Imported memories that a newer one superseded point to it: both this bank's.
UPDATE memories m SET superseded_by = s.id
FROM unnest($2::uuid[], $3::uuid[]) AS u(mid, sid)
JOIN memories s ON s.id = u.sid AND s.bank_id = $1
WHERE m.bank_id = $1 AND m.id = u.mid;

-- import_memory_document_ids --
-- The document_ids the target bank already retains memories under (a file's may conflict with them).
SELECT DISTINCT document_id FROM memories WHERE bank_id = $1 AND document_id IS NOT NULL;

-- import_columns --
-- The columns a table takes on import, from the catalogue (never from the file): not generated, not the bank.
SELECT column_name FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER' AND column_name <> 'bank_id'
ORDER BY ordinal_position;

-- import_rows --
-- Insert a batch of the file's rows ($2, JSON) into the target bank; /*conflict*/ is the kind's ON CONFLICT clause, if any.
INSERT INTO /*table*/ (bank_id, /*columns*/)
SELECT $1, /*columns*/ FROM jsonb_populate_recordset(NULL::/*table*/, $2::jsonb) /*conflict*/;

-- import_ids_taken --
-- Which of the given ids (the file's, and those an earlier import derived from them) a table holds, and in which bank.
SELECT id, bank_id FROM /*table*/ WHERE id = ANY($1::uuid[]);

-- import_entity_names_clear --
-- Memories the file links to entities may be ones this bank already held (the same file imported
-- again, or a file naming them): they read their names through their links from now on (migration 012).
UPDATE memories SET entity_names = NULL WHERE bank_id = $1 AND id = ANY($2::uuid[]) AND entity_names IS NOT NULL;

-- import_entities --
-- The file's entities merge into the bank's by canonical name (the larger mention count wins).
INSERT INTO entities (bank_id, name, canonical, kind, mention_count)
SELECT $1, name, canonical, kind, mention_count FROM jsonb_populate_recordset(NULL::entities, $2::jsonb)
ORDER BY canonical
ON CONFLICT (bank_id, canonical) DO UPDATE SET mention_count = greatest(entities.mention_count, EXCLUDED.mention_count)
RETURNING id, canonical;

-- import_documents_named --
-- The target bank's documents under the file's source names (a different document under a taken name follows on_conflict).
SELECT id, source_name FROM documents WHERE bank_id = $1 AND source_name = ANY($2::text[]);

-- import_document_replace --
-- on_conflict=replace: the existing document goes (its chunks by cascade).
DELETE FROM documents WHERE bank_id = $1 AND id = $2;

-- import_mental_models_named --
-- The target bank's mental models under the file's ids (the same source query counts as the same model).
SELECT id, source_query FROM mental_models WHERE bank_id = $1 AND id = ANY($2::text[]);

-- import_mental_model_replace --
-- on_conflict=replace: the existing mental model goes (its versions by cascade).
DELETE FROM mental_models WHERE bank_id = $1 AND id = $2;

-- import_bank_is_new --
-- Whether the import creates the bank (a new bank takes the file's name, mission and disposition).
SELECT NOT EXISTS (SELECT 1 FROM banks WHERE id = $1);

-- import_bank_profile --
-- A new bank takes the file's name, mission, disposition and settings.
UPDATE banks SET name = $2, mission = $3, disposition = coalesce($4::jsonb, disposition),
                 config = coalesce($5::jsonb, config)
WHERE id = $1;
