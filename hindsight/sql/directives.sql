-- Directives: a bank owner's standing instructions to reflect and mental models (engine/directives/).

-- directive_columns --
-- Fragment: the columns of a Directive (directives/store.to_directive).
bank_id, id, name, content, priority, is_active, tags, created_at, updated_at

-- directive_count_all --
-- How many directives the bank has, against the per-bank limit (under the bank's write lock).
SELECT count(*) FROM directives WHERE bank_id = $1;

-- directive_create --
-- A new directive of the bank.
INSERT INTO directives (bank_id, id, name, content, priority, is_active, tags)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING /*columns*/;

-- directive_get --
-- One directive of the bank.
SELECT /*columns*/ FROM directives WHERE bank_id = $1 AND id = $2;

-- directive_list --
-- A page of the bank's directives, highest priority first, under the listing's conditions
-- (bound after $3); each row carries how many match in all, an empty page one row of nulls.
WITH matching AS (
    SELECT /*columns*/ FROM directives WHERE bank_id = $1 /*where*/
), page AS (
    SELECT * FROM matching ORDER BY priority DESC, created_at, id LIMIT $2 OFFSET $3
)
SELECT t.total, p.* FROM (SELECT count(*) AS total FROM matching) t LEFT JOIN page p ON true
ORDER BY p.priority DESC, p.created_at, p.id;

-- directive_update --
-- Change what is given (NULL keeps the current value).
UPDATE directives SET name = coalesce($3, name), content = coalesce($4, content), priority = coalesce($5, priority),
                      is_active = coalesce($6, is_active), tags = coalesce($7, tags), updated_at = now()
WHERE bank_id = $1 AND id = $2
RETURNING /*columns*/;

-- directive_delete --
-- Delete one directive of the bank.
DELETE FROM directives WHERE bank_id = $1 AND id = $2 RETURNING id;

-- directives_for_prompt --
-- The active directives a reflect applies, highest priority first: the untagged ones always,
-- tagged ones when the reflect's tags match theirs (the condition filled in, bound after $2).
SELECT name, content, id FROM directives
WHERE bank_id = $1 AND is_active AND (tags = '{}' /*scoped*/)
ORDER BY priority DESC, created_at, id LIMIT $2;
