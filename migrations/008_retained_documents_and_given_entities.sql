-- 008: the text retained under a document_id, and the entities a client names with an item.
-- Why: Hindsight's clients read a retained document back (GET .../documents/{id} gives its
-- original_text), which the units split from it cannot reproduce exactly; and entities given
-- with an item (`entities: [{text, type}]`) must also reach the facts an LLM later extracts
-- from its raw units, after those units have left recall. Most memories have none: NULL.
CREATE TABLE memory_documents (
    bank_id       text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    id            text NOT NULL,
    original_text text NOT NULL,
    content_hash  text NOT NULL,
    tags          text[] NOT NULL DEFAULT '{}',
    metadata      jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, id)
);

ALTER TABLE memories ADD COLUMN given_entities jsonb;
