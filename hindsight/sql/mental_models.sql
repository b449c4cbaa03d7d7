-- Mental models: a source query whose content reflect keeps current (engine/reflection/mental_models.py).

-- mental_model_ids_like --
-- Ids taken by a name's slug and its numbered variants, to give a new model a free one.
SELECT id FROM mental_models WHERE bank_id = $1 AND (id = $2 OR id LIKE $2 || '-%');

-- mental_model_create --
-- A new model; no row when its id is taken.
INSERT INTO mental_models (bank_id, id, name, source_query, tags, max_tokens, embedding)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT DO NOTHING
RETURNING id;

-- mental_model_refreshes_pending --
-- The refresh queued or running for each of the bank's given models (by their dedup keys).
SELECT dedup_key, id FROM operations
WHERE bank_id = $1 AND dedup_key = ANY($2::text[]) AND status IN ('queued', 'running');

-- mental_model_list --
-- A page of a bank's models, oldest first, filtered by their own tags as memories are
-- (engine/rules/tags.py) and by id; each row carries how many match in all, and an empty page one
-- row of nulls with that count.
WITH matching AS (
    SELECT bank_id, id, name, source_query, tags, max_tokens, content, based_on, status, last_refreshed_at,
           last_error, stale_since, created_at, updated_at
    FROM mental_models WHERE bank_id = $1 /*conditions*/
), page AS (
    SELECT * FROM matching ORDER BY created_at, id /*page*/
)
SELECT t.total, p.* FROM (SELECT count(*) AS total FROM matching) t LEFT JOIN page p ON true
ORDER BY p.created_at, p.id;

-- mental_model_get --
-- One model of a bank.
SELECT bank_id, id, name, source_query, tags, max_tokens, content, based_on, status, last_refreshed_at,
       last_error, stale_since, created_at, updated_at
FROM mental_models WHERE bank_id = $1 AND id = $2;

-- mental_model_history --
-- The contents a model had, newest first.
SELECT version, content, based_on, created_at FROM mental_model_versions
WHERE bank_id = $1 AND model_id = $2 ORDER BY version DESC;

-- mental_model_update --
-- Change what is given (NULL keeps the current value); a new source query comes with its embedding.
UPDATE mental_models SET name = coalesce($3, name), source_query = coalesce($4, source_query),
                         tags = coalesce($5, tags), max_tokens = coalesce($6, max_tokens),
                         embedding = coalesce($7, embedding), updated_at = now()
WHERE bank_id = $1 AND id = $2
RETURNING id;

-- mental_model_delete --
-- Delete a model; its versions go by cascade.
DELETE FROM mental_models WHERE bank_id = $1 AND id = $2 RETURNING id;

-- mental_model_cancel_refreshes --
-- A deleted model's pending refresh ends as cancelled, with the reason ($2).
UPDATE operations SET status = 'cancelled', error = $3, finished_at = now(), updated_at = now()
WHERE bank_id = $1 AND dedup_key = $2 AND status IN ('queued', 'running');

-- mental_model_clear --
-- Forget a model's content (its versions stay in its history); it reads as pending until a refresh.
UPDATE mental_models SET content = NULL, based_on = '{}'::jsonb, status = 'pending', last_error = NULL,
                         updated_at = now()
WHERE bank_id = $1 AND id = $2
RETURNING id;

-- mental_model_refresh_input --
-- What a refresh reflects on, and the time its content will be current as of (the watermark).
SELECT source_query, tags, max_tokens, now() AS watermark FROM mental_models WHERE bank_id = $1 AND id = $2;

-- mental_model_record_error --
-- A failed refresh keeps the previous content and says why; no row when the model was deleted meanwhile.
UPDATE mental_models SET last_error = $3, status = CASE WHEN content IS NULL THEN 'failed' ELSE status END,
                         updated_at = now()
WHERE bank_id = $1 AND id = $2
RETURNING true;

