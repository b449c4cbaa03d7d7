-- 006: smaller pending lists for the GIN indexes that recall and document search read.
-- Why: with fastupdate (the default) new rows' index entries wait in an unsorted pending list of
-- up to gin_pending_list_limit (4 MB, about 16,000 memories' lexemes) until a vacuum or the limit
-- flushes it, and every scan of the index reads the whole list. Measured on the benchmark
-- database: 3,000 pending memories made one full-text lookup 0.6 -> 2.0 ms, and a keyword recall
-- makes several. At 256 kB the list stays under about 1,000 rows; inserting cost the same
-- (1.0-1.1 ms a memory either way, HNSW dominates), where fastupdate = off cost up to 0.4 ms more.
ALTER INDEX memories_tsv SET (gin_pending_list_limit = 256);
ALTER INDEX memories_tags SET (gin_pending_list_limit = 256);
ALTER INDEX chunks_tsv SET (gin_pending_list_limit = 256);
ALTER INDEX documents_tags SET (gin_pending_list_limit = 256);
ALTER INDEX entities_canonical_trgm SET (gin_pending_list_limit = 256);
