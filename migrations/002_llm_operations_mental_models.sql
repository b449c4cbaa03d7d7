-- 002: durable operations, LLM fact extraction, mental models, LLM usage accounting.
-- Why: LLM work (fact extraction, mental-model refresh) is slow and fails; it must survive
-- crashes and restarts and be visible by id, so the work queue lives in PostgreSQL (claimed with
-- FOR UPDATE SKIP LOCKED under a renewable lease). Extracted facts link back to the raw unit
-- they came from; a raw unit whose facts exist is hidden from recall (`superseded`) but kept.

CREATE TABLE operations (
    id           uuid PRIMARY KEY,
    bank_id      text REFERENCES banks(id) ON DELETE CASCADE,
    type         text NOT NULL,
    status       text NOT NULL DEFAULT 'queued'
                 CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    payload      jsonb NOT NULL DEFAULT '{}'::jsonb,
    result       jsonb,
    error        text,
    attempts     integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL DEFAULT 5,
    -- At most one queued-or-running operation per dedup key (e.g. one refresh per mental model).
    dedup_key    text,
    run_after    timestamptz NOT NULL DEFAULT now(),
    locked_by    text,
    lease_until  timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    finished_at  timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX operations_claim ON operations (run_after) WHERE status = 'queued';
CREATE INDEX operations_lease ON operations (lease_until) WHERE status = 'running';
CREATE INDEX operations_bank ON operations (bank_id, created_at DESC);
CREATE UNIQUE INDEX operations_pending_dedup ON operations (dedup_key)
    WHERE dedup_key IS NOT NULL AND status IN ('queued', 'running');

ALTER TABLE memories ADD COLUMN superseded boolean NOT NULL DEFAULT false;
CREATE INDEX memories_bank_superseded ON memories (bank_id) WHERE superseded;

-- Which raw units a fact was extracted from (several, when a near-duplicate fact was merged).
CREATE TABLE fact_sources (
    fact_id uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    raw_id  uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    PRIMARY KEY (fact_id, raw_id)
);
CREATE INDEX fact_sources_raw ON fact_sources (raw_id);

CREATE TABLE mental_models (
    bank_id           text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    id                text NOT NULL CHECK (id ~ '^[a-z0-9][a-z0-9-]{0,63}$'),
    name              text NOT NULL,
    source_query      text NOT NULL,
    tags              text[] NOT NULL DEFAULT '{}',
    max_tokens        integer NOT NULL DEFAULT 2048,
    content           text,
    based_on          jsonb NOT NULL DEFAULT '{}'::jsonb,
    embedding         vector(384),
    status            text NOT NULL DEFAULT 'pending',
    last_refreshed_at timestamptz,
    -- Memories created at or before this instant were seen by the last refresh.
    watermark         timestamptz,
    last_error        text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id)
);

CREATE TABLE mental_model_versions (
    bank_id    text NOT NULL,
    model_id   text NOT NULL,
    version    integer NOT NULL,
    content    text NOT NULL,
    based_on   jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, model_id, version),
    FOREIGN KEY (bank_id, model_id) REFERENCES mental_models(bank_id, id) ON DELETE CASCADE
);

CREATE TABLE llm_usage (
    id                bigserial PRIMARY KEY,
    bank_id           text REFERENCES banks(id) ON DELETE CASCADE,
    operation         text NOT NULL,
    operation_id      uuid,
    model             text NOT NULL,
    prompt_tokens     integer NOT NULL DEFAULT 0,
    completion_tokens integer NOT NULL DEFAULT 0,
    cost_usd          double precision,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX llm_usage_bank ON llm_usage (bank_id, created_at);
