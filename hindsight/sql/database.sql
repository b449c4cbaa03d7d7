-- The database itself: extensions, migrations and the start-up vector
-- self-check (db/pool.py, db/selfcheck.py).

-- vector_extension_versions --
-- The pgvector version installed in this database and the one the server's files provide.
SELECT installed_version, default_version FROM pg_available_extensions WHERE name = 'vector';

-- vector_extension_update --
-- The embedded PostgreSQL's files are newer than the database's catalogue: bring the extension up to them.
ALTER EXTENSION vector UPDATE;

-- vector_extension_create --
-- Install pgvector in this database (needs the right to create extensions).
CREATE EXTENSION IF NOT EXISTS vector;

-- migration_lock --
-- One process applies migrations at a time; the others wait and then find nothing to do.
SELECT pg_advisory_lock($1);

-- migration_unlock --
-- Let the next process check the migrations.
SELECT pg_advisory_unlock($1);

-- migration_table --
-- The record of applied migrations.
CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- migrations_applied --
-- The migrations this database already has.
SELECT version FROM schema_migrations;

-- migration_record --
-- Record a migration as applied (in its own transaction).
INSERT INTO schema_migrations (version, name) VALUES ($1, $2);

-- selfcheck_table --
-- The self-check works in a temporary table of 384-dimension vectors, gone at commit.
CREATE TEMP TABLE hindsight_self_check (id int PRIMARY KEY, v vector(384)) ON COMMIT DROP;

-- selfcheck_index --
-- An HNSW index, as memories and chunks have (its build is where a mis-compiled pgvector dies).
CREATE INDEX ON hindsight_self_check USING hnsw (v vector_cosine_ops);

-- selfcheck_insert --
-- Vectors through the binary protocol, as retain stores them.
INSERT INTO hindsight_self_check (id, v) VALUES ($1, $2);

-- selfcheck_compute --
-- Text input, norm and cosine distance on known vectors ($1 norm 5, $2 and $3 orthogonal, $4 stored as id 7).
SELECT vector_norm($1::text::vector) AS norm,
       $2::text::vector <=> $3::text::vector AS orthogonal,
       (SELECT v <=> $4 FROM hindsight_self_check WHERE id = 7) AS self_distance;

-- selfcheck_force_index --
-- Make the next search use the HNSW index, as recall's does.
SET LOCAL enable_seqscan = off;

-- selfcheck_search --
-- An index scan for the stored vector nearest $1.
SELECT id FROM hindsight_self_check ORDER BY v <=> $1 LIMIT 1;

-- huge_pages_status --
-- Whether PostgreSQL's shared memory (mostly its buffer cache) sits on huge pages (PostgreSQL 17+),
-- whether it may (huge_pages), and how many it would take (PostgreSQL 15+; db/hugepages.py).
SELECT current_setting('huge_pages_status', true) AS status,
       current_setting('huge_pages', true) AS setting,
       current_setting('shared_memory_size_in_huge_pages', true) AS needed,
       current_setting('shared_memory_size', true) AS size;

-- vector_library_load --
-- Load pgvector's library into the session, so that its settings (hnsw.*) are known to it.
SELECT '[1]'::vector;

-- database_defaults --
-- The settings this database gives every new session (ALTER DATABASE ... SET), as name and value.
SELECT split_part(c, '=', 1) AS name, substr(c, strpos(c, '=') + 1) AS value
FROM pg_db_role_setting s, unnest(s.setconfig) AS c
WHERE s.setrole = 0 AND s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database());

-- database_defaults_from_session --
-- Behind a transaction pooler sessions cannot be given settings when they open: the session
-- settings of db/pool.py (_SETTINGS, set on this connection) become the database's defaults.
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I SET hnsw.iterative_scan FROM CURRENT', current_database());
    EXECUTE format('ALTER DATABASE %I SET hnsw.ef_search FROM CURRENT', current_database());
    EXECUTE format('ALTER DATABASE %I SET jit FROM CURRENT', current_database());
END $$;

-- session_settings --
-- The values of the named settings in this session, in the order named (checked through a pooler).
SELECT array_agg(current_setting(n, true) ORDER BY o) AS values FROM unnest($1::text[]) WITH ORDINALITY AS t(n, o);

-- plan_each_call_this_transaction --
-- Until the transaction ends, every statement is planned for its own parameters, as the planned
-- pool's always are (db/pool.py): for walks under a request's own conditions (arms/running.py).
SELECT set_config('plan_cache_mode', 'force_custom_plan', true);
