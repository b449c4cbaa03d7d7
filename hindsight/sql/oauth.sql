-- OAuth 2.1 for the MCP endpoints (hindsight/oauth/store.py): clients, pending consents, grants
-- (one connection of an application to a bank), their codes and tokens, all secrets as SHA-256.
-- A grant is live while it is not revoked and the key that approved it is live: the stored key
-- not revoked, or, for the admin key of the environment, the same key as when it approved.

-- oauth_client_get --
-- A client by its id: registered (RFC 7591) or a metadata document fetched earlier.
SELECT client_id, secret_hash, metadata, kind, fetched_at, approved_at FROM oauth_clients WHERE client_id = $1;

-- oauth_client_register --
-- A client that registered itself (RFC 7591); its secret, if it has one, only as a hash; the
-- address it registered from, for the rate of registrations per address.
INSERT INTO oauth_clients (client_id, secret_hash, metadata, kind, registered_from)
VALUES ($1, $2, $3, 'registered', $4);

-- oauth_registration_load --
-- What admits a registration: the address's registrations in the last window and in how many
-- seconds the first of them leaves it; the clients no person approved and in how many seconds
-- the oldest of them expires.
SELECT (SELECT count(*) FROM oauth_clients
        WHERE registered_from = $1 AND created_at > now() - make_interval(secs => $2)) AS recent,
       (SELECT extract(epoch FROM min(created_at) - now())::float8 + $2 FROM oauth_clients
        WHERE registered_from = $1 AND created_at > now() - make_interval(secs => $2)) AS recent_frees_in,
       (SELECT count(*) FROM oauth_clients WHERE approved_at IS NULL) AS unapproved,
       (SELECT extract(epoch FROM min(created_at) - now())::float8 + $3 FROM oauth_clients
        WHERE approved_at IS NULL) AS unapproved_frees_in;

-- oauth_clients_expire --
-- Clients no person approved, older than their lifetime: registrations nobody finished, metadata
-- documents nobody used. approved_at is set with a client's first grant (oauth_grant_create), so
-- these have no grant in any bank and deleting them deletes no bank's rows (their pending
-- consents go with them). A few hundred at a time keeps each registration's sweep short.
DELETE FROM oauth_clients WHERE client_id IN (
    SELECT client_id FROM oauth_clients
    WHERE approved_at IS NULL AND created_at < now() - make_interval(secs => $1)
    ORDER BY created_at LIMIT 500);

-- oauth_clients_list --
-- Every client, newest first, for an admin: what it declared, where it registered from, whether a
-- person ever approved it, and how many live connections it has in any bank.
SELECT c.client_id, c.kind, c.metadata, c.registered_from, c.created_at, c.approved_at,
       (SELECT count(*) FROM oauth_grants g LEFT JOIN api_keys k ON k.id = g.key_id
        WHERE g.client_id = c.client_id AND g.revoked_at IS NULL
          AND ((g.key_id IS NULL AND g.admin_fingerprint = $3)
               OR (g.key_id IS NOT NULL AND k.revoked_at IS NULL))) AS connections
FROM oauth_clients c
ORDER BY c.created_at DESC, c.client_id
LIMIT $1 OFFSET $2;

-- oauth_clients_count --
-- How many clients there are, and how many of them no person approved, for an admin's listing.
SELECT count(*) AS total, count(*) FILTER (WHERE approved_at IS NULL) AS unapproved FROM oauth_clients;

-- oauth_client_delete --
-- An admin deletes a client: its pending consents and its connections in every bank (with their
-- codes and tokens) end with it, by cascade.
DELETE FROM oauth_clients WHERE client_id = $1 RETURNING client_id;

-- oauth_client_document_save --
-- A Client ID Metadata Document as last fetched; a registered client's row is never replaced by one.
INSERT INTO oauth_clients (client_id, metadata, kind) VALUES ($1, $2, 'document')
ON CONFLICT (client_id) DO UPDATE SET metadata = EXCLUDED.metadata, fetched_at = now()
WHERE oauth_clients.kind = 'document';

-- oauth_request_create --
-- An authorization request that waits for a person's decision on the consent page.
INSERT INTO oauth_requests (id_hash, client_id, issuer, resource, redirect_uri, redirect_given, code_challenge,
                            state, scopes, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() + make_interval(secs => $10));

-- oauth_request_get --
-- A pending request and its client, for the consent page; an expired one is gone.
SELECT r.client_id, r.issuer, r.resource, r.redirect_uri, r.scopes, c.metadata, c.kind, r.expires_at
FROM oauth_requests r JOIN oauth_clients c ON c.client_id = r.client_id
WHERE r.id_hash = $1 AND r.expires_at > now();

-- oauth_request_take --
-- A pending request, taken once: approving or refusing it ends it, so it cannot be decided twice.
DELETE FROM oauth_requests WHERE id_hash = $1 AND expires_at > now()
RETURNING client_id, issuer, resource, redirect_uri, redirect_given, code_challenge, state, scopes;

-- oauth_requests_purge --
-- Requests nobody decided before they expired.
DELETE FROM oauth_requests WHERE expires_at < now();

