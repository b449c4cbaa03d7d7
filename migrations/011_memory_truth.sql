-- 011: memory that stays true (issue 26): curated memories, a time of truth, supersession, history.
-- Why: the only way to correct a memory was to delete it, and so its trace; a bank kept "Alice
-- lives in Lisbon" beside "Alice moved to Porto" and recall could answer with either. A memory
-- now carries when it became true (`valid_from`; NULL reads as the earlier of its occurred_start
-- and mentioned_at, else created_at, so existing rows need no rewrite) and when it stopped (`valid_to`), the memory
-- that replaced it (`superseded_by`), and whether a person or agent invalidated it (kept for
-- audit, left out of recall). `superseded` (migration 002) keeps its meaning: a raw unit replaced
-- by the facts extracted from it.
--
-- `superseded_by` has no foreign key: deleting or invalidating the successor makes the memories
-- it replaced true again (engine/truth.restore_predecessors), and an imported bank's ids are remapped
-- (engine/portable.py) before they are written. `changed_at` is when a memory last changed after
-- it was stored: the mental-model sweep refreshes a model that drew from a memory changed after
-- its watermark.
--
-- memory_versions: one row per change of a memory (edit, invalidation, restoration,
-- supersession), with what changed (field: [before, after]), the reason given and who did it
-- (an API key id, an OAuth connection, a JWT subject, "open", or "llm" for an automatic
-- supersession). Rows belong to their bank and go with the memory.
--
-- Memory text was never updated in place before (migration 004 says so), so the per-bank lexeme
-- counts have no UPDATE trigger; the one statement that edits text moves the counts itself
-- (sql/curation.sql: curation_lexemes_remove / _add), because PostgreSQL refuses transition
-- tables on a trigger limited to a column, and one on every UPDATE would tax every write.

ALTER TABLE memories ADD COLUMN valid_from timestamptz;
ALTER TABLE memories ADD COLUMN valid_to timestamptz;
ALTER TABLE memories ADD COLUMN superseded_by uuid;
ALTER TABLE memories ADD COLUMN invalidated_at timestamptz;
ALTER TABLE memories ADD COLUMN invalidation_reason text;
ALTER TABLE memories ADD COLUMN changed_at timestamptz;

CREATE INDEX memories_bank_changed ON memories (bank_id, changed_at) WHERE changed_at IS NOT NULL;
CREATE INDEX memories_bank_successor ON memories (bank_id, superseded_by) WHERE superseded_by IS NOT NULL;

CREATE TABLE memory_versions (
    bank_id   text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    memory_id uuid NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    version   integer NOT NULL,
    action    text NOT NULL CHECK (action IN ('edited', 'invalidated', 'restored', 'superseded')),
    changes   jsonb NOT NULL DEFAULT '{}'::jsonb,
    reason    text,
    actor     text NOT NULL,
    at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, version)
);
CREATE INDEX memory_versions_bank ON memory_versions (bank_id, memory_id);
