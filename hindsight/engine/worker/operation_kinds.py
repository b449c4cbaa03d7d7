"""Every kind of operation the queue holds and the function that runs it, in one table.

Why a table: which kinds exist does not depend on which modules happen to be imported, and a
reader sees them all with what each needs: a process without the LLM a kind needs never claims
it (another process that has one will).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hindsight.engine.knowledge import documents, file_retain
from hindsight.engine.memory import extraction, retain
from hindsight.engine.notify import delivery, events
from hindsight.engine.reflection import mental_models
from hindsight.engine.transfer import archive

if TYPE_CHECKING:
    from hindsight.engine.queue.operations import Job
    from hindsight.engine.runtime import Runtime


@dataclass(frozen=True)
class Kind:
    run: Callable[[Runtime, Job], Awaitable[Any]]  # returns the operation's result (JSON-able)
    needs_llm: str | None = None  # the LLM purpose ("retain", "reflect") it cannot run without


KINDS: dict[str, Kind] = {
    retain.RETAIN: Kind(retain.run_retain),
    retain.EXTRACT: Kind(extraction.run_extraction, needs_llm="retain"),
    documents.IMPORT: Kind(documents.run_import),
    mental_models.REFRESH: Kind(mental_models.run_refresh),
    mental_models.CONSOLIDATE: Kind(mental_models.run_consolidate),
    archive.EXPORT: Kind(archive.run_export),
    archive.IMPORT: Kind(archive.run_import),
    file_retain.RETAIN_FILE: Kind(file_retain.run_file_retain),
    events.DELIVERY: Kind(delivery.run_delivery),
}
