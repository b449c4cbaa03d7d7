"""LLM tokens and cost per bank, broken down by operation and model (from `llm_usage`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hindsight.db.sql import Q

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


async def get_bank_usage(rt: Runtime, bank_id: str) -> dict:
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(Q.usage_by_bank, bank_id)
    by = [
        {
            "operation": r["operation"],
            "model": r["model"],
            "calls": r["calls"],
            "prompt_tokens": int(r["prompt_tokens"] or 0),
            "completion_tokens": int(r["completion_tokens"] or 0),
            "cost_usd": r["cost_usd"],
            "first_call": r["first_call"],
            "last_call": r["last_call"],
        }
        for r in rows
    ]
    costs = [b["cost_usd"] for b in by if b["cost_usd"] is not None]
    return {
        "bank_id": bank_id,
        "total": {
            "calls": sum(b["calls"] for b in by),
            "prompt_tokens": sum(b["prompt_tokens"] for b in by),
            "completion_tokens": sum(b["completion_tokens"] for b in by),
            "cost_usd": sum(costs) if costs else None,
        },
        "by_operation": by,
    }
