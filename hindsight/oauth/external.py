"""An external identity provider's access tokens (HINDSIGHT_API_OAUTH_ISSUER): the server is then a
resource server only, as the MCP authorization specification allows, and organisations keep
their sign-in, their users and their policies where they already are (Keycloak, Auth0, Entra,
Okta).

A token is accepted when it is a JWT signed with one of the issuer's keys (its JWKS, by `kid`),
with an asymmetric algorithm (never `none` nor a shared secret), whose `iss` is the issuer, whose
`aud` names this MCP endpoint (or HINDSIGHT_API_OAUTH_AUDIENCE), and whose `exp` has not passed.
The banks it may use are a claim (HINDSIGHT_API_OAUTH_BANKS_CLAIM); it may write when its scope
has `write`. The keys are fetched once and again when a token names a key not seen yet (a
rotation), at most every 30 seconds, so a forged `kid` cannot make the server hammer the issuer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from typing import Any

import httpx
import jwt

from hindsight.bank_ids import valid_bank_id
from hindsight.config import Settings
from hindsight.engine.access.keys import Principal

log = logging.getLogger("hindsight.oauth")

ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
LEEWAY_SECONDS = 30
REFETCH_SECONDS = 30
KEYS_SECONDS = 3600
TIMEOUT_SECONDS = 10
_JWT = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$")


class IssuerTokens:
    def __init__(self, settings: Settings):
        assert settings.oauth_issuer
        self.issuer = settings.oauth_issuer
        self.audience = settings.oauth_audience
        self.claim = settings.oauth_banks_claim
        self.jwks_url = settings.oauth_jwks_url
        self.keys: dict[str | None, jwt.PyJWK] = {}
        self.fetched = 0.0
        self.lock = asyncio.Lock()

    @staticmethod
    def looks_like_jwt(token: str) -> bool:
        return len(token) < 16_384 and bool(_JWT.match(token))

    async def principal(self, token: str, resource: str) -> Principal | str:
        """The caller a token stands for, or why it is refused."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return "malformed token"
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            return f"token algorithm {str(alg)[:20]!r} is not accepted"
        kid = header.get("kid")
        key = await self._key(kid if isinstance(kid, str) else None)
        if key is None:
            return "token signed with a key the issuer does not publish"
        audiences = [resource, resource + "/"] + ([self.audience] if self.audience else [])
        try:
            claims = jwt.decode(
                token,
                key=key,
                algorithms=[alg],
                audience=audiences,
                issuer=self.issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            return "token expired"
        except jwt.InvalidAudienceError:
            return f"token was not issued for {resource}"
        except jwt.PyJWTError as exc:
            return f"token refused: {type(exc).__name__}"
        banks = _banks(claims.get(self.claim))
        if not banks:
            return f"token names no bank (claim {self.claim!r})"
        scopes = claims.get("scope") or claims.get("scp") or ""
        scopes = scopes.split() if isinstance(scopes, str) else [s for s in scopes if isinstance(s, str)]
        subject = str(claims.get("sub", ""))[:200]
        return Principal(
            "bank",
            key_id=f"jwt:{subject}",
            banks=frozenset(banks),
            read_only="write" not in scopes,
            default_bank=banks[0] if len(banks) == 1 else None,
        )

    async def _key(self, kid: str | None):
        async with self.lock:
            now = time.monotonic()
            stale = now - self.fetched > KEYS_SECONDS
            unknown = kid not in self.keys and now - self.fetched > REFETCH_SECONDS
            if not self.keys or stale or unknown:
                try:
                    self.keys = await self._fetch()
                    self.fetched = now
                except (httpx.HTTPError, ValueError, jwt.PyJWTError) as exc:
                    log.warning("cannot fetch the keys of OAuth issuer %s: %s", self.issuer, exc)
                    self.fetched = now - KEYS_SECONDS + REFETCH_SECONDS  # try again in 30 s
        found = self.keys.get(kid)
        if found is None and kid is None and len(self.keys) == 1:
            found = next(iter(self.keys.values()))
        return found.key if found is not None else None

    async def _fetch(self) -> dict[str | None, jwt.PyJWK]:
        async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS, follow_redirects=True) as http:
            url = self.jwks_url
            if url is None:
                r = await http.get(self.issuer.rstrip("/") + "/.well-known/openid-configuration")
                r.raise_for_status()
                url = r.json().get("jwks_uri")
                if not isinstance(url, str):
                    raise ValueError("the issuer's openid-configuration has no jwks_uri")
            r = await http.get(url)
            r.raise_for_status()
            document: Any = json.loads(r.content)
        keys: dict[str | None, jwt.PyJWK] = {}
        for entry in document.get("keys", []) if isinstance(document, dict) else []:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except jwt.PyJWTError:
                continue  # a key of a type we do not use
            keys[entry.get("kid") if isinstance(entry.get("kid"), str) else None] = key
        return keys


def _banks(value: Any) -> list[str]:
    """Bank ids from a claim: a list, or one string separated by spaces or commas; invalid ids
    are left out."""
    if isinstance(value, str):
        items: list[Any] = re.split(r"[\s,]+", value)
    elif isinstance(value, list):
        items = value
    else:
        return []
    return list(dict.fromkeys(v for v in items if valid_bank_id(v)))
