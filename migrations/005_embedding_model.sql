-- 005: record which embedding model made the stored vectors.
-- Why: vectors from two models are not comparable, and nothing recorded which model a database's
-- vectors came from, so pointing HINDSIGHT_API_EMBEDDING_MODEL_DIR at another model silently mixed
-- two vector spaces (same dimension) or failed on every write (another dimension). The server
-- now compares the model it loads with this row at start-up and re-embeds everything stored when
-- they differ (engine/embedding_model.py). One row at most; it is written at the first start
-- after this migration, on the assumption that the stored vectors came from the model loaded then.
CREATE TABLE embedding_model (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    name        text NOT NULL,
    dim         integer NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
