"""Tag matching as Hindsight defines it, one rule for every place tags filter memories.

- `any` / `all`: the memory shares one of the tags / holds all of them, *or has no tags at all*
  (untagged memories are visible to every scope: the reference's default, so a client that
  tags its own memories still sees the shared, untagged ones);
- `any_strict` / `all_strict`: the same without the untagged memories;
- `exact`: the memory's tag set equals the request's (an empty request selects untagged only).

No tags in the request means no filter, except for `exact`. A mental model with tags draws
from the memories that carry all of them (`all_strict`), as the reference does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

TagsMatch = Literal["any", "all", "any_strict", "all_strict", "exact"]
TAGS_MATCH_VALUES: tuple[str, ...] = ("any", "all", "any_strict", "all_strict", "exact")
MENTAL_MODEL_MATCH: TagsMatch = "all_strict"


def tag_condition(column: str, tags: list[str] | None, match: TagsMatch, bind: Callable[..., str]) -> str | None:
    """SQL for `column` (a NOT NULL text[]), or None when nothing is filtered. `bind(value,
    cast)` binds the request's tags (engine/binder.Binder) and is called only when needed."""
    if not tags:
        return f"{column} = '{{}}'" if match == "exact" else None
    placeholder = bind(tags, "text[]")
    if match == "exact":
        return f"({column} @> {placeholder} AND {column} <@ {placeholder})"
    op = "&&" if match in ("any", "any_strict") else "@>"
    # The strict forms need no emptiness test: an empty array neither overlaps nor contains a
    # non-empty one. They stay plain `&&` / `@>`, which the GIN index on tags can answer.
    if match in ("any_strict", "all_strict"):
        return f"{column} {op} {placeholder}"
    return f"({column} = '{{}}' OR {column} {op} {placeholder})"
