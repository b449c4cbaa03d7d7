-- Webhooks: a bank's subscriptions to its events, and their deliveries (engine/notify/).

-- webhook_columns --
-- Fragment: the columns of a Webhook (notify/webhooks.to_webhook); never the secret.
bank_id, id, url, event_types, enabled, http_config, created_at, updated_at

-- webhook_count --
-- How many webhooks the bank has, against the per-bank limit (under the bank's write lock).
SELECT count(*) FROM webhooks WHERE bank_id = $1;

-- webhook_create --
-- A new webhook of the bank, its secret sealed.
INSERT INTO webhooks (bank_id, id, url, secret, secret_key, event_types, enabled, http_config)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)
RETURNING /*columns*/;

-- webhook_get --
-- One webhook of the bank.
SELECT /*columns*/ FROM webhooks WHERE bank_id = $1 AND id = $2;

-- webhook_list --
-- The bank's webhooks, oldest first.
SELECT /*columns*/ FROM webhooks WHERE bank_id = $1 ORDER BY created_at, id;

-- webhook_update --
-- Change what is given (NULL keeps the current value); a new secret comes sealed, with its key's fingerprint.
UPDATE webhooks SET url = coalesce($3, url), event_types = coalesce($4, event_types), enabled = coalesce($5, enabled),
                    http_config = coalesce($6::jsonb, http_config), secret = coalesce($7, secret),
                    secret_key = coalesce($8, secret_key), updated_at = now()
WHERE bank_id = $1 AND id = $2
RETURNING /*columns*/;

-- webhook_delete --
-- Delete one webhook of the bank.
DELETE FROM webhooks WHERE bank_id = $1 AND id = $2 RETURNING id;

-- webhook_cancel_deliveries --
-- A deleted webhook's deliveries still queued end as cancelled, with the reason ($3).
UPDATE operations SET status = 'cancelled', error = $3, finished_at = now(), updated_at = now()
WHERE bank_id = $1 AND type = 'webhook_delivery' AND payload ->> 'webhook_id' = $2 AND status = 'queued';

-- webhook_fire --
-- One delivery (an operation) for each of the bank's enabled webhooks subscribed to the event
-- under one of its names ($2), in the caller's transaction; $3 is the event, $4 the attempts.
INSERT INTO operations (id, bank_id, type, payload, max_attempts)
SELECT gen_random_uuid(), w.bank_id, 'webhook_delivery',
       jsonb_build_object('webhook_id', w.id::text, 'event_type', e.name, 'event', $3::jsonb), $4
FROM webhooks w CROSS JOIN unnest($2::text[]) AS e(name)
WHERE w.bank_id = $1 AND w.enabled AND e.name = ANY(w.event_types)
RETURNING id;

-- webhook_for_delivery --
-- What a delivery sends to: the webhook as it is now (a changed URL or secret applies to retries).
SELECT url, secret, secret_key, enabled, http_config FROM webhooks WHERE bank_id = $1 AND id = $2;

-- webhook_deliveries --
-- A page of one webhook's deliveries, newest first, before the cursor ($3, $4: created_at and id;
-- NULL for the first page).
SELECT id, status, attempts, max_attempts, error, payload ->> 'event_type' AS event_type, payload -> 'event' AS event,
       progress, result, run_after, created_at, updated_at, finished_at
FROM operations
WHERE bank_id = $1 AND type = 'webhook_delivery' AND payload ->> 'webhook_id' = $2
  AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4::uuid))
ORDER BY created_at DESC, id DESC LIMIT $5;
