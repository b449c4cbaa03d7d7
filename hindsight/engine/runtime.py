"""What the concept modules run on: one small handle, built once by the engine when it starts.

Why one handle: the same kind of work has one call shape, and a function reaches only what it
needs, never the whole engine. The rule (CONTRIBUTING.md): a concept function takes `rt: Runtime` when it opens its own connections or uses the embedder, the
LLM, the settings or the operation queue, and `conn` when it is one step of a caller's
transaction. Nothing below the engine's own methods sees the Engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import asyncpg

from hindsight.config import Settings
from hindsight.engine.cpu_slots import CpuSlots

if TYPE_CHECKING:
    from hindsight.db.replicas import Reads
    from hindsight.db.vacuum import Vacuum
    from hindsight.embedding import Embedder
    from hindsight.engine.banks.gates import BankWrites, Gates
    from hindsight.engine.banks.sizes import BankSizes
    from hindsight.engine.queue.schemas import Operation
    from hindsight.llm import LLM


class Queue(Protocol):
    """The operation queue as concept modules see it: queued work is started at once rather than
    at the next scheduler tick, and a caller may wait for an operation to finish."""

    def poke(self) -> None: ...

    async def wait(self, bank_id: str, operation_id: str, timeout: float) -> Operation: ...


@dataclass
class Runtime:
    settings: Settings
    pool: asyncpg.Pool
    # Connections that plan each statement for its own parameters (db/pool.py, Pools): the
    # recall arms whose best plan depends on them.
    planned: asyncpg.Pool
    # Connections that keep one plan a statement (db/pool.py, _FIXED): the vector index's walk
    # and the word counts.
    fixed: asyncpg.Pool
    writes: BankWrites  # the way into a transaction that writes a bank
    gates: Gates  # per-bank gates, each named by the work it bounds (banks/gates.py)
    embedder: Embedder
    llm: LLM
    queue: Queue
    cpu_slots: CpuSlots  # CPU_SLOTS of them
    sizes: BankSizes  # each bank's memory count beside all banks', for recall's semantic and time arms
    reads: Reads  # where a bank's reads run, and the record of its writes for them (db/replicas.py)
    vacuum: Vacuum  # the VACUUM that follows an erasure (db/vacuum.py)
