"""Read replicas with read-your-writes (HINDSIGHT_API_READ_DATABASE_URL; docs/scaling.md).

A bank's reads (recall, reflect's reading, listings, exports) go to a streaming replica that has
replayed the bank's last acknowledged write, else to the primary. Writes, queue claims and
everything inside a write transaction stay on the primary.

How a process knows where a bank's last write is, when another process may have made it: after
each write to a bank commits, and before it is acknowledged, the writer records the primary's
WAL insert position in `bank_positions` on the primary (`wrote`). The end of the WAL inserted
then lies past the write's commit record, so a replica whose replay position has reached it
shows the write to a new snapshot. A read looks the position up on the primary (one index
lookup) and compares it with each replica's replay position, which a background task samples
every POLL_SECONDS; when the sample is behind, the replica is asked once more before the read
falls back to the primary. The choice is kept for the whole read, so every statement of a
recall sees the same server.

A replica is skipped, without failing a request, while it cannot be reached (for DOWN_SECONDS
after a failure), once it is no longer a standby (promoted), and while it lags further than
HINDSIGHT_API_READ_MAX_LAG behind the primary. Its lag is measured against the primary's own
samples: how long ago the primary's WAL first reached past the replica's replay position.

When no replica is configured nothing here touches the database: no positions are recorded and
every read uses the primary's pools.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from dataclasses import dataclass, field

import asyncpg

from hindsight.db.pool import Pools, redact
from hindsight.db.sql import Q
from hindsight.metrics import READ_FALLBACKS, READS, REPLICA_LAG

log = logging.getLogger("hindsight.db")

# Why a read that could have used a replica went to the primary, the likeliest to pass first
# (hindsight_db_read_fallbacks's label).
_REASONS = ["lagging", "down", "promoted"]
POLL_SECONDS = 0.25  # between samples of the primary's position and each replica's replay position
DOWN_SECONDS = 5.0  # a replica that failed is not tried again for this long, unless a sample finds it back
CHECK_TIMEOUT = 1.0  # seconds a sample, or a replica's second look, may take
CONNECT_TIMEOUT = 2.0  # a replica that does not answer a connection in this time is down for now


@dataclass
class Replica:
    """One read replica: its pools (opened empty, so a replica that is down at start costs the
    start nothing), and what the last sample said."""

    label: str
    url: str
    pools: Pools
    replayed: int | None = None  # replay position (LSN as an integer), None until sampled
    standby: bool = False  # still in recovery; a promoted replica is no longer one
    lag: float | None = None  # seconds behind the primary, None until known
    down_until: float = 0.0
    reachable: bool = True  # for the log: say once when it goes and when it comes back

    def usable(self, now: float, max_lag: float) -> str | None:
        """Why this replica cannot serve reads now, or None."""
        if now < self.down_until or not self.reachable:
            return "down"
        if not self.standby or self.replayed is None:
            return "promoted"
        if self.lag is None or self.lag > max_lag:
            return "lagging"
        return None

    async def failed(self, exc: BaseException) -> None:
        """Set it aside until a sample finds it back; its pooled connections are replaced then
        (one that saw the server go may be half-way through an operation, unusable)."""
        self.down_until = time.monotonic() + DOWN_SECONDS
        if self.reachable:
            log.warning("read replica %s (%s) is skipped: %s", self.label, redact(self.url), _one_line(exc))
        self.reachable = False
        await self.pools.expire_connections()

    async def state(self) -> tuple[bool, int | None]:
        """(still a standby, replay position), asked now."""
        async with self.pools.shared.acquire(timeout=CHECK_TIMEOUT) as conn:
            row = await conn.fetchrow(Q.replica_state, timeout=CHECK_TIMEOUT)
        return bool(row["standby"]), row["replayed"]


@dataclass
class Target:
    """Where one read runs: the pools to use, and the replica they belong to (None: the primary)."""

    pools: Pools
    replica: Replica | None = None

    async def failed(self, exc: BaseException) -> bool:
        """A read on this target failed with `exc`: True when it should run again on the primary
        (the replica could not be reached, or cancelled the read to replay WAL), having set the
        replica aside for a while."""
        if self.replica is None or not replica_trouble(exc):
            return False
        await self.replica.failed(exc)
        READ_FALLBACKS.labels("failed").inc()
        READS.labels("primary").inc()
        return True


def replica_trouble(exc: BaseException) -> bool:
    """Whether `exc` is the replica's doing rather than the read's: a connection that could not be
    made or was lost, a server shutting down or starting, a statement cancelled by recovery (a
    standby's conflict with the WAL it replays: SQLSTATE 40001 with a recovery message)."""
    if isinstance(exc, (OSError, asyncpg.InterfaceError, asyncpg.InternalClientError)):
        return True
    if isinstance(exc, asyncpg.PostgresError):
        state = exc.sqlstate or ""
        return (
            state.startswith(("08", "57P"))
            or state == "53300"  # too many connections
            or (state == "40001" and "recovery" in str(exc))
        )
    return False


@dataclass
class Reads:
    """The read targets of one process: the primary's pools and the replicas' (module docstring)."""

    primary: Pools
    replicas: list[Replica] = field(default_factory=list)
    max_lag: float = 10.0
    _samples: collections.deque = field(default_factory=collections.deque)  # (monotonic time, primary LSN)
    _task: asyncio.Task | None = None
    _next: int = 0  # round robin among the replicas that qualify

    @classmethod
    async def open(cls, primary: Pools, urls: list[str], pool_max: int, max_lag: float, backend_nice: int = 0) -> Reads:
        reads = cls(primary, max_lag=max_lag)
        try:
            for i, url in enumerate(urls, 1):
                pools = await Pools.open(
                    url, 0, pool_max, backend_nice, pooled=primary.pooled, connect_timeout=CONNECT_TIMEOUT
                )
                reads.replicas.append(Replica(f"replica-{i}", url, pools))
        except BaseException:
            await reads.close()
            raise
        if reads.replicas:
            await reads.sample()  # the first reads may use the replicas
            reads._task = asyncio.get_running_loop().create_task(reads._poll(), name="read replica sampler")
        return reads

    @property
    def enabled(self) -> bool:
        return bool(self.replicas)

    async def target(self, bank_id: str) -> Target:
        """Where a read of `bank_id` runs now (module docstring)."""
        if not self.replicas:
            return Target(self.primary)
        async with self.primary.shared.acquire() as conn:
            position = await conn.fetchval(Q.bank_position, bank_id) or 0
        now = time.monotonic()
        ready, reasons = [], []
        for replica in self._rotation():
            why = replica.usable(now, self.max_lag)
            if why is None:
                ready.append(replica)
            else:
                reasons.append(why)
        for replica in ready:
            if replica.replayed is not None and replica.replayed >= position:
                return self._use(replica)
        if ready:  # the samples are behind the bank's last write: ask the most advanced replica again
            replica = max(ready, key=lambda r: r.replayed or 0)
            try:
                replica.standby, replica.replayed = await replica.state()
            except Exception as exc:
                if not replica_trouble(exc):
                    raise
                await replica.failed(exc)
                return self._fall_back("down")
            if replica.standby and replica.replayed is not None and replica.replayed >= position:
                return self._use(replica)
            return self._fall_back("behind")
        return self._fall_back(min(reasons, key=_REASONS.index))

    def _rotation(self) -> list[Replica]:
        self._next = (self._next + 1) % len(self.replicas)
        return self.replicas[self._next :] + self.replicas[: self._next]

    def _use(self, replica: Replica) -> Target:
        READS.labels(replica.label).inc()
        return Target(replica.pools, replica)

    def _fall_back(self, reason: str) -> Target:
        READ_FALLBACKS.labels(reason).inc()
        READS.labels("primary").inc()
        return Target(self.primary)

    async def wrote(self, bank_id: str | None) -> None:
        """A write to `bank_id` has committed: record where the primary's WAL is, before the write
        is acknowledged (module docstring). Nothing without replicas."""
        if not self.replicas or bank_id is None:
            return
        async with self.primary.shared.acquire() as conn:
            await conn.execute(Q.bank_position_record, bank_id)

    # ---- sampling -------------------------------------------------------------------------------
    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                await self.sample()
            except Exception:  # a sampler that stopped would leave every replica's state frozen
                log.exception("sampling the read replicas failed")

    async def sample(self) -> None:
        """The primary's position now, then each replica's state and its lag against the samples."""
        now = time.monotonic()
        try:
            async with self.primary.shared.acquire(timeout=CHECK_TIMEOUT) as conn:
                self._samples.append((now, await conn.fetchval(Q.primary_position, timeout=CHECK_TIMEOUT)))
        except Exception as exc:
            if not replica_trouble(exc) and not isinstance(exc, TimeoutError):
                raise
            # The primary cannot be reached: the replicas' lag cannot grow known; reads need the
            # primary for the bank's position anyway.
        keep = max(2 * self.max_lag, 10.0)
        while self._samples and self._samples[0][0] < now - keep:
            self._samples.popleft()
        await asyncio.gather(*(self._sample_replica(r, now) for r in self.replicas))

    async def _sample_replica(self, replica: Replica, now: float) -> None:
        try:
            replica.standby, replica.replayed = await replica.state()
        except Exception as exc:
            if not replica_trouble(exc) and not isinstance(exc, TimeoutError):
                raise
            await replica.failed(exc)
            REPLICA_LAG.labels(replica.label).set(float("nan"))
            return
        if not replica.reachable:
            log.warning("read replica %s (%s) is back", replica.label, redact(replica.url))
            replica.reachable = True
        replica.down_until = 0.0  # it answered: reads may try it again
        if not replica.standby:
            replica.lag = None
            REPLICA_LAG.labels(replica.label).set(float("nan"))
            return
        replica.lag = self.lag_of(replica.replayed or 0, now)
        REPLICA_LAG.labels(replica.label).set(replica.lag if replica.lag is not None else float("nan"))

    def lag_of(self, replayed: int, now: float) -> float | None:
        """Seconds since the primary's WAL first reached past `replayed`, from the samples: 0 when
        the replica has replayed all the primary had at the last sample; None with no samples."""
        return lag_from_samples(self._samples, replayed, now)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for replica in self.replicas:
            await replica.pools.close()

    async def expire_connections(self) -> None:
        for replica in self.replicas:
            await replica.pools.expire_connections()

    def observe(self) -> list[Pools]:
        """The replicas' pools, for the pool gauges."""
        return [r.pools for r in self.replicas]


def lag_from_samples(samples, replayed: int, now: float) -> float | None:
    """How far behind a replay position is, given the primary's (time, position) samples, oldest
    first: 0 if it has reached the newest sample's position, else the time since the oldest sample
    beyond it (a lower bound when even the oldest sample is beyond it). None without samples."""
    if not samples:
        return None
    if replayed >= samples[-1][1]:
        return 0.0
    for at, position in samples:
        if position > replayed:
            return max(0.0, now - at)
    return 0.0


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
