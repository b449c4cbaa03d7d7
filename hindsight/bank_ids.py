"""What a bank id may be, and the one wording of an invalid one, for every place that checks it:
settings, request models, the engine, the MCP endpoints' URLs and X-Bank-Id header.

Bank ids are as Hindsight's clients make them: hindsight-google-adk names banks
"{app_name}::{user_id}", and user ids are often e-mail addresses. '/', whitespace and control
characters stay out (they break URLs and logs), and so do ids of dots alone ("." and ".." are
rewritten by every HTTP client). Migration 007 holds the database to the same rule.
"""

from __future__ import annotations

import re
from typing import TypeGuard

BANK_ID_PATTERN = r"^[A-Za-z0-9_.:@-]{1,128}$"
BANK_ID_RULE = "1-128 characters of A-Z a-z 0-9 _ - . : @, not dots alone"
_BANK_ID = re.compile(BANK_ID_PATTERN)


def valid_bank_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(_BANK_ID.fullmatch(value)) and value.strip(".") != ""


def invalid_bank_id(value: object) -> str:
    """What is wrong with a bank id that is not valid: the value as given, and the rule."""
    return f"invalid bank id {value!r}; use {BANK_ID_RULE}"
