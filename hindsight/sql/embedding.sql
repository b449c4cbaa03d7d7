-- The embedding model behind the stored vectors, and re-embedding when it changes
-- (engine/memory/reembedding.py). /*table*/ and /*index*/ are the fixed names of the tables with
-- an embedding column (embedding_model.TARGETS), never a client's text.

-- embedding_column --
-- The embedding column's dimension (pgvector keeps it as the type modifier) and whether it is NOT
-- NULL, read from the catalogue so that the migrations stay the one place that sets them.
SELECT atttypmod AS dim, attnotnull AS not_null FROM pg_attribute
WHERE attrelid = $1::regclass AND attname = 'embedding';

-- embedding_lock --
-- Processes starting together wait here; only the first re-embeds.
SELECT pg_advisory_xact_lock($1);

-- embedding_model_recorded --
-- The model recorded as the maker of the stored vectors (migration 005).
SELECT name, dim FROM embedding_model;

-- embedding_model_record --
-- Record the model that made the stored vectors.
INSERT INTO embedding_model (name, dim) VALUES ($1, $2)
ON CONFLICT (singleton) DO UPDATE SET name = $1, dim = $2, recorded_at = now();

-- index_definition --
-- A vector index's own definition, to rebuild it once after re-embedding (updating every row through it costs far more).
SELECT pg_get_indexdef(to_regclass($1));

-- index_drop --
-- Drop a vector index before re-embedding its table.
DROP INDEX /*index*/;

-- embedding_allow_null --
-- Vectors of another dimension cannot be cast: the column takes NULLs until the rows get new ones.
ALTER TABLE /*table*/ ALTER COLUMN embedding DROP NOT NULL;

-- embedding_retype --
-- The column takes the new model's dimension (/*dim*/, an integer of ours); the old vectors go.
-- A new type brings that type's storage back (EXTERNAL): vectors stay in the row (migration 013).
ALTER TABLE /*table*/ ALTER COLUMN embedding TYPE vector(/*dim*/) USING NULL,
                      ALTER COLUMN embedding SET STORAGE MAIN;

-- embedding_require --
-- Every row has a vector again.
ALTER TABLE /*table*/ ALTER COLUMN embedding SET NOT NULL;

-- table_rows --
-- How many rows a table to re-embed holds (for the progress log).
SELECT count(*) FROM /*table*/;

-- reembed_memories_first --
-- The first page of memory units to re-embed, by key (keyset pages: an open cursor would forbid the ALTER TABLE at the end).
SELECT id, text AS x FROM memories ORDER BY id LIMIT $1;

-- reembed_memories_after --
-- The next page of memory units after the last key ($2).
SELECT id, text AS x FROM memories WHERE id > $2 ORDER BY id LIMIT $1;

-- reembed_memories_update --
-- A page of memory units' new vectors.
UPDATE memories SET embedding = v.e::vector FROM unnest($1::uuid[], $2::text[]) v(id, e) WHERE memories.id = v.id;

-- reembed_chunks_first --
-- The first page of document chunks to re-embed (headline and text, as documents.py embeds them).
SELECT id, headline || E'\n' || text AS x FROM chunks ORDER BY id LIMIT $1;

-- reembed_chunks_after --
-- The next page of chunks after the last key ($2).
SELECT id, headline || E'\n' || text AS x FROM chunks WHERE id > $2 ORDER BY id LIMIT $1;

-- reembed_chunks_update --
-- A page of chunks' new vectors.
UPDATE chunks SET embedding = v.e::vector FROM unnest($1::uuid[], $2::text[]) v(id, e) WHERE chunks.id = v.id;

-- reembed_mental_models_first --
-- The first page of mental models to re-embed (their source query).
SELECT bank_id, id, source_query AS x FROM mental_models ORDER BY bank_id, id LIMIT $1;

-- reembed_mental_models_after --
-- The next page of mental models after the last key ($2, $3).
SELECT bank_id, id, source_query AS x FROM mental_models WHERE (bank_id, id) > ($2, $3) ORDER BY bank_id, id LIMIT $1;

-- reembed_mental_models_update --
-- A page of mental models' new vectors.
UPDATE mental_models SET embedding = v.e::vector FROM unnest($1::text[], $2::text[], $3::text[]) v(bank_id, id, e)
WHERE mental_models.bank_id = v.bank_id AND mental_models.id = v.id;
