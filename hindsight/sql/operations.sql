-- Operations: the durable work queue is a table (engine/queue/operations.py, worker.py).

-- operation_enqueue --
-- Queue work in the caller's transaction; with a dedup key, nothing when one is already queued or running.
INSERT INTO operations (id, bank_id, type, payload, max_attempts, dedup_key)
VALUES ($1, $2, $3, $4::jsonb, $5, $6)
ON CONFLICT (dedup_key, bank_id) WHERE dedup_key IS NOT NULL AND status IN ('queued', 'running') DO NOTHING
RETURNING id;

-- operation_pending_by_key --
-- The operation already queued or running under a dedup key (it is returned instead of a new one).
SELECT id FROM operations WHERE bank_id = $1 AND dedup_key = $2 AND status IN ('queued', 'running');

-- operation_get --
-- One operation of a bank.
SELECT id, bank_id, type, status, payload, result, error, attempts, max_attempts, run_after, progress,
       created_at, started_at, finished_at, updated_at
FROM operations WHERE id = $1 AND bank_id = $2;

-- operation_list --
-- A page of the bank's operations, newest first, optionally of one status ($2) and type ($3).
SELECT id, bank_id, type, status, payload, result, error, attempts, max_attempts, run_after, progress,
       created_at, started_at, finished_at, updated_at
FROM operations
WHERE bank_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR type = $3)
ORDER BY created_at DESC LIMIT $4 OFFSET $5;

-- operation_count --
-- How many operations match operation_list's filters in all.
SELECT count(*) FROM operations
WHERE bank_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR type = $3);

-- operation_cancel --
-- Queued work never starts; running work stops at its next heartbeat; finished work is left as it is.
UPDATE operations SET status = 'cancelled', finished_at = now(), updated_at = now(),
                      error = coalesce(error, 'cancelled by request')
WHERE id = $1 AND bank_id = $2 AND status IN ('queued', 'running');

