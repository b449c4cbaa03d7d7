"""Who a request acts as: the tenant extension named by `HINDSIGHT_API_TENANT_EXTENSION`.

The setting names a class as `module:Class`, as in the reference
(`hindsight_api.extensions.builtin.tenant:ApiKeyTenantExtension` there,
`hindsight.extensions.builtin.tenant:ApiKeyTenantExtension` here; both spellings are accepted).
It is loaded by name, so extensions sit above the engine and the engine imports none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from hindsight.config import ConfigError
from hindsight.engine.access.keys import OPEN, Principal

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


class TenantExtension:
    """No authentication: every caller is the open principal. Extensions derive from it."""

    def __init__(self, rt: Runtime):
        self.rt = rt

    async def principal(self, authorization: str | None) -> Principal:
        return OPEN


def load_extension(spec: str | None, rt: Runtime) -> TenantExtension:
    if not spec:
        return TenantExtension(rt)
    module, _, cls = spec.partition(":")
    if module.startswith("hindsight_api."):
        module = "hindsight." + module[len("hindsight_api.") :]
    try:
        klass = getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError, ValueError):
        raise ConfigError(f"HINDSIGHT_API_TENANT_EXTENSION: cannot load {spec!r}") from None
    return klass(rt)
