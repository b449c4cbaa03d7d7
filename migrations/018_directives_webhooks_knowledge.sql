-- 018: directives, webhooks, a knowledge base of pages and folders, and the LLM request log.
-- Why: a bank's owner had no way to give reflect and mental models standing instructions, no way
-- to be told when work finished or failed, and no place for curated notes; and the LLM usage
-- kept only the calls that got an answer, so a bank's failing calls (and why they failed) could
-- not be read anywhere but the server's log. Hindsight's API has all four (issue 52).
--
-- directives: standing instructions put into reflect's prompt (mental-model refreshes included),
-- highest priority first; untagged ones apply to every reflect, tagged ones when the reflect's tags
-- match theirs (engine/directives/).
--
-- webhooks: per-bank subscriptions to events. The signing secret must be readable to sign, so it
-- is kept encrypted (AES-256-GCM, the bank and the webhook's id as associated data, so a row's
-- ciphertext copied to another row does not open) with a key that is not in the database
-- (HINDSIGHT_API_SECRETS_KEY, or a key file in the embedded database's data folder);
-- `secret_key` is that key's fingerprint, so a changed key is reported as such
-- (engine/notify/secrets.py). Each delivery is a `webhook_delivery` operation, queued in the
-- transaction that made the event: durable, retried with backoff by the worker, and its
-- operation row is the delivery log, found through operations_webhook_deliveries.
--
-- knowledge_nodes: folders and pages in a tree (parent_id). A page is either written (its
-- `content`, also retained as the bank's memories under the document id `kb:<page id>` so that
-- recall finds it) or generated (a mental model answering its source query; the model's content
-- is the page's). Deleting a folder deletes its subtree (the parent foreign key cascades);
-- deleting a page's mental model deletes the page.
--
-- llm_usage gains a row for every LLM call, answered or not: `status` is `ok` or the failure's
-- cause (llm/client.py CAUSES), with its duration and attempt. The prompt and the answer are
-- kept only when HINDSIGHT_API_LLM_LOG_CONTENT is on (`request`, `response`). Rows written before
-- read as answered calls (`ok`), which they were.
--
-- Every key includes bank_id, and so does every unique constraint.

CREATE TABLE directives (
    bank_id    text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    id         uuid NOT NULL,
    name       text NOT NULL,
    content    text NOT NULL,
    priority   integer NOT NULL DEFAULT 0,
    is_active  boolean NOT NULL DEFAULT true,
    tags       text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id)
);

CREATE TABLE webhooks (
    bank_id     text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    id          uuid NOT NULL,
    url         text NOT NULL,
    secret      bytea NOT NULL,
    secret_key  text NOT NULL,
    event_types text[] NOT NULL,
    enabled     boolean NOT NULL DEFAULT true,
    http_config jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id)
);

CREATE INDEX operations_webhook_deliveries ON operations (bank_id, (payload ->> 'webhook_id'), created_at DESC)
    WHERE type = 'webhook_delivery';

CREATE TABLE knowledge_nodes (
    bank_id         text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    id              text NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('folder', 'page')),
    name            text NOT NULL,
    parent_id       text,
    mental_model_id text,
    content         text,
    tags            text[] NOT NULL DEFAULT '{}',
    managed         boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id),
    FOREIGN KEY (bank_id, parent_id) REFERENCES knowledge_nodes (bank_id, id) ON DELETE CASCADE,
    FOREIGN KEY (bank_id, mental_model_id) REFERENCES mental_models (bank_id, id) ON DELETE CASCADE,
    CHECK (kind = 'page' OR (mental_model_id IS NULL AND content IS NULL)),
    CHECK (kind = 'folder' OR (mental_model_id IS NULL) <> (content IS NULL))
);
CREATE INDEX knowledge_nodes_parent ON knowledge_nodes (bank_id, parent_id);
-- Page names are unique within their folder, in any case (root pages under the empty parent).
CREATE UNIQUE INDEX knowledge_nodes_page_name ON knowledge_nodes (bank_id, coalesce(parent_id, ''), lower(name))
    WHERE kind = 'page';

ALTER TABLE llm_usage
    ADD COLUMN status      text NOT NULL DEFAULT 'ok',
    ADD COLUMN error       text,
    ADD COLUMN purpose     text,
    ADD COLUMN duration_ms integer,
    ADD COLUMN attempt     integer,
    ADD COLUMN request     jsonb,
    ADD COLUMN response    text;