-- operation_claim --
-- A worker claims due work of the types it runs ($4; $5, the types it does not run), bank by bank
-- in turn (migration 016): work whose lease expired (its worker crashed) first, never its own (a
-- worker that is alive still runs what it holds: its heartbeat was held up, by a database that
-- stopped committing while a synchronous standby was away, say); then the oldest
-- due operation of each of the first banks in turn order with work it can start, then each
-- one's second, and so on, a bank's own work in the order it was queued. The banks served go to
-- the back (turn now). Of the first turns due, those with nothing queued leave the turns until
-- they queue again, and those whose queued work is none of it due (retrying later) wait until
-- their next work is due (read among 256 of it), so that they do not hold the first turns. A bank
-- with due work of a type this worker does not run keeps its turn for a worker that does: this
-- one passes over it (an index probe per type) and leaves its turn alone. The oldest due
-- operation of those it runs among the 256 oldest queued also competes, as if its turn came a
-- minute after it was queued, so that work past the first turns is never stranded. SKIP LOCKED,
-- on the operations and on the turns, lets several workers claim at once without waiting on
-- each other (a turn another claim holds keeps its place this time); a turn written since this
-- statement's snapshot (xmin: work queued at that moment) is neither removed nor delayed. Each
-- read of a queue names its type as a range (BETWEEN k.type AND k.type) and is ordered exactly as
-- its index, type first, so that the planner can only read that index and stop early: a LIMIT
-- without an order was planned as a sequential scan of 200,000 rows, and with the type as an
-- equality, whose order then adds nothing, as a walk of the bank's every operation through
-- operations_bank (bank_id, created_at), once for each type.
WITH probe AS (
    SELECT t.bank_id, t.xmin AS v FROM bank_turns t
    WHERE t.turn_at <= now() AND NOT EXISTS (
        SELECT 1 FROM unnest($5::text[]) k(type), LATERAL (
            SELECT 1 FROM operations q
            WHERE q.bank_id = t.bank_id AND q.type BETWEEN k.type AND k.type AND q.status = 'queued' AND q.run_after <= now()
            ORDER BY q.type, q.created_at LIMIT 1
        ) x
    )
    ORDER BY t.turn_at LIMIT 64
), turns AS (
    SELECT t.bank_id, t.turn_at FROM bank_turns t
    WHERE t.turn_at <= now() AND EXISTS (
        SELECT 1 FROM unnest($4::text[]) k(type), LATERAL (
            SELECT 1 FROM operations q
            WHERE q.bank_id = t.bank_id AND q.type BETWEEN k.type AND k.type AND q.status = 'queued' AND q.run_after <= now()
            ORDER BY q.type, q.created_at LIMIT 1
        ) x
    )
    ORDER BY t.turn_at LIMIT 64
), heads AS (
    SELECT x.id, turns.bank_id, turns.turn_at, x.created_at FROM turns, unnest($4::text[]) k(type), LATERAL (
        SELECT q.id, q.created_at FROM operations q
        WHERE q.bank_id = turns.bank_id AND q.type BETWEEN k.type AND k.type AND q.status = 'queued' AND q.run_after <= now()
        ORDER BY q.type, q.created_at LIMIT $2
    ) x
), candidates AS (
    SELECT DISTINCT ON (id) id, rank, turn_at, created_at FROM (
        SELECT id, 0 AS rank, '-infinity'::timestamptz AS turn_at, created_at, 0 AS source FROM operations
        WHERE status = 'running' AND lease_until < now() AND locked_by IS DISTINCT FROM $1 AND type = ANY($4::text[])
        UNION ALL
        SELECT id, row_number() OVER (PARTITION BY bank_id ORDER BY created_at), turn_at, created_at, 1 FROM heads
        UNION ALL
        (SELECT y.id, 1, y.created_at + interval '1 minute', y.created_at, 2 FROM (
            SELECT q.id, q.created_at, q.type, q.run_after FROM operations q
            WHERE q.status = 'queued' ORDER BY q.created_at LIMIT 256
        ) y WHERE y.run_after <= now() AND y.type = ANY($4::text[]) ORDER BY y.created_at LIMIT 1)
    ) every ORDER BY id, source
), c AS (
    SELECT o.id, o.bank_id FROM operations o JOIN candidates ON candidates.id = o.id
    WHERE ((o.status = 'queued' AND o.run_after <= now())
           OR (o.status = 'running' AND o.lease_until < now() AND o.locked_by IS DISTINCT FROM $1))
    ORDER BY candidates.rank, candidates.turn_at, candidates.created_at
    LIMIT $2 FOR UPDATE OF o SKIP LOCKED
), moved AS (
    -- the turns this claim may move: those of the banks it serves, and the first ones due
    -- (probed for queued work through operations_queued_bank)
    SELECT t.bank_id, probe.v, t.bank_id IN (SELECT bank_id FROM c) AS served,
           (SELECT 1 FROM operations q WHERE q.bank_id = t.bank_id AND q.status = 'queued'
            ORDER BY q.type, q.created_at LIMIT 1) IS NOT NULL AS busy
    FROM bank_turns t LEFT JOIN probe ON probe.bank_id = t.bank_id
    WHERE t.bank_id IN (SELECT bank_id FROM c UNION ALL SELECT bank_id FROM probe)
    FOR UPDATE OF t SKIP LOCKED
), waiting AS (
    -- the banks served, and those of the first turns with work queued but none due
    SELECT m.bank_id, m.v, m.served, CASE WHEN m.served THEN now() ELSE (
        SELECT min(r.run_after) FROM (
            SELECT q.run_after FROM operations q WHERE q.bank_id = m.bank_id AND q.status = 'queued'
            ORDER BY q.type, q.created_at LIMIT 256
        ) r) END AS next_at
    FROM moved m WHERE m.busy AND (m.served OR m.bank_id NOT IN (SELECT bank_id FROM turns))
), turned AS (
    UPDATE bank_turns t SET turn_at = w.next_at FROM waiting w
    WHERE t.bank_id = w.bank_id AND (w.served OR (w.next_at > now() AND t.xmin = w.v))
), idle AS (
    DELETE FROM bank_turns t USING moved m
    WHERE t.bank_id = m.bank_id AND NOT m.served AND NOT m.busy AND t.xmin = m.v
)
UPDATE operations o SET status = 'running', attempts = o.attempts + 1, locked_by = $1,
       lease_until = now() + make_interval(secs => $3), started_at = coalesce(o.started_at, now()),
       updated_at = now(),
       error = CASE WHEN o.status = 'running' THEN 'previous worker stopped renewing its lease (crash or restart)'
               ELSE o.error END
FROM c WHERE o.id = c.id
RETURNING o.id, o.bank_id, o.type, o.status, o.payload, o.result, o.error, o.attempts, o.max_attempts,
          o.run_after, o.progress, o.created_at, o.started_at, o.finished_at, o.updated_at;

