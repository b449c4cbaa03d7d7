-- 013: a memory's (and a chunk's) embedding kept in its row (issue 27).
-- Why: pgvector stores vectors EXTERNAL, and PostgreSQL moves a row's largest EXTERNAL or
-- EXTENDED value out of line once the row passes ~2 KB. A short conversation turn with its
-- 384-dimension vector (1.5 KB) is ~2.1 KB, so 6 in 10 LoCoMo memories kept their vector in the
-- TOAST table, and every distance recall computes from the table (the semantic arm's HNSW
-- candidates, the entity and temporal arms' orderings, the details' relevance) read it back
-- through the TOAST index. In the row: the semantic arm ~0.95 -> ~0.47 ms, the entity arm
-- ~1.22 -> ~1.03 ms, the details ~1.24 -> ~0.98 ms on the LoCoMo banks (bench/README.md,
-- "Vectors in the row").
--
-- A row may now reach ~4 KB before anything leaves it, and the vector is the last value to go
-- (STORAGE MAIN: a long text and its tsvector are compressed or moved out first, as they are read
-- only for the few rows a recall returns). Rows written before keep their vectors where they are
-- until they are written again (an edit, a re-embedding): rewriting every row here would
-- re-insert each into every index, the vector index included.
ALTER TABLE memories SET (toast_tuple_target = 4080);
ALTER TABLE memories ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE chunks SET (toast_tuple_target = 4080);
ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN;