-- oauth_grant_create --
-- A connection a person approved: one application, one bank, no wider than the approving key.
-- The client is marked approved by the same statement, so that a client with a grant is never
-- one the registration sweep deletes (oauth_clients_expire); a client deleted meanwhile gets none.
WITH approved AS (
    UPDATE oauth_clients SET approved_at = coalesce(approved_at, now()) WHERE client_id = $3 RETURNING client_id
)
INSERT INTO oauth_grants (id, bank_id, client_id, key_id, admin_fingerprint, access, resource, scopes)
SELECT $1::uuid, $2::text, a.client_id, $4::text, $5::text, $6::text, $7::text, $8::text[] FROM approved a;

-- oauth_code_create --
-- The authorization code of a new grant, bound to its redirect URI and PKCE challenge.
INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, redirect_given, code_challenge, expires_at)
SELECT $1, g.id, $4, $5, $6, now() + make_interval(secs => $7)
FROM oauth_grants g WHERE g.id = $2 AND g.bank_id = $3;

-- oauth_code_get --
-- A code by the hash of what the client presented, with its grant and whether that is still live.
SELECT c.redirect_uri, c.redirect_given, c.code_challenge, c.expires_at, c.used_at,
       g.id AS grant_id, g.bank_id, g.client_id, g.access, g.resource, g.scopes,
       g.revoked_at IS NULL AND ((g.key_id IS NULL AND g.admin_fingerprint = $2)
                                 OR (g.key_id IS NOT NULL AND k.revoked_at IS NULL)) AS live
FROM oauth_codes c JOIN oauth_grants g ON g.id = c.grant_id LEFT JOIN api_keys k ON k.id = g.key_id
WHERE c.code_hash = $1;

-- oauth_code_use --
-- Spend a code; a code already spent matches nothing (and its grant is then revoked by the caller).
UPDATE oauth_codes SET used_at = now()
WHERE code_hash = $1 AND used_at IS NULL AND expires_at > now()
  AND grant_id IN (SELECT id FROM oauth_grants WHERE bank_id = $2 AND revoked_at IS NULL)
RETURNING grant_id;

-- oauth_tokens_create --
-- An access token and a refresh token of a live grant (none if it was revoked meanwhile).
INSERT INTO oauth_tokens (token_hash, grant_id, kind, expires_at)
SELECT t.token_hash, g.id, t.kind, now() + make_interval(secs => t.seconds)
FROM oauth_grants g, unnest($4::text[], $5::text[], $6::float8[]) AS t(token_hash, kind, seconds)
WHERE g.id = $1 AND g.bank_id = $2 AND g.revoked_at IS NULL AND g.client_id = $3
RETURNING token_hash;

-- oauth_token_get --
-- A token by the hash of what the client presented, with its grant and whether that is still live.
SELECT t.kind, t.expires_at, t.used_at, t.revoked_at,
       g.id AS grant_id, g.bank_id, g.client_id, g.access, g.resource, g.scopes, g.last_used_at,
       g.revoked_at IS NULL AND ((g.key_id IS NULL AND g.admin_fingerprint = $2)
                                 OR (g.key_id IS NOT NULL AND k.revoked_at IS NULL)) AS live
FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id LEFT JOIN api_keys k ON k.id = g.key_id
WHERE t.token_hash = $1;

-- oauth_refresh_use --
-- Spend a refresh token (rotation); one already spent matches nothing, which the caller treats as reuse.
UPDATE oauth_tokens SET used_at = now()
WHERE token_hash = $1 AND kind = 'refresh' AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now()
  AND grant_id IN (SELECT id FROM oauth_grants WHERE bank_id = $2 AND revoked_at IS NULL)
RETURNING grant_id;

-- oauth_token_revoke --
-- Revoke one access token (RFC 7009); revoking a refresh token revokes its grant instead.
UPDATE oauth_tokens SET revoked_at = coalesce(revoked_at, now())
WHERE token_hash = $1 AND grant_id IN (SELECT id FROM oauth_grants WHERE bank_id = $2);

-- oauth_grant_revoke --
-- End a connection and every code and token of it: a disconnect, a reused refresh token or code.
UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, now()) WHERE bank_id = $1 AND id = $2
RETURNING id;

-- oauth_grant_touch --
-- When a connection was last used, for the console (written at most once a minute per grant).
UPDATE oauth_grants SET last_used_at = now() WHERE bank_id = $1 AND id = $2;

-- oauth_connections_list --
-- A bank's live connections: not revoked, approved by a live key, with a token or code still usable.
SELECT g.id, g.client_id, c.metadata, g.access, g.key_id, g.created_at, g.last_used_at
FROM oauth_grants g JOIN oauth_clients c ON c.client_id = g.client_id LEFT JOIN api_keys k ON k.id = g.key_id
WHERE g.bank_id = $1 AND g.revoked_at IS NULL
  AND ((g.key_id IS NULL AND g.admin_fingerprint = $2) OR (g.key_id IS NOT NULL AND k.revoked_at IS NULL))
  AND (EXISTS (SELECT 1 FROM oauth_tokens t
               WHERE t.grant_id = g.id AND t.expires_at > now() AND t.used_at IS NULL AND t.revoked_at IS NULL)
       OR EXISTS (SELECT 1 FROM oauth_codes o
                  WHERE o.grant_id = g.id AND o.expires_at > now() AND o.used_at IS NULL))
ORDER BY g.created_at;

-- oauth_tokens_purge --
-- Tokens a day past their expiry: no longer usable, nor needed to detect a reused refresh token.
DELETE FROM oauth_tokens WHERE expires_at < now() - interval '1 day';

-- oauth_codes_purge --
-- Codes a day past their expiry.
DELETE FROM oauth_codes WHERE expires_at < now() - interval '1 day';
