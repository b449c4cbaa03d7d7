-- LLM calls, tokens and cost (engine/banks/usage.py, llm/client.py, metrics.py).

-- usage_record --
-- One LLM call's tokens and cost, per bank and operation, for GET /v1/banks/{bank}/usage.
INSERT INTO llm_usage (bank_id, operation, operation_id, model, prompt_tokens, completion_tokens, cost_usd)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- usage_by_bank --
-- A bank's LLM use by operation and model.
SELECT operation, model, count(*) AS calls, sum(prompt_tokens) AS prompt_tokens,
       sum(completion_tokens) AS completion_tokens, sum(cost_usd) AS cost_usd,
       min(created_at) AS first_call, max(created_at) AS last_call
FROM llm_usage WHERE bank_id = $1 GROUP BY operation, model ORDER BY operation, model;

-- operations_pending_by_type --
-- The queue gauge at each /metrics scrape: queued and running only, which migration 002's
-- partial indexes answer (finished operations pile up for ever and would slow every scrape).
SELECT type, status, count(*) AS n FROM operations
WHERE status IN ('queued', 'running') GROUP BY type, status;

-- database_ping --
-- Readiness: the database answers.
SELECT 1;
