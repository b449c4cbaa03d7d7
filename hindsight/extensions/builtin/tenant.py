"""The built-in tenant extension: API keys (`HINDSIGHT_API_TENANT_EXTENSION=
hindsight.extensions.builtin.tenant:ApiKeyTenantExtension`). The engine loads it by that name
(engine/access/tenant.py)."""

from __future__ import annotations

from hindsight.config import ConfigError, Settings
from hindsight.engine.access.keys import Principal, authenticate
from hindsight.engine.access.tenant import TenantExtension
from hindsight.engine.errors import Unauthorized

__all__ = ["ApiKeyTenantExtension", "TenantExtension"]


class ApiKeyTenantExtension(TenantExtension):
    """`Authorization: Bearer <key>` on every call: the configured admin key, or a stored key."""

    @classmethod
    def check_settings(cls, settings: Settings) -> None:
        if not settings.tenant_api_key:
            raise ConfigError("HINDSIGHT_API_TENANT_API_KEY: required when the API-key tenant extension is on")

    async def principal(self, authorization: str | None) -> Principal:
        if not authorization:
            raise Unauthorized("missing API key: send 'Authorization: Bearer <key>'")
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("malformed Authorization header: expected 'Bearer <key>'")
        p = await authenticate(self.rt, token.strip(), self.rt.settings.tenant_api_key)
        if p is None:
            raise Unauthorized("invalid or revoked API key")
        return p
