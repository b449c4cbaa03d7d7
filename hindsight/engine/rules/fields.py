"""Field rules shared by the request models of every room: bank ids, tags, metadata size, paging and
confirmations."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field

from hindsight.bank_ids import BANK_ID_RULE, invalid_bank_id, valid_bank_id


def _bank_id(v: str) -> str:
    if not valid_bank_id(v):
        raise ValueError(invalid_bank_id(v))
    return v


BankId = Annotated[str, AfterValidator(_bank_id), Field(description=f"Bank id: {BANK_ID_RULE}.")]


MAX_TAGS = 64


# PostgreSQL's OFFSET is a bigint; a page this deep is never useful, and a larger number was a 500.
MAX_OFFSET = 1_000_000_000


Offset = Field(0, ge=0, le=MAX_OFFSET, description="Skip this many first (at most 1,000,000,000).")


MAX_TAG_CHARS = 128


def confirmation(what: str) -> Any:
    """The type of a `confirm` argument that must be true to delete `what` (default false, so
    that leaving it out is refused too)."""

    def check(v: bool) -> bool:
        if v is not True:
            raise ValueError(f"deleting {what} needs confirm=true")
        return v

    return Annotated[
        bool,
        AfterValidator(check),
        Field(validate_default=True, description="Must be true: deleting cannot be undone."),
    ]


def not_blank(v: str, what: str) -> str:
    if not v.strip():
        raise ValueError(f"{what} is blank")
    return v


def clean_tags(v: Any) -> Any:
    """Tags trimmed, deduplicated and sorted. Anything but a list is left to the type check: a
    string is never taken for a list of one."""
    if isinstance(v, list):
        if len(v) > MAX_TAGS:
            raise ValueError(f"at most {MAX_TAGS} tags")
        for t in v:
            if not isinstance(t, str) or not t.strip() or len(t) > MAX_TAG_CHARS:
                raise ValueError(f"each tag must be a non-empty string of at most {MAX_TAG_CHARS} characters")
        return sorted({t.strip() for t in v})
    return v


# The most JSON a memory's metadata may hold (retain, and imports: engine/portable.py).
METADATA_BYTES = 16_384
