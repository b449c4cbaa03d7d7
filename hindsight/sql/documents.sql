-- Documents of the knowledge base: imports as operations, chunks (engine/knowledge/documents.py).

-- document_upload_add --
-- Uploaded bytes are kept with their import operation (of bank $5), so the import survives a restart.
INSERT INTO document_uploads (id, operation_id, name, data, bank_id)
SELECT $1, o.id, $3, $4, o.bank_id FROM operations o WHERE o.id = $2 AND o.bank_id = $5;

-- document_by_name --
-- The document a source name already holds in the bank, to tell an unchanged re-import from a new version.
SELECT id, content_hash, chunk_size, chunk_count FROM documents WHERE bank_id = $1 AND source_name = $2;

-- document_set_access --
-- An unchanged re-import may still change who sees the document: only while it still holds the
-- content compared ($5, $6). Read before any lock, the document may be replaced meanwhile; an
-- unconditional update waited for that import to commit and then gave its new content this
-- import's access lists (a restricted version made public). No row back: import it in full.
UPDATE documents SET tags = $3, allowed_users = $4
WHERE bank_id = $1 AND id = $2 AND content_hash = $5 AND chunk_size = $6
RETURNING chunk_count;

-- document_lock_name --
-- One import at a time per source name, to the end of the transaction.
SELECT pg_advisory_xact_lock(hashtextextended($1, 0));

-- document_upsert --
-- A document by source name: new, or its record replaced by the new version (its chunks are replaced next).
INSERT INTO documents (id, bank_id, source_name, source_type, source_url, content_hash, size_bytes,
                       tags, allowed_users, chunk_size, chunk_count, page_count)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (bank_id, source_name) DO UPDATE SET
    source_type = EXCLUDED.source_type, source_url = EXCLUDED.source_url,
    content_hash = EXCLUDED.content_hash, size_bytes = EXCLUDED.size_bytes, tags = EXCLUDED.tags,
    allowed_users = EXCLUDED.allowed_users, chunk_size = EXCLUDED.chunk_size,
    chunk_count = EXCLUDED.chunk_count, page_count = EXCLUDED.page_count, updated_at = now()
RETURNING id;

-- document_clear_chunks --
-- A new version's chunks replace the old ones.
DELETE FROM chunks WHERE bank_id = $1 AND document_id = $2;

-- document_uploads_of --
-- The files an import operation of the bank carries, by name.
SELECT u.id, u.name FROM document_uploads u JOIN operations o ON o.id = u.operation_id
WHERE o.bank_id = $1 AND u.operation_id = $2 ORDER BY u.name;

-- bank_chunk_size --
-- The bank's default chunk size, if it has one.
SELECT (config->>'document_chunk_size')::int FROM banks WHERE id = $1;

-- operation_set_progress --
-- How far an import is ({done, total} files), shown by get_operation and the console.
UPDATE operations SET progress = $3::jsonb WHERE bank_id = $1 AND id = $2;

-- document_upload_data --
-- One uploaded file's bytes, read when its turn comes (not all at once).
SELECT u.data FROM document_uploads u JOIN operations o ON o.id = u.operation_id
WHERE o.bank_id = $1 AND u.id = $2;

-- document_uploads_drop --
-- A finished import's uploads are no longer needed.
DELETE FROM document_uploads WHERE bank_id = $1 AND operation_id = $2;

-- document_list --
-- A page of the bank's documents, by name.
SELECT id, bank_id, source_name, source_type, source_url, content_hash, size_bytes, tags, allowed_users,
       chunk_size, chunk_count, page_count, created_at, updated_at
FROM documents WHERE bank_id = $1 ORDER BY source_name LIMIT $2 OFFSET $3;

-- document_get --
-- One document of a bank.
SELECT id, bank_id, source_name, source_type, source_url, content_hash, size_bytes, tags, allowed_users,
       chunk_size, chunk_count, page_count, created_at, updated_at
FROM documents WHERE bank_id = $1 AND id = $2;

-- document_find_bank --
-- The bank holding a document id, among the banks the key may see ($2; NULL: all).
SELECT bank_id FROM documents WHERE id = $1 AND ($2::text[] IS NULL OR bank_id = ANY($2::text[]));

-- document_counts --
-- Document counts of the listed banks (the collection tools show them).
SELECT bank_id, count(*) AS n FROM documents WHERE bank_id = ANY($1::text[]) GROUP BY bank_id;

-- document_delete --
-- Delete a document; its chunks go by cascade.
DELETE FROM documents WHERE bank_id = $1 AND id = $2 RETURNING id;
