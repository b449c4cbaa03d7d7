-- Files kept for a bank, in parts (migration 019; engine/banks/files.py).

-- bank_file_part_add --
-- One part of a file of the bank, written in the caller's transaction.
INSERT INTO bank_files (bank_id, key, part, operation_id, media_type, name, content)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- bank_file_head --
-- A file of the bank: its name, media type, size and how many parts it has; no row when there is none.
SELECT name, media_type, sum(length(content))::bigint AS size, count(*)::int AS parts, min(created_at) AS created_at
FROM bank_files WHERE bank_id = $1 AND key = $2 GROUP BY name, media_type;

-- bank_file_part --
-- One part of a file of the bank, read when its turn comes (not the whole file at once).
SELECT content FROM bank_files WHERE bank_id = $1 AND key = $2 AND part = $3;

-- bank_file_delete --
-- Forget a file of the bank.
DELETE FROM bank_files WHERE bank_id = $1 AND key = $2;
