"""A bank's settings in the words of Hindsight's clients: the reference has ~70 per-bank settings
(`PATCH .../config`, MCP `update_bank`'s `config_updates`); the few this server acts on set the
bank's profile (`reflect_mission` its mission, `disposition_*` its traits), and every other one
is kept as the client set it (`client_settings`) and reported as not applied, since this server
has no such setting. One mapping for both faces: the `/v1/default` config routes and the MCP tool."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ConfigDict, Field

from hindsight.engine.banks.schemas import Bank
from hindsight.engine.errors import InvalidArgument
from hindsight.engine.rules.text import Strict

# The settings acted on, and where they go.
TRAITS = {f"disposition_{t}": t for t in ("skepticism", "literalism", "empathy")}
APPLIED = frozenset({"reflect_mission", *TRAITS})
MAX_SETTINGS = 100
_KEY = re.compile(r"[a-z][a-z0-9_]{0,99}")


class BankSettingsChange(Strict):
    """What update_bank changes: the name, the mission, and settings by the reference's names."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=200, description="A display name.")
    mission: str | None = Field(
        None, max_length=4_000, description="Who the agent is and what it is trying to accomplish (steers reflect)."
    )
    config_updates: dict[str, Any] | None = Field(
        None,
        max_length=MAX_SETTINGS,
        description="Settings by Hindsight's names (or their HINDSIGHT_API_* forms): reflect_mission and "
        "disposition_skepticism / _literalism / _empathy (1-5) set the profile; any other is kept and reported "
        "as not applied; null removes one.",
    )


def setting_name(raw: str, field: str = "config_updates") -> str:
    """A setting's name as the reference's Python field (HINDSIGHT_API_X is also accepted)."""
    key = raw.removeprefix("HINDSIGHT_API_").lower() if raw.startswith("HINDSIGHT_API_") else raw
    if not _KEY.fullmatch(key):
        raise InvalidArgument(f"{field}: {raw[:120]!r} is not a setting name (lower_snake_case)", field)
    return key


def _check(key: str, value: Any, field: str) -> None:
    if key == "reflect_mission" and not (isinstance(value, str) and len(value) <= 4_000):
        raise InvalidArgument(f"{field}.reflect_mission: expected text of at most 4,000 characters", field)
    if key in TRAITS and not (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 5):
        raise InvalidArgument(f"{field}.{key}: expected an integer from 1 to 5", field)


def settings_update(change: BankSettingsChange, bank: Bank, field: str = "config_updates") -> dict[str, Any]:
    """The BankUpdate fields `change` sets on `bank`: its name and mission, every setting kept as
    an override (null removes one), the mission and traits they name applied to the profile.
    `field` is what the client called the settings (errors name it)."""
    kept = dict(bank.client_settings)
    update: dict[str, Any] = {}
    if change.name is not None:
        update["name"] = change.name
    if change.mission is not None:
        update["mission"] = change.mission
    for raw, value in (change.config_updates or {}).items():
        key = setting_name(raw, field)
        if value is None:
            kept.pop(key, None)
            continue
        _check(key, value, field)
        kept[key] = value
        if key == "reflect_mission":
            update["mission"] = value
        elif key in TRAITS:
            update.setdefault("disposition", dict(bank.disposition or {}))[TRAITS[key]] = value
    if len(kept) > MAX_SETTINGS:
        raise InvalidArgument(f"{field}: a bank keeps at most {MAX_SETTINGS} overrides", field)
    return {**update, "client_settings": kept} if change.config_updates is not None else update


def effective_settings(bank: Bank) -> dict[str, Any]:
    """The bank's settings as they apply: those it keeps, with what its profile says of the ones
    acted on (a trait never set reads 3, the middle of the scale)."""
    return {
        **bank.client_settings,
        "reflect_mission": bank.mission,
        **{key: (bank.disposition or {}).get(trait, 3) for key, trait in TRAITS.items()},
        "document_chunk_size": bank.document_chunk_size,
    }


def not_applied(bank: Bank) -> list[str]:
    """The kept settings this server has no use for."""
    return sorted(k for k in bank.client_settings if k not in APPLIED)