-- operation_heartbeat --
-- Renew a running operation's lease; no row means it was cancelled or taken over.
UPDATE operations SET lease_until = now() + make_interval(secs => $3), updated_at = now()
WHERE id = $1 AND bank_id = $4 AND status = 'running' AND locked_by = $2
RETURNING 1;

-- operation_succeed --
-- Mark done, in the transaction of the data the result describes when the caller passes its connection.
UPDATE operations SET status = 'succeeded', result = $3::jsonb, finished_at = now(), updated_at = now(),
                      locked_by = NULL, lease_until = NULL
WHERE id = $1 AND bank_id = $4 AND status = 'running' AND locked_by = $2;

-- operation_drop_items --
-- A retain stored: its operation keeps how many items it had and who sent them, not their text
-- (it is in the memories now, and leaves with them when they are forgotten).
UPDATE operations SET payload = jsonb_build_object('actor', payload -> 'actor', 'item_count', jsonb_array_length(payload -> 'items'))
WHERE id = $1 AND bank_id = $2 AND jsonb_typeof(payload -> 'items') = 'array';

-- operation_fail --
-- Queue a retry after a backoff of $5 seconds, or fail for good ($3 = 'failed'); no row if it was cancelled meanwhile.
UPDATE operations SET status = $3, error = $4, updated_at = now(), locked_by = NULL, lease_until = NULL,
                      run_after = now() + make_interval(secs => $5),
                      finished_at = CASE WHEN $3 = 'failed' THEN now() END
WHERE id = $1 AND bank_id = $6 AND status = 'running' AND locked_by = $2
RETURNING status;

-- operation_defer --
-- The LLM provider is rate-limiting: back to the queue for $4 seconds without using up an attempt
-- (the claim's increment is undone), the reason in `error`; no row if it was cancelled meanwhile.
UPDATE operations SET status = 'queued', attempts = greatest(0, attempts - 1), error = $3, updated_at = now(),
                      locked_by = NULL, lease_until = NULL, run_after = now() + make_interval(secs => $4)
WHERE id = $1 AND bank_id = $5 AND status = 'running' AND locked_by = $2
RETURNING status;

-- operation_status --
-- An operation's status (after operation_fail found it no longer running).
SELECT status FROM operations WHERE id = $1 AND bank_id = $2;

-- operation_end_cancelled --
-- A running operation whose subject is gone ends as cancelled; one cancelled already keeps its reason.
UPDATE operations SET status = 'cancelled', error = $3, finished_at = now(), updated_at = now(),
                      locked_by = NULL, lease_until = NULL
WHERE id = $1 AND bank_id = $4 AND status = 'running' AND locked_by = $2;

-- operation_release --
-- On a clean shutdown, hand running work back at once instead of waiting for its lease.
UPDATE operations SET status = 'queued', attempts = greatest(0, attempts - 1), locked_by = NULL,
                      lease_until = NULL, updated_at = now()
WHERE id = ANY($1::uuid[]) AND status = 'running' AND locked_by = $2;

-- operation_retry --
-- A failed operation back to the queue as new (attempts, error, result and progress cleared); no
-- row when it is not failed. Under its dedup key another may already be queued or running: the
-- unique index refuses it, which the caller answers as a conflict.
UPDATE operations SET status = 'queued', attempts = 0, error = NULL, result = NULL, progress = NULL,
                      run_after = now(), started_at = NULL, finished_at = NULL, locked_by = NULL,
                      lease_until = NULL, updated_at = now()
WHERE id = $1 AND bank_id = $2 AND status = 'failed'
RETURNING id;

-- operation_retry_failed --
-- The bank's failed operations of the given types ($2) that have no dedup key, back to the queue as new.
UPDATE operations SET status = 'queued', attempts = 0, error = NULL, result = NULL, progress = NULL,
                      run_after = now(), started_at = NULL, finished_at = NULL, locked_by = NULL,
                      lease_until = NULL, updated_at = now()
WHERE bank_id = $1 AND status = 'failed' AND type = ANY($2::text[]) AND dedup_key IS NULL
RETURNING id;

-- operation_delete --
-- Delete a finished operation of the bank (succeeded, failed or cancelled); no row when it is still
-- queued or running. What hangs off it (staged uploads, stored files) goes by cascade.
DELETE FROM operations WHERE id = $1 AND bank_id = $2 AND status IN ('succeeded', 'failed', 'cancelled')
RETURNING id;
