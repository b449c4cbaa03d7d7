-- 021: every key of a bank's rows names its bank, so that the schema can be sharded by bank
-- with Citus (docs/scaling.md, "Sharding by bank"). Citus places each row by its distribution
-- column (bank_id) and can only enforce a primary key, a unique constraint or a foreign key
-- that includes it; and a table replicated to every node (a reference table: API keys, OAuth)
-- may not refer to a distributed one.
--
-- - Primary keys and unique keys that left bank_id out get it appended: (id) becomes
--   (id, bank_id). Appended, not prepended, so that every lookup that used a key (by id alone
--   included) still uses it.
-- - The tables that link rows of one bank (memory_entities, fact_sources, document_uploads)
--   carry their bank, taken from the rows they link.
-- - Foreign keys between a bank's tables include bank_id on both sides, their actions kept (a
--   SET NULL sets only the columns it set before).
-- - operations and llm_usage: bank_id NOT NULL. Nothing writes a row without a bank (every
--   operation and every LLM call is a bank's); such rows from long ago could be neither listed
--   nor counted, and are deleted.
-- - oauth_grants, a table of the OAuth set (a reference table under Citus, looked up by token on
--   every request), no longer refers to banks: deleting a bank deletes its grants itself
--   (bank_delete_grants).
-- - audit_logs, directives, webhooks and knowledge_nodes (migrations 017 and 018) were made with
--   their bank in every key; the catalogue pass below finds nothing to do there.
-- - The trigger of migration 017 that deletes an entity with its last link names the bank of the
--   links it looks at (memory_entities now has it), so that under Citus it reads and deletes only
--   rows of the shard's bank, as a statement on one node.
--
-- The foreign keys and keys are found in the catalogue, so that tables added by other migrations
-- get the same treatment; every step does nothing once done, so the file may run again. Like
-- every migration it is one transaction, and the tables it changes stay locked until it commits:
-- the backfills and the new indexes first, then the swaps of keys (docs/scaling.md gives how long
-- it took on a 100,000-memory bank; a rolling upgrade's servers wait that long on those tables).

DELETE FROM llm_usage WHERE bank_id IS NULL;
DELETE FROM operations WHERE bank_id IS NULL;
ALTER TABLE llm_usage ALTER COLUMN bank_id SET NOT NULL;
ALTER TABLE operations ALTER COLUMN bank_id SET NOT NULL;

ALTER TABLE oauth_grants DROP CONSTRAINT IF EXISTS oauth_grants_bank_id_fkey;

-- The link tables' bank, from the row each links.
ALTER TABLE memory_entities ADD COLUMN IF NOT EXISTS bank_id text;
UPDATE memory_entities me SET bank_id = m.bank_id FROM memories m WHERE m.id = me.memory_id AND me.bank_id IS NULL;
ALTER TABLE memory_entities ALTER COLUMN bank_id SET NOT NULL;
ALTER TABLE fact_sources ADD COLUMN IF NOT EXISTS bank_id text;
UPDATE fact_sources f SET bank_id = m.bank_id FROM memories m WHERE m.id = f.fact_id AND f.bank_id IS NULL;
ALTER TABLE fact_sources ALTER COLUMN bank_id SET NOT NULL;
ALTER TABLE document_uploads ADD COLUMN IF NOT EXISTS bank_id text;
UPDATE document_uploads u SET bank_id = o.bank_id FROM operations o WHERE o.id = u.operation_id AND u.bank_id IS NULL;
ALTER TABLE document_uploads ALTER COLUMN bank_id SET NOT NULL;

CREATE OR REPLACE FUNCTION entities_unlinked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM entities e
    USING (SELECT DISTINCT bank_id, entity_id FROM removed) x
    WHERE e.bank_id = x.bank_id AND e.id = x.entity_id
      AND NOT EXISTS (SELECT 1 FROM memory_entities me WHERE me.bank_id = x.bank_id AND me.entity_id = e.id);
    RETURN NULL;
END $$;

-- One refresh per mental model queued or running: its key, now within its bank.
DROP INDEX IF EXISTS operations_pending_dedup;
CREATE UNIQUE INDEX IF NOT EXISTS operations_pending_dedup_bank ON operations (dedup_key, bank_id)
    WHERE dedup_key IS NOT NULL AND status IN ('queued', 'running');

DO $$
DECLARE
    -- Tables of no bank, replicated whole under Citus; migrations' own record stays local.
    reference CONSTANT text[] := ARRAY['api_keys', 'embedding_model', 'oauth_clients', 'oauth_requests',
                                       'oauth_grants', 'oauth_codes', 'oauth_tokens', 'schema_migrations'];
    bank_tables oid[];
    r record;
BEGIN
    SELECT array_agg(c.oid) INTO bank_tables
    FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'bank_id' AND NOT a.attisdropped
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND c.relname <> ALL (reference);

    -- Primary and unique keys without bank_id, and foreign keys between bank tables without it.
    CREATE TEMP TABLE keys_021 ON COMMIT DROP AS
    SELECT con.conrelid, con.conname, con.contype, con.confrelid, con.confdeltype, con.confupdtype,
           (SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY k.n) FROM unnest(con.conkey) WITH ORDINALITY k(att, n)
              JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.att) AS cols,
           (SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY k.n) FROM unnest(con.confkey) WITH ORDINALITY k(att, n)
              JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.att) AS refcols
    FROM pg_constraint con
    WHERE con.conrelid = ANY (bank_tables)
      AND (con.contype IN ('p', 'u') OR (con.contype = 'f' AND con.confrelid = ANY (bank_tables)))
      AND NOT EXISTS (SELECT 1 FROM unnest(con.conkey) k(att) JOIN pg_attribute a
                      ON a.attrelid = con.conrelid AND a.attnum = k.att WHERE a.attname = 'bank_id');

    -- The new keys' indexes, built while the old keys still hold.
    FOR r IN SELECT * FROM keys_021 WHERE contype <> 'f' LOOP
        EXECUTE format('CREATE UNIQUE INDEX %I ON %s (%s, bank_id)', r.conname || '_021', r.conrelid::regclass, r.cols);
    END LOOP;
    -- The foreign keys go first: they depend on the keys they refer to.
    FOR r IN SELECT * FROM keys_021 WHERE contype = 'f' LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.conrelid::regclass, r.conname);
    END LOOP;
    FOR r IN SELECT * FROM keys_021 WHERE contype <> 'f' LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I, ADD CONSTRAINT %I %s USING INDEX %I',
                       r.conrelid::regclass, r.conname, r.conname,
                       CASE r.contype WHEN 'p' THEN 'PRIMARY KEY' ELSE 'UNIQUE' END, r.conname || '_021');
    END LOOP;
    -- The foreign keys again, with bank_id on both sides, checked once all are made.
    FOR r IN SELECT * FROM keys_021 WHERE contype = 'f' LOOP
        EXECUTE format(
            'ALTER TABLE %s ADD CONSTRAINT %I FOREIGN KEY (%s, bank_id) REFERENCES %s (%s, bank_id) ON UPDATE %s ON DELETE %s NOT VALID',
            r.conrelid::regclass, r.conname, r.cols, r.confrelid::regclass, r.refcols,
            CASE r.confupdtype WHEN 'c' THEN 'CASCADE' WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END,
            CASE r.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'r' THEN 'RESTRICT'
                               WHEN 'n' THEN format('SET NULL (%s)', r.cols) WHEN 'd' THEN format('SET DEFAULT (%s)', r.cols)
                               ELSE 'NO ACTION' END);
    END LOOP;
    FOR r IN SELECT * FROM keys_021 WHERE contype = 'f' LOOP
        EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', r.conrelid::regclass, r.conname);
    END LOOP;
END $$;
