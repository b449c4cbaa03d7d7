"""How many memories a bank took in over a period, by type, in buckets of time: every bucket of
the period is there, empty ones with zeros, so a chart needs no filling."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from hindsight.db.sql import Q, fill
from hindsight.engine.rules.text import Strict

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

Period = Literal["1h", "12h", "1d", "7d", "30d", "90d"]
TimeField = Literal["created_at", "mentioned_at", "occurred_start"]


@dataclass(frozen=True)
class Slicing:
    trunc: str  # date_trunc's unit
    step: timedelta
    count: int


PERIODS: dict[str, Slicing] = {
    "1h": Slicing("minute", timedelta(minutes=1), 60),
    "12h": Slicing("hour", timedelta(hours=1), 12),
    "1d": Slicing("hour", timedelta(hours=1), 24),
    "7d": Slicing("day", timedelta(days=1), 7),
    "30d": Slicing("day", timedelta(days=1), 30),
    "90d": Slicing("day", timedelta(days=1), 90),
}


class TimeseriesQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    period: Period = Field("7d", description="1h and 12h... in minutes or hours; 7d, 30d, 90d in days (UTC).")
    time_field: TimeField = Field(
        "created_at",
        description="created_at: when stored; mentioned_at or occurred_start: when said or when it happened "
        "(created_at where unset).",
    )


class TimeBucket(BaseModel):
    time: datetime = Field(description="The bucket's start (UTC).")
    world: int = 0
    experience: int = 0


class MemoriesTimeseries(BaseModel):
    bank_id: str
    period: Period
    trunc: str = Field(description="The buckets' size: minute, hour or day.")
    time_field: TimeField
    buckets: list[TimeBucket]


def _start_of(trunc: str, at: datetime) -> datetime:
    if trunc == "minute":
        return at.replace(second=0, microsecond=0)
    if trunc == "hour":
        return at.replace(minute=0, second=0, microsecond=0)
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


async def memories_timeseries(rt: Runtime, bank_id: str, query: TimeseriesQuery) -> MemoriesTimeseries:
    s = PERIODS[query.period]
    last = _start_of(s.trunc, datetime.now(UTC))
    first = last - s.step * (s.count - 1)
    buckets = {first + s.step * i: TimeBucket(time=first + s.step * i) for i in range(s.count)}
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(fill(Q.memories_timeseries, column=query.time_field), bank_id, s.trunc, first)
    for r in rows:
        bucket = buckets.get(r["bucket"].astimezone(UTC))
        if bucket is not None and r["kind"] in ("world", "experience"):
            setattr(bucket, r["kind"], getattr(bucket, r["kind"]) + r["n"])
    return MemoriesTimeseries(
        bank_id=bank_id, period=query.period, trunc=s.trunc, time_field=query.time_field, buckets=list(buckets.values())
    )
