-- The audit log: who read or changed which bank (engine/audit/). Records are written by COPY
-- (engine/audit/trail.py), never by a statement here.

-- audit_columns --
-- Fragment: the columns of an AuditEntry (engine/audit/logs.to_entry).
bank_id, id, started_at, duration_ms, transport, action, method, route, status, outcome, principal, request_id, detail

-- audit_list --
-- A page of one bank's records, newest first, under the query's conditions (bound after $3).
SELECT /*columns*/ FROM audit_logs WHERE bank_id = $1 /*where*/
ORDER BY started_at DESC, id LIMIT $2 OFFSET $3;

-- audit_count --
-- How many of one bank's records match audit_list's conditions.
SELECT count(*) FROM audit_logs WHERE bank_id = $1 /*where*/;

-- audit_list_all --
-- A page of every bank's records (an admin's view), newest first, under the query's conditions (bound after $2).
SELECT /*columns*/ FROM audit_logs WHERE true /*where*/
ORDER BY started_at DESC, id LIMIT $1 OFFSET $2;

-- audit_count_all --
-- How many records of every bank match audit_list_all's conditions.
SELECT count(*) FROM audit_logs WHERE true /*where*/;

-- audit_stats --
-- One bank's records since $3, counted by operation in buckets of $2 (hour or day), optionally of one operation ($4).
SELECT date_trunc($2, started_at) AS t, action, count(*) AS n FROM audit_logs
WHERE bank_id = $1 AND started_at >= $3 AND ($4::text IS NULL OR action = $4)
GROUP BY 1, 2 ORDER BY 1, 2;

-- audit_export --
-- One bank's records as JSON, oldest first, from $2 to $3 (either NULL: unbounded), for export.
SELECT row_to_json(a)::text FROM (SELECT /*columns*/ FROM audit_logs
    WHERE bank_id = $1 AND ($2::timestamptz IS NULL OR started_at >= $2) AND ($3::timestamptz IS NULL OR started_at < $3)
    ORDER BY started_at, id) a;

-- audit_export_all --
-- Every bank's records as JSON, oldest first, from $1 to $2 (either NULL: unbounded), for an admin's export.
SELECT row_to_json(a)::text FROM (SELECT /*columns*/ FROM audit_logs
    WHERE ($1::timestamptz IS NULL OR started_at >= $1) AND ($2::timestamptz IS NULL OR started_at < $2)
    ORDER BY started_at, id) a;

-- audit_prune --
-- Records older than the audit log keeps (HINDSIGHT_API_AUDIT_RETENTION_DAYS) go, every bank's,
-- $2 at a time so that one statement never holds many locks.
DELETE FROM audit_logs WHERE (bank_id, id) IN (
    SELECT bank_id, id FROM audit_logs WHERE started_at < now() - make_interval(days => $1) LIMIT $2);