-- mental_model_lock --
-- Lock the model for the refresh's commit (the sweep skips locked models); no row when it was deleted.
SELECT true FROM mental_models WHERE bank_id = $1 AND id = $2 FOR UPDATE;

-- mental_model_set_content --
-- A refresh's new content, what it was based on, and its watermark; a model made stale by a
-- forgotten memory is current again (the refresh did not see it: engine/reflection/mental_models.py).
UPDATE mental_models SET content = $3, based_on = $4::jsonb, status = 'ready', last_error = NULL,
                         last_refreshed_at = now(), watermark = $5, stale_since = NULL, updated_at = now()
WHERE bank_id = $1 AND id = $2;

-- mental_model_add_version --
-- Keep the new content as the model's next version.
INSERT INTO mental_model_versions (bank_id, model_id, version, content, based_on)
SELECT $1, $2, coalesce(max(version), 0) + 1, $3, $4::jsonb FROM mental_model_versions
WHERE bank_id = $1 AND model_id = $2
RETURNING version;

-- mental_model_trim_versions --
-- Drop versions beyond the history kept (HINDSIGHT_API_MENTAL_MODEL_HISTORY).
DELETE FROM mental_model_versions WHERE bank_id = $1 AND model_id = $2 AND version <= $3;

-- mental_model_sweep --
-- Queue a refresh for every stale model: memories carrying all its tags arrived after its
-- watermark, and the bank has been quiet for $1 seconds (or the oldest such memory waited ten
-- times that); or a memory it drew from (based_on) changed after its watermark (edited,
-- invalidated, superseded), which needs no quiet period; or a memory it drew from was forgotten
-- (stale_since: its refresh was queued then, and failed). Locked models are being refreshed and
-- are skipped; the dedup key keeps one refresh per model. A model whose last refresh failed waits
-- $4 seconds (a cool-down) before the next.
WITH stale AS (
    SELECT mm.bank_id, mm.id,
           EXISTS (SELECT 1 FROM memories m WHERE m.bank_id = mm.bank_id
                   AND m.changed_at > coalesce(mm.watermark, mm.created_at)
                   AND (mm.based_on -> 'memories') ? m.id::text) AS changed
    FROM mental_models mm
    WHERE (mm.last_error IS NULL OR mm.updated_at < now() - make_interval(secs => $4))
      AND ((EXISTS (SELECT 1 FROM memories m WHERE m.bank_id = mm.bank_id
                    AND m.created_at > coalesce(mm.watermark, mm.created_at)
                    AND m.tags @> mm.tags)
            AND (NOT EXISTS (SELECT 1 FROM memories m WHERE m.bank_id = mm.bank_id
                             AND m.created_at > now() - make_interval(secs => $1)
                             AND m.tags @> mm.tags)
                 OR EXISTS (SELECT 1 FROM memories m WHERE m.bank_id = mm.bank_id
                            AND m.created_at > coalesce(mm.watermark, mm.created_at)
                            AND m.created_at < now() - make_interval(secs => $1 * 10)
                            AND m.tags @> mm.tags)))
           OR EXISTS (SELECT 1 FROM memories m WHERE m.bank_id = mm.bank_id
                      AND m.changed_at > coalesce(mm.watermark, mm.created_at)
                      AND (mm.based_on -> 'memories') ? m.id::text)
           OR mm.stale_since IS NOT NULL)
    FOR UPDATE OF mm SKIP LOCKED
)
INSERT INTO operations (id, bank_id, type, payload, max_attempts, dedup_key)
SELECT gen_random_uuid(), bank_id, $2,
       jsonb_build_object('mental_model_id', id, 'reason', CASE WHEN changed THEN 'memories changed' ELSE 'new memories' END),
       $3, 'mental_model:' || bank_id || ':' || id
