"""Every LLM call goes through here: litellm, a concurrency limit, retries with backoff, JSON
output validated against a pydantic model (repaired or re-asked, never silently dropped), and the
tokens and cost of each call recorded per bank and operation.

litellm is imported on first use only: it costs seconds and ~150 MB, which offline servers
should not pay.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..db.sql import Q
from ..metrics import LLM_CALLS, LLM_COST, LLM_SECONDS, LLM_TOKENS

log = logging.getLogger("hindsight.llm")
M = TypeVar("M", bound=BaseModel)


class LLMError(Exception):
    """The LLM could not produce a usable answer after the configured retries."""


@dataclass
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def _litellm():
    # Never fetch the model price map from the internet at import; use the bundled copy.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.drop_params = True  # providers without response_format still answer
    # Its loggers come with a handler of their own (its format, INFO on stdout, where `hindsight
    # mcp` speaks the protocol): without it their records reach ours (hindsight/logs.py).
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).setLevel(logging.WARNING)
    return litellm


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def loads_object(text: str) -> Any:
    """The JSON in an answer, with light repair (code fences, prose around the object)."""
    text = (text or "").strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    cleaned = _FENCE.sub("", text).strip()
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start != -1 and end > start:
        cleaned = cleaned[start : end + 1]
    return json.loads(cleaned)


class LLM:
    def __init__(self, settings, pool):
        self.settings = settings
        self.pool = pool
        self.slots = asyncio.Semaphore(settings.llm_max_concurrent)
        self._lib = None

    def configured(self, purpose: str) -> bool:
        return self.settings.llm_for(purpose) is not None

    @property
    def enabled(self) -> bool:
        """Any LLM at all (retain or reflect); false means offline mode."""
        return self.configured("retain") or self.configured("reflect")

    def model_name(self, purpose: str) -> str | None:
        cfg = self.settings.llm_for(purpose)
        return cfg[0] if cfg else None

    async def warm(self) -> None:
        """Import litellm at start-up (in a thread) rather than on the first request."""
        if self.enabled:
            self._lib = await asyncio.to_thread(_litellm)

    async def json(
        self,
        purpose: str,
        messages: list[dict],
        schema: type[M],
        *,
        bank_id: str | None,
        operation: str,
        operation_id=None,
        max_tokens: int | None = None,
        check=None,
        usage: Usage | None = None,
    ) -> M:
        """Ask for JSON matching `schema`; `check(parsed)` may raise ValueError for answers that
        parse but are wrong (e.g. an unknown item index): both are re-asked with the error."""

        def parse(text: str) -> M:
            parsed = schema.model_validate(loads_object(text))
            if check is not None:
                check(parsed)
            return parsed

        return await self._ask(
            purpose,
            messages,
            schema.__name__,
            schema.model_json_schema(),
            parse,
            bank_id=bank_id,
            operation=operation,
            operation_id=operation_id,
            max_tokens=max_tokens,
            usage=usage,
        )

    async def json_schema(
        self,
        purpose: str,
        messages: list[dict],
        name: str,
        schema: dict,
        *,
        bank_id: str | None,
        operation: str,
        operation_id=None,
        max_tokens: int | None = None,
        usage: Usage | None = None,
    ) -> Any:
        """Ask for JSON valid against a caller's JSON Schema (reflect's `response_schema`)."""
        import jsonschema

        validator = jsonschema.validators.validator_for(schema)(schema)

        def parse(text: str) -> Any:
            value = loads_object(text)
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path) or "the top level"
                raise ValueError(f"at {where}: {error.message}")
            return value

        return await self._ask(
            purpose,
            messages,
            name,
            schema,
            parse,
            bank_id=bank_id,
            operation=operation,
            operation_id=operation_id,
            max_tokens=max_tokens,
            usage=usage,
        )

    async def _ask(
        self,
        purpose: str,
        messages: list[dict],
        name: str,
        schema: dict,
        parse,
        *,
        bank_id: str | None,
        operation: str,
        operation_id,
        max_tokens: int | None,
        usage: Usage | None,
    ) -> Any:
        """The one retry loop: provider errors are retried with backoff, answers `parse` rejects
        (ValueError, pydantic's ValidationError) are re-asked with the reason."""
        model, api_key, base_url = self.settings.llm_for(purpose)
        lib = self._lib or await asyncio.to_thread(_litellm)
        self._lib = lib
        base = list(messages)
        response_format = {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
        last_error = "no attempt made"
        for attempt in range(self.settings.llm_max_retries + 1):
            if attempt:
                await asyncio.sleep(min(20.0, 0.5 * 2 ** (attempt - 1)) * (0.5 + random.random()))
            try:
                async with self.slots:
                    with LLM_SECONDS.labels(operation).time():
                        resp = await lib.acompletion(
                            model=model,
                            messages=messages,
                            api_key=api_key,
                            api_base=base_url,
                            response_format=response_format,
                            timeout=self.settings.llm_timeout,
                            max_tokens=max_tokens,
                            num_retries=0,
                            temperature=0,
                        )
            except Exception as exc:  # provider errors, timeouts, connection failures
                last_error = f"{type(exc).__name__}: {str(exc)[:300]}"
                log.warning("LLM call failed (attempt %d): %s", attempt + 1, last_error)
                LLM_CALLS.labels(operation, model, "error").inc()
                continue
            await self._record(lib, resp, model, bank_id, operation, operation_id, usage)
            text = resp.choices[0].message.content or ""
            try:
                parsed = parse(text)
                LLM_CALLS.labels(operation, model, "ok").inc()
                return parsed
            except (ValueError, ValidationError) as exc:
                LLM_CALLS.labels(operation, model, "rejected").inc()
                last_error = f"malformed output: {str(exc)[:300]}"
                log.warning("LLM output rejected (attempt %d): %s", attempt + 1, last_error)
                messages = base + [
                    {"role": "assistant", "content": text[:4000]},
                    {
                        "role": "user",
                        "content": f"That answer was rejected: {str(exc)[:500]}. "
                        "Reply with only a JSON object that follows the schema.",
                    },
                ]
        raise LLMError(f"{model}: no usable answer after {self.settings.llm_max_retries + 1} attempts ({last_error})")

    async def _record(self, lib, resp, model, bank_id, operation, operation_id, usage: Usage | None) -> None:
        u = getattr(resp, "usage", None)
        prompt = int(getattr(u, "prompt_tokens", 0) or 0)
        completion = int(getattr(u, "completion_tokens", 0) or 0)
        try:
            cost = float(lib.completion_cost(completion_response=resp))
        except Exception:  # models without a known price (local, self-hosted)
            cost = None
        if usage is not None:
            usage.calls += 1
            usage.prompt_tokens += prompt
            usage.completion_tokens += completion
        LLM_TOKENS.labels(operation, model, "prompt").inc(prompt)
        LLM_TOKENS.labels(operation, model, "completion").inc(completion)
        if cost:
            LLM_COST.labels(operation, model).inc(cost)
        async with self.pool.acquire() as conn:
            await conn.execute(
                Q.usage_record,
                bank_id,
                operation,
                operation_id,
                model,
                prompt,
                completion,
                cost,
            )
