-- LLM calls, tokens and cost (engine/banks/usage.py, llm/client.py, metrics.py).

-- usage_record --
-- One LLM call, answered or not, per bank and operation: its tokens and cost for GET
-- /v1/banks/{bank}/usage, and its outcome, duration and (when kept) content for the request log.
-- Nothing when the bank does not exist (a probe of a bank never made, or one deleted during the
-- call): its log went with it.
INSERT INTO llm_usage (bank_id, operation, operation_id, model, prompt_tokens, completion_tokens, cost_usd,
                       status, error, purpose, duration_ms, attempt, request, response)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb, $14
WHERE EXISTS (SELECT 1 FROM banks b WHERE b.id = $1);

-- usage_by_bank --
-- A bank's LLM use by operation and model: the calls the provider answered (those that failed
-- before an answer, no tokens, are the request log's).
SELECT operation, model, count(*) AS calls, sum(prompt_tokens) AS prompt_tokens,
       sum(completion_tokens) AS completion_tokens, sum(cost_usd) AS cost_usd,
       min(created_at) AS first_call, max(created_at) AS last_call
FROM llm_usage WHERE bank_id = $1 AND status NOT IN ('rate_limit', 'timeout', 'provider_error')
GROUP BY operation, model ORDER BY operation, model;

-- llm_request_list --
-- A page of the bank's LLM calls, newest first, under the listing's conditions (bound after $3);
-- each row carries how many match in all, an empty page one row of nulls with that count.
WITH matching AS (
    SELECT id, bank_id, operation, operation_id, model, purpose, status, error, prompt_tokens,
           completion_tokens, cost_usd, duration_ms, attempt, request, response, created_at
    FROM llm_usage WHERE bank_id = $1 /*where*/
), page AS (
    SELECT * FROM matching ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3
)
SELECT t.total, p.* FROM (SELECT count(*) AS total FROM matching) t LEFT JOIN page p ON true
ORDER BY p.created_at DESC, p.id DESC;

-- llm_request_stats --
-- The bank's LLM calls since $3 in time buckets ($2: hour or day, UTC) by outcome, with their
-- tokens, under the listing's conditions (bound after $3).
SELECT date_trunc($2, created_at, 'UTC') AS bucket, status, count(*) AS n,
       coalesce(sum(prompt_tokens), 0) AS prompt_tokens, coalesce(sum(completion_tokens), 0) AS completion_tokens,
       sum(cost_usd) AS cost_usd
FROM llm_usage WHERE bank_id = $1 AND created_at >= $3 /*where*/
GROUP BY 1, 2;

-- operations_pending_by_type --
-- The queue gauge at each /metrics scrape: queued and running only, which migration 002's
-- partial indexes answer (finished operations pile up for ever and would slow every scrape).
SELECT type, status, count(*) AS n FROM operations
WHERE status IN ('queued', 'running') GROUP BY type, status;

-- database_ping --
-- Readiness: the database answers.
SELECT 1;