FROM stale
ON CONFLICT (dedup_key, bank_id) WHERE dedup_key IS NOT NULL AND status IN ('queued', 'running') DO NOTHING
RETURNING id;

-- mental_models_near --
-- The models closest to a reflect query ($2), at least $4 similar, other than the one being
-- refreshed ($3); a model drawn from a forgotten memory is left out until its refresh.
SELECT id, name, content FROM mental_models
WHERE bank_id = $1 AND content IS NOT NULL AND embedding IS NOT NULL AND id IS DISTINCT FROM $3
  AND stale_since IS NULL
  AND 1 - (embedding <=> $2) >= $4
ORDER BY embedding <=> $2 LIMIT $5;

-- mental_model_stale_in_bank --
-- The bank's models whose content is behind its memories: memories carrying all their tags arrived
-- after their watermark, or a memory they drew from changed since (consolidation asked for now:
-- no quiet period, no cool-down).
SELECT mm.id FROM mental_models mm
WHERE mm.bank_id = $1
  AND (EXISTS (SELECT 1 FROM memories m WHERE m.bank_id = mm.bank_id
               AND m.created_at > coalesce(mm.watermark, mm.created_at) AND m.tags @> mm.tags)
       OR EXISTS (SELECT 1 FROM memories m WHERE m.bank_id = mm.bank_id
                  AND m.changed_at > coalesce(mm.watermark, mm.created_at)
                  AND (mm.based_on -> 'memories') ? m.id::text))
ORDER BY mm.created_at, mm.id;

-- mental_model_failed_in_bank --
-- The bank's models whose last refresh failed.
SELECT id FROM mental_models WHERE bank_id = $1 AND last_error IS NOT NULL ORDER BY created_at, id;

-- mental_model_create_with_content --
-- A new model with content already written (a bank's setup brought over from elsewhere): ready,
-- current as of now; no row when its id is taken.
INSERT INTO mental_models (bank_id, id, name, source_query, tags, max_tokens, embedding, content, status,
                           last_refreshed_at, watermark)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'ready', now(), now())
ON CONFLICT DO NOTHING
RETURNING id;

-- mental_models_forgetting --
-- Every model of the bank with what it says and what it was drawn from, its words as the bank
-- counts words (migration 010's vectors), for an erasure to find those it reached.
SELECT id, content, based_on,
       tsvector_to_array(to_tsvector('english', coalesce(content, '')) || cjk_grams(coalesce(content, ''))) AS words
FROM mental_models WHERE bank_id = $1;

-- mental_model_versions_forgetting --
-- Every kept version of the bank's models, as mental_models_forgetting reads a model.
SELECT model_id, version, content, based_on,
       tsvector_to_array(to_tsvector('english', content) || cjk_grams(content)) AS words
FROM mental_model_versions WHERE bank_id = $1;

-- mental_model_mark_stale --
-- A model drawn from a forgotten memory: stale until its next refresh, its sources without it ($3).
UPDATE mental_models SET stale_since = coalesce(stale_since, now()), based_on = $3::jsonb, updated_at = now()
WHERE bank_id = $1 AND id = $2;

-- mental_model_withdraw --
-- A model whose content quoted forgotten text loses that content until its next refresh.
UPDATE mental_models SET content = NULL, based_on = '{}'::jsonb, status = 'pending',
                         stale_since = coalesce(stale_since, now()), updated_at = now()
WHERE bank_id = $1 AND id = ANY($2::text[]);

-- mental_model_versions_drop --
-- Kept versions of a model that were drawn from, or quoted, a forgotten memory.
DELETE FROM mental_model_versions WHERE bank_id = $1 AND model_id = $2 AND version = ANY($3::int[]);

-- mental_model_memories_left --
-- How many of the memories a refresh saw are still in the bank (one forgotten meanwhile means its
-- answer may draw on it, and is not kept).
SELECT count(*) FROM memories WHERE bank_id = $1 AND id = ANY($2::uuid[]);
