"""The conditions every arm of one recall shares."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hindsight.db.binder import Fragment
from hindsight.engine.memory.validity import truth_conditions
from hindsight.engine.rules.tags import tag_condition
from hindsight.engine.search.filters import MEMORY_FIELDS, compile_filter
from hindsight.engine.search.schemas import RecallRequest

if TYPE_CHECKING:
    pass


def request_filters(req: RecallRequest) -> Fragment:
    """The conditions every arm and the details statement share (tags, types, the filter
    expression, what is true: raw units replaced by their facts, invalidated memories and, unless
    asked, memories a newer one superseded left out), built once and bound into each statement."""
    f = Fragment()
    parts = ["NOT m.superseded", "m.invalidated_at IS NULL", *truth_conditions(req, f)]
    if tagged := tag_condition("m.tags", req.tags, req.tags_match, f):
        parts.append(tagged)
    if req.types:
        parts.append(f"m.kind = ANY({f(list(req.types), 'text[]')})")
    if compiled := compile_filter(req.filter, MEMORY_FIELDS, f):
        parts.append(compiled)
    f.sql = "".join(f" AND {part}" for part in parts)
    return f
