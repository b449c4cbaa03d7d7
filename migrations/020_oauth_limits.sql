-- 020: open client registration bounded, and clients no person approved expire.
-- Why: anyone who reaches the server may register an OAuth client (RFC 7591), as hosted
-- assistants need; nothing bounded how many, and no client row was ever removed (300
-- registrations of ~60 KB each in 1.5 s grew oauth_clients from 328 kB to 19 MB). Now
-- registrations are counted per client address over the last hour (`registered_from`, an IPv4
-- address or an IPv6 /64), the clients no person approved are counted and capped, and those are
-- deleted once older than HINDSIGHT_API_OAUTH_UNAPPROVED_CLIENT_TTL (oauth/registration.py).
--
-- `approved_at` is set by the statement that creates a client's grant (oauth_grant_create), so a
-- client without it has no grant in any bank: deleting it (and, by cascade, its pending consents)
-- touches no bank's rows. Clients with grants from before this migration get theirs here.
-- /authorize sends its errors back to a client only once a person has approved it.
ALTER TABLE oauth_clients ADD COLUMN approved_at timestamptz;
ALTER TABLE oauth_clients ADD COLUMN registered_from text;
UPDATE oauth_clients c SET approved_at = g.first
FROM (SELECT client_id, min(created_at) AS first FROM oauth_grants GROUP BY client_id) g
WHERE g.client_id = c.client_id;
-- The sweep and the cap read the unapproved clients by age; the rate reads one address's last hour.
CREATE INDEX oauth_clients_unapproved ON oauth_clients (created_at) WHERE approved_at IS NULL;
CREATE INDEX oauth_clients_registered_from ON oauth_clients (registered_from, created_at)
    WHERE registered_from IS NOT NULL;
-- Deleting a client (the sweep's, an admin's) looks for its grants to cascade to.
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);
