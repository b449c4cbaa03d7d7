"""What every embedder does the same way, whatever its model: a batch spread over one run per
core, texts sorted by length first (padding is wasted compute), a small cache of query vectors
(agents re-ask), and the metrics. A model says how to embed a handful of texts (`_run`)."""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from hindsight import malloc
from hindsight.metrics import EMBED_SECONDS, EMBED_TEXTS

T = TypeVar("T")


# Query vectors kept for queries asked again (an agent re-asking within a task), ~1.9 KB each: the
# recent repeats in half a megabyte, and a query naming what an erasure removed leaves another
# process's cache after this many newer ones (docs/privacy.md).
QUERY_CACHE = 256


class BaseEmbedder:
    name: str
    dim: int
    # Whether the model was trained on Chinese, Japanese and Korean text: recall counts its
    # similarities less for a query in those scripts when it was not (engine/search/fusion.py).
    reads_cjk: bool = True
    # The form in which a text is given to the model (None: as written), the same for every text
    # it embeds, stored or asked: engine/lifecycle.py sets it to the Chinese gloss
    # (language/gloss.py) for a model that cannot read Chinese, and then `reads_han`, since the
    # model reads Han text through it.
    prepare: Callable[[str], str] | None = None
    reads_han: bool = False

    def start(self, workers: int, batch: int) -> None:
        """Ready to embed: `workers` runs at once (one core each), `batch` texts a run."""
        self.workers = workers
        self.batch = batch
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="embed") if workers > 1 else None
        # Queries get threads of their own, one a core: on asyncio's default executor (cores + 4
        # threads) 16 clients ran six model runs at once on two cores, each with its own scratch
        # memory, for no more throughput; and a query never waits behind a retain's batch.
        self.query_threads = workers
        self._queries = ThreadPoolExecutor(workers, thread_name_prefix="embed-query")
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.dim = int(self.embed(["dimension probe"])[0].shape[0])

    def share_queries(self, processes: int) -> None:
        """Query runs at once in this process when `processes` server processes share the cores
        (HINDSIGHT_API_WORKERS): its share of them, at least one. Batches keep every core: one
        client's retain is embedded by one process, which with its share alone embedded a batch
        on one core of two (bench/README.md, "Workers: a batch on every core")."""
        queries = max(1, self.workers // max(1, processes))
        if queries != self.query_threads:
            self._queries.shutdown(wait=False)
            self.query_threads = queries
            self._queries = ThreadPoolExecutor(queries, thread_name_prefix="embed-query")

    def _run(self, texts: list[str]) -> np.ndarray:
        """L2-normalised float32 rows for a few texts, in order (one model run)."""
        raise NotImplementedError

    def embed(self, texts: list[str], spread: bool = True) -> np.ndarray:
        """Embed many texts; returns float32 rows in input order. `spread=False` runs every batch
        on the calling thread: a few texts on the query threads must not queue in the batch pool
        behind a bulk import's."""
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        EMBED_TEXTS.labels("batch").inc(len(texts))
        with EMBED_SECONDS.labels("batch").time():
            return self._embed(self._prepared(texts), spread)

    def _prepared(self, texts: Sequence[str]) -> list[str]:
        prepare = self.prepare
        return list(texts) if prepare is None else [prepare(t) for t in texts]

    def _embed(self, texts: list[str], spread: bool = True) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = [order[start : start + self.batch] for start in range(0, len(order), self.batch)]
        run = lambda idx: self._run([texts[i] for i in idx])  # noqa: E731
        pool = self._pool if spread and len(batches) > 1 else None
        results = list(pool.map(run, batches)) if pool else map(run, batches)
        out = None
        for idx, vecs in zip(batches, results):
            if out is None:
                out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
        if len(texts) > self.batch:
            malloc.trim()
        assert out is not None  # texts is not empty
        return out

    async def query(self, text: str) -> np.ndarray:
        """embed_query from the event loop: a cached vector without leaving it (a hop to a thread
        and back costs more than the lookup), else the model on the query threads."""
        hit = self._cached(text)
        if hit is not None:
            return hit
        return await self.short(self.embed_query, text)

    async def short(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on the query threads: for model work as small as a query's (an agent's
        one-fact retain), which then waits in the threads' own queue, first come first served,
        instead of for a turn at the event loop between every step (engine/memory/retain.py)."""
        return await asyncio.get_running_loop().run_in_executor(self._queries, fn, *args)

    def _cached(self, text: str) -> np.ndarray | None:
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
            return hit

    def forget_queries(self) -> None:
        """Drop every cached query: after an erasure, a query that named what was forgotten is
        not kept in this process either (the model call it saves costs a few milliseconds)."""
        with self._lock:
            self._cache.clear()

    def embed_query(self, text: str) -> np.ndarray:
        """Queries repeat (agents re-ask); a small LRU saves the model call."""
        hit = self._cached(text)
        if hit is not None:
            return hit
        EMBED_TEXTS.labels("query").inc()
        with EMBED_SECONDS.labels("query").time():
            vec = self._run(self._prepared([text]))[0].astype(np.float32)
        with self._lock:
            self._cache[text] = vec
            if len(self._cache) > QUERY_CACHE:
                self._cache.popitem(last=False)
        return vec
