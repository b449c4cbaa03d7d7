-- API keys, stored as SHA-256 hashes of their secrets (engine/access/keys.py).

-- key_create --
-- A new key; its secret is returned to the caller once and only its hash is kept.
INSERT INTO api_keys (id, name, key_hash, role, banks, access) VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id, name, role, banks, access, created_at, revoked_at, last_used_at;

-- key_list --
-- Every key, oldest first, without secrets (there are none to return).
SELECT id, name, role, banks, access, created_at, revoked_at, last_used_at FROM api_keys ORDER BY created_at;

-- key_revoke --
-- Revoke a key; revoking it again keeps the first revocation time.
UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1
RETURNING id, name, role, banks, access, created_at, revoked_at, last_used_at;

-- key_use --
-- Authenticate a secret by its hash, recording the use; a revoked key matches nothing.
UPDATE api_keys SET last_used_at = now() WHERE key_hash = $1 AND revoked_at IS NULL
RETURNING id, role, banks, access;
