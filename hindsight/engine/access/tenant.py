"""Who a request acts as: the tenant extension named by `HINDSIGHT_API_TENANT_EXTENSION`.

The setting names a class as `module:Class`, as in the reference
(`hindsight_api.extensions.builtin.tenant:ApiKeyTenantExtension` there,
`hindsight.extensions.builtin.tenant:ApiKeyTenantExtension` here; both spellings are accepted).
It is loaded by name, so extensions sit above the engine and the engine imports none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from hindsight.config import ConfigError, Settings
from hindsight.engine.access.keys import OPEN, Principal

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


class TenantExtension:
    """No authentication: every caller is the open principal. Extensions derive from it."""

    def __init__(self, rt: Runtime):
        self.rt = rt

    @classmethod
    def check_settings(cls, settings: Settings) -> None:
        """Raise ConfigError naming the setting this extension needs and lacks; checked before
        the server starts anything."""

    async def principal(self, authorization: str | None) -> Principal:
        return OPEN


def extension_class(spec: str | None) -> type[TenantExtension]:
    """The class `spec` names (`module:Class`), TenantExtension itself for none."""
    if not spec:
        return TenantExtension
    module, _, cls = spec.partition(":")
    if module.startswith("hindsight_api."):
        module = "hindsight." + module[len("hindsight_api.") :]
    try:
        klass = getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError, ValueError):
        raise ConfigError(f"HINDSIGHT_API_TENANT_EXTENSION: cannot load {spec!r}") from None
    if not (isinstance(klass, type) and issubclass(klass, TenantExtension)):
        raise ConfigError(f"HINDSIGHT_API_TENANT_EXTENSION: {spec!r} is not a tenant extension class")
    return klass


def load_extension(spec: str | None, rt: Runtime) -> TenantExtension:
    klass = extension_class(spec)
    klass.check_settings(rt.settings)
    return klass(rt)
