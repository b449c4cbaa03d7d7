-- 001: initial schema.
-- Why: the foundation of the memory-bank service (banks, memory units with one shared HNSW
-- index filtered by bank, full-text and entity links for the recall arms, hashed API keys).
-- One HNSW index for all banks, not one per bank: per-bank indexes stop scaling at a few
-- thousand banks; pgvector 0.8 iterative scans keep filtered searches complete.

CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE banks (
    id          text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{1,64}$'),
    name        text,
    mission     text,
    disposition jsonb NOT NULL DEFAULT '{}'::jsonb,
    config      jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memories (
    id             uuid PRIMARY KEY,
    bank_id        text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    text           text NOT NULL,
    kind           text NOT NULL,
    context        text NOT NULL DEFAULT 'general',
    embedding      vector(384) NOT NULL,
    tsv            tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    occurred_start timestamptz,
    occurred_end   timestamptz,
    mentioned_at   timestamptz,
    tags           text[] NOT NULL DEFAULT '{}',
    metadata       jsonb NOT NULL DEFAULT '{}'::jsonb,
    document_id    text,
    -- source_id groups the units of one document (or of one item when there is no document);
    -- position orders them, so recall can add a hit's neighbours.
    source_id      text NOT NULL,
    position       integer NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX memories_embedding_hnsw ON memories USING hnsw (embedding vector_cosine_ops);
CREATE INDEX memories_tsv ON memories USING gin (tsv);
CREATE INDEX memories_tags ON memories USING gin (tags);
CREATE INDEX memories_bank_created ON memories (bank_id, created_at DESC);
CREATE INDEX memories_bank_document ON memories (bank_id, document_id) WHERE document_id IS NOT NULL;
CREATE INDEX memories_bank_source ON memories (bank_id, source_id, position);
CREATE INDEX memories_bank_occurred ON memories (bank_id, occurred_start) WHERE occurred_start IS NOT NULL;
CREATE INDEX memories_bank_mentioned ON memories (bank_id, mentioned_at);

CREATE TABLE entities (
    id            bigserial PRIMARY KEY,
    bank_id       text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    name          text NOT NULL,
    canonical     text NOT NULL,
    kind          text NOT NULL DEFAULT 'name',
    mention_count integer NOT NULL DEFAULT 0,
    UNIQUE (bank_id, canonical)
);
CREATE INDEX entities_canonical_trgm ON entities USING gin (canonical gin_trgm_ops);

CREATE TABLE memory_entities (
    entity_id bigint NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    memory_id uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    PRIMARY KEY (entity_id, memory_id)
);
CREATE INDEX memory_entities_memory ON memory_entities (memory_id);

CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    name         text NOT NULL,
    key_hash     text NOT NULL UNIQUE,
    role         text NOT NULL CHECK (role IN ('admin', 'bank')),
    banks        text[] NOT NULL DEFAULT '{}',
    access       text NOT NULL DEFAULT 'read_write' CHECK (access IN ('read', 'read_write')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz,
    last_used_at timestamptz
);
