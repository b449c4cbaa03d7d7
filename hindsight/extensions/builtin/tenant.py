"""Tenant extensions decide who a request acts as.

`HINDSIGHT_API_TENANT_EXTENSION` names one as `module:Class`, as in the reference
(`hindsight_api.extensions.builtin.tenant:ApiKeyTenantExtension` there,
`hindsight.extensions.builtin.tenant:ApiKeyTenantExtension` here; both spellings are accepted).
"""

from __future__ import annotations

import importlib

from ...engine.errors import Unauthorized
from ...engine.keys import OPEN, Principal, authenticate


class TenantExtension:
    """No authentication: every caller is the open principal."""

    def __init__(self, settings, pool):
        self.settings = settings
        self.pool = pool

    async def principal(self, authorization: str | None) -> Principal:
        return OPEN


class ApiKeyTenantExtension(TenantExtension):
    """`Authorization: Bearer <key>` on every call: the configured admin key, or a stored key."""

    async def principal(self, authorization: str | None) -> Principal:
        if not authorization:
            raise Unauthorized("missing API key: send 'Authorization: Bearer <key>'")
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("malformed Authorization header: expected 'Bearer <key>'")
        p = await authenticate(self.pool, token.strip(), self.settings.tenant_api_key)
        if p is None:
            raise Unauthorized("invalid or revoked API key")
        return p


def load_extension(spec: str | None, settings, pool) -> TenantExtension:
    if not spec:
        return TenantExtension(settings, pool)
    module, _, cls = spec.partition(":")
    if module.startswith("hindsight_api."):
        module = "hindsight." + module[len("hindsight_api.") :]
    try:
        klass = getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError, ValueError):
        from ...config import ConfigError

        raise ConfigError(f"HINDSIGHT_API_TENANT_EXTENSION: cannot load {spec!r}") from None
    return klass(settings, pool)
