-- 003: documents as a knowledge base (RAG over MCP).
-- Why: banks also serve imported files and URLs in the shapes RAG-over-MCP clients use
-- (rag_search segments with source file, headline and URL). Documents are their own tables, not
-- memory units: they carry access tags and allowed users checked on every search, page numbers
-- and a content hash (re-importing unchanged content is a no-op), and are replaced as a whole.
-- Uploaded bytes are kept until their import operation has run, so an accepted import survives
-- a crash like any other operation.

CREATE TABLE documents (
    id            uuid PRIMARY KEY,
    bank_id       text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    source_name   text NOT NULL,
    source_type   text NOT NULL,
    source_url    text,
    content_hash  text NOT NULL,
    size_bytes    bigint NOT NULL,
    tags          text[] NOT NULL DEFAULT '{}',
    allowed_users text[] NOT NULL DEFAULT '{}',
    chunk_size    integer NOT NULL,
    chunk_count   integer NOT NULL DEFAULT 0,
    page_count    integer,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (bank_id, source_name)
);
CREATE INDEX documents_tags ON documents USING gin (tags);

CREATE TABLE chunks (
    id          uuid PRIMARY KEY,
    bank_id     text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    document_id uuid NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    position    integer NOT NULL,
    headline    text,
    text        text NOT NULL,
    page_start  integer,
    page_end    integer,
    embedding   vector(384) NOT NULL,
    tsv         tsvector GENERATED ALWAYS AS (to_tsvector('english', coalesce(headline, '') || ' ' || text)) STORED
);
CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding vector_cosine_ops);
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
CREATE INDEX chunks_document ON chunks (document_id, position);
CREATE INDEX chunks_bank ON chunks (bank_id);

CREATE TABLE document_uploads (
    id           uuid PRIMARY KEY,
    operation_id uuid NOT NULL REFERENCES operations(id) ON DELETE CASCADE,
    name         text NOT NULL,
    data         bytea NOT NULL
);
CREATE INDEX document_uploads_operation ON document_uploads (operation_id);

ALTER TABLE operations ADD COLUMN progress jsonb;
