-- 009: OAuth 2.1 for the MCP endpoints (hindsight/oauth/).
-- Why: hosted assistants (claude.ai, ChatGPT, Claude Desktop connectors) take an MCP URL and
-- nothing else: they authorise with OAuth (dynamic client registration or a Client ID Metadata
-- Document, PKCE), never with a pasted bearer key. The server is its own authorization server,
-- and what it issues must survive restarts and be shared by every server process, so it lives
-- here like everything else that matters (ARCHITECTURE.md, principle 2).
--
-- Secrets are never stored: request ids, codes, access and refresh tokens and client secrets are
-- 256-bit random values kept as SHA-256 hashes, as API keys are (engine/keys.py).
--
-- A grant is one connection: an application approved for one bank by one API key (or by the
-- admin key of the environment, recorded by a fingerprint of its hash so that changing that key
-- ends the grants it approved). Its codes and tokens hang off it; revoking the grant (the console's
-- "disconnect", a reused refresh token, a revoked key) ends them all. A grant belongs to its bank:
-- deleting the bank deletes its connections.

CREATE TABLE oauth_clients (
    client_id    text PRIMARY KEY,
    secret_hash  text,
    -- what the client registered (RFC 7591) or its metadata document said, without any secret
    metadata     jsonb NOT NULL,
    -- 'registered' (RFC 7591) or 'document' (a Client ID Metadata Document, fetched by URL)
    kind         text NOT NULL CHECK (kind IN ('registered', 'document')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    fetched_at   timestamptz NOT NULL DEFAULT now()
);

-- An authorization request waiting for a person's decision on the consent page.
CREATE TABLE oauth_requests (
    id_hash          text PRIMARY KEY,
    client_id        text NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
    issuer           text NOT NULL,
    resource         text,
    redirect_uri     text NOT NULL,
    redirect_given   boolean NOT NULL,
    code_challenge   text NOT NULL,
    state            text,
    scopes           text[] NOT NULL DEFAULT '{}',
    expires_at       timestamptz NOT NULL
);
CREATE INDEX oauth_requests_expiry ON oauth_requests (expires_at);

CREATE TABLE oauth_grants (
    id                 uuid PRIMARY KEY,
    bank_id            text NOT NULL REFERENCES banks(id) ON DELETE CASCADE,
    client_id          text NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
    key_id             text REFERENCES api_keys(id) ON DELETE CASCADE,
    admin_fingerprint  text,
    access             text NOT NULL CHECK (access IN ('read', 'read_write')),
    resource           text,
    scopes             text[] NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL DEFAULT now(),
    last_used_at       timestamptz,
    revoked_at         timestamptz,
    CHECK ((key_id IS NULL) <> (admin_fingerprint IS NULL))
);
CREATE INDEX oauth_grants_bank ON oauth_grants (bank_id, created_at);
CREATE INDEX oauth_grants_key ON oauth_grants (key_id);

CREATE TABLE oauth_codes (
    code_hash        text PRIMARY KEY,
    grant_id         uuid NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    redirect_uri     text NOT NULL,
    redirect_given   boolean NOT NULL,
    code_challenge   text NOT NULL,
    expires_at       timestamptz NOT NULL,
    used_at          timestamptz
);
CREATE INDEX oauth_codes_grant ON oauth_codes (grant_id);

-- Access and refresh tokens. A refresh token is used once: its use is recorded, and presenting
-- it again revokes its grant (the token was stolen, or the client is confused; either way the
-- family ends, OAuth 2.1 section 4.3.1).
CREATE TABLE oauth_tokens (
    token_hash   text PRIMARY KEY,
    grant_id     uuid NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('access', 'refresh')),
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
CREATE INDEX oauth_tokens_expiry ON oauth_tokens (expires_at);
