"""Whether the LLMs a bank's work would use answer, probed now with one small call each (Hindsight's
`POST .../health/llm`): so that "not configured" or "unreachable" shows up when asked, not as a
stall later. Status only: never the provider, model, endpoint, key or the provider's error text.

A bank's work uses two of this server's LLM settings: retain's (fact extraction) and reflect's
(reflect, and mental-model refreshes, what the reference calls consolidation). Operations that
share a configuration are probed once."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from hindsight.llm import LLMError

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

# The reference's operations, and the purpose of ours that does each one's work.
PURPOSES = {"retain": "retain", "consolidation": "reflect", "reflect": "reflect"}
PROBE = """TASK: health
Reply with JSON only: {"ok": true}"""


class Probe(BaseModel):
    ok: bool = True


class LlmProbe(BaseModel):
    operation: Literal["retain", "consolidation", "reflect"]
    ok: bool = Field(description="True only when the LLM answered the probe.")
    status: Literal["connected", "not_configured", "auth_failed", "unreachable", "timeout"]
    latency_ms: float | None = Field(None, description="How long the probe took.")


class LlmHealth(BaseModel):
    bank_id: str
    operations: list[LlmProbe]


def _status(exc: LLMError) -> str:
    """How a failed probe failed, in words that disclose nothing of the configuration. An answer
    the provider gave, however unusable (or a rate limit), means it is reachable."""
    if exc.cause == "timeout":
        return "timeout"
    if exc.cause == "provider_error":
        text = exc.message.lower()
        refused = any(w in text for w in ("401", "403", "auth", "api key", "permission"))
        return "auth_failed" if refused else "unreachable"
    return "connected"


async def probe_llms(rt: Runtime, bank_id: str) -> LlmHealth:
    seen: dict[tuple | None, LlmProbe] = {}
    out = []
    for operation, purpose in PURPOSES.items():
        cfg = rt.settings.llm_for(purpose)
        key = (cfg[0], cfg[2]) if cfg else None
        if key in seen:
            out.append(seen[key].model_copy(update={"operation": operation}))
            continue
        if cfg is None:
            probe = LlmProbe(operation=operation, ok=False, status="not_configured")
        else:
            started = time.perf_counter()
            try:
                await rt.llm.json(
                    purpose,
                    [{"role": "system", "content": PROBE}, {"role": "user", "content": "ping"}],
                    Probe,
                    bank_id=bank_id,
                    operation="health",
                    max_tokens=16,
                )
                status = "connected"
            except LLMError as exc:
                status = _status(exc)
            latency = round((time.perf_counter() - started) * 1000, 1)
            probe = LlmProbe(operation=operation, ok=status == "connected", status=status, latency_ms=latency)
        seen[key] = probe
        out.append(probe)
    return LlmHealth(bank_id=bank_id, operations=out)
