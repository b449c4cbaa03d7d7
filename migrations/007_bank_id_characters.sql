-- 007: bank ids may hold '.', ':' and '@' and run to 128 characters.
-- Why: Hindsight's own clients make such ids (hindsight-google-adk names banks
-- "{app_name}::{user_id}", and user ids are often e-mail addresses), and a drop-in server must
-- accept them. '/', whitespace and control characters stay refused (they break URLs and logs),
-- and so do ids of dots alone, which HTTP clients rewrite. The rule is config.valid_bank_id's.
ALTER TABLE banks DROP CONSTRAINT IF EXISTS banks_id_check;
ALTER TABLE banks ADD CONSTRAINT banks_id_check
    CHECK (id ~ '^[A-Za-z0-9_.:@-]{1,128}$' AND btrim(id, '.') <> '');
