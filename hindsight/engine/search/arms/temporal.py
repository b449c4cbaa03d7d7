"""The temporal arm: memories whose time (when it happened, or when it was said) falls in a window
the query names ("last May", "in 2023"), nearest the query first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hindsight.db.binder import Binder, Fragment
from hindsight.db.sql import Q, fill
from hindsight.engine.search.arms.running import fetch_ids
from hindsight.engine.search.fusion import ARM_LIMIT
from hindsight.language.time_expressions import TimeWindow

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


# When the time arm's walk of the vector index stops short, the window is ranked exactly from at
# most this many memories mentioned in it and this many that occurred before its end
# (recall_temporal): the whole window unless it is wide, at a cost bounded whatever the query.
TEMPORAL_EXACT_CAP = 5_000


async def temporal_ids(rt: Runtime, bank_id: str, qvec, f: Fragment, window: TimeWindow) -> list:
    """The temporal arm: memories in the window, nearest the query first.

    Planned for each call's window: a generic plan cannot tell a day from a year, and the one
    PostgreSQL kept on a large bank sorted every memory of a wide window by distance where the
    custom plan walks the HNSW index (bench/README.md, "Keyword and temporal arms: a custom plan
    each call"). A walk of the index that stops short is replaced by an exact ranking of the
    window (recall_temporal), which a bank small beside the others gets without the walk
    (engine/banks/sizes.py)."""
    # Only a bank the exact ranking reads whole skips the walk: of a bigger one it would rank
    # only the first TEMPORAL_EXACT_CAP memories of a wide window.
    sort = await rt.sizes.sorts(bank_id, at_most=TEMPORAL_EXACT_CAP)
    p = Binder(bank_id, qvec, ARM_LIMIT, window.start, window.end, TEMPORAL_EXACT_CAP, sort)
    return await fetch_ids(rt.planned, fill(Q.recall_temporal, filter=f.into(p)), *p.values)
