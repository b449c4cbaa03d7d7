"""Reflect: recall sized by budget, the closest mental models, then an answer grounded in them.

The LLM sees each memory and mental model with its id and must cite the ones it used; cited ids
not among those given are dropped, so `based_on` never points at something the model invented.
Offline (no LLM), reflect is extractive: the best memories, and a note saying no LLM is set.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..db.sql import Q
from ..llm import LLMError, Usage
from .models import RecallRequest, _clean_tags, not_blank
from .recall import recall
from .strict import Strict
from .tags import TagsMatch

if TYPE_CHECKING:
    from .runtime import Runtime


# Recall tokens per budget: how much memory the answer may draw on.
BUDGET_TOKENS = {"low": 2048, "mid": 4096, "high": 8192}
MODEL_LIMIT = 3
MODEL_MIN_SIMILARITY = 0.3
OFFLINE_NOTE = "No LLM is configured (offline mode): this answer lists the most relevant memories verbatim."
NO_LLM_STRUCTURED = "structured output needs an LLM, and none is configured (offline mode)"
MAX_SCHEMA_BYTES = 32_768


class ReflectRequest(Strict):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4_000, description="The question or topic to reflect on.")
    context: str | None = Field(None, max_length=4_000, description="Why this reflection is needed.")
    budget: Literal["low", "mid", "high"] = Field(
        "low", description="How much memory is searched: low 2,048, mid 4,096, high 8,192 tokens."
    )
    tags: list[str] | None = Field(None, description="Only memories with these labels (as tags_match says).")
    tags_match: TagsMatch = "any"
    max_tokens: int | None = Field(None, ge=64, le=32_768, description="Longest answer, in tokens (LLM only).")
    response_schema: dict[str, Any] | None = Field(
        None,
        description="A JSON Schema: with an LLM, the answer is also returned as `structured_output` valid against it.",
    )

    _tags = field_validator("tags", mode="before")(_clean_tags)

    @field_validator("response_schema")
    @classmethod
    def _schema(cls, v: dict | None) -> dict | None:
        if v is None:
            return v
        if len(json.dumps(v)) > MAX_SCHEMA_BYTES:
            raise ValueError(f"larger than {MAX_SCHEMA_BYTES // 1024} KiB")
        import jsonschema

        try:
            jsonschema.validators.validator_for(v).check_schema(v)
        except jsonschema.exceptions.SchemaError as exc:
            raise ValueError(f"not a valid JSON Schema: {exc.message}") from None
        return v

    _query = field_validator("query")(lambda v: not_blank(v, "query"))


class BasedOn(BaseModel):
    memories: list[str] = Field(default_factory=list)
    mental_models: list[str] = Field(default_factory=list)


class ReflectResult(BaseModel):
    bank_id: str
    query: str
    answer: str
    based_on: BasedOn
    mode: Literal["llm", "extractive"]
    model: str | None = None
    note: str | None = None
    usage: dict[str, int] | None = None
    structured_output: Any = Field(None, description="The answer as the request's response_schema asks (with an LLM).")
    structured_output_error: str | None = Field(None, description="Why there is no structured_output.")


class ReflectOutput(BaseModel):
    answer: str
    memory_ids: list[str] = Field(default_factory=list)
    mental_model_ids: list[str] = Field(default_factory=list)


STRUCTURED = """TASK: structured_output
Express the answer below as JSON valid against the schema given. Use only what the answer and the
memories say; where the schema allows null and nothing is known, use null.
Reply with the JSON value only."""

SYSTEM = """TASK: reflect
You are the reasoning voice of a memory bank. Answer the question using only the memories and
mental models given; say so when they do not contain the answer. Be direct and specific.
Cite the ids of the memories and mental models you relied on.
Reply with JSON only: {"answer": "...", "memory_ids": ["..."], "mental_model_ids": ["..."]}"""


def empty_bank_reflection(bank_id: str, req: ReflectRequest) -> ReflectResult:
    """Reflect on a bank that was never written: nothing to reason over, so no LLM call (whose
    usage could not be recorded against a bank that does not exist either)."""
    return ReflectResult(
        bank_id=bank_id,
        query=req.query,
        answer="This bank holds no memories yet.",
        based_on=BasedOn(),
        mode="extractive",
        note="The bank has not been written to; retain creates it.",
        structured_output_error="the bank holds no memories yet" if req.response_schema is not None else None,
    )


def _persona(bank: Any) -> str:
    parts = []
    if bank and bank["mission"]:
        parts.append(f"Mission of this bank: {bank['mission']}")
    disposition = json.loads(bank["disposition"]) if bank and bank["disposition"] else {}
    if disposition:
        parts.append("Disposition: " + ", ".join(f"{k}={v}" for k, v in sorted(disposition.items())))
    return "\n".join(parts)


async def reflect(
    rt: Runtime,
    bank_id: str,
    req: ReflectRequest,
    *,
    operation: str = "reflect",
    operation_id=None,
    exclude_model: str | None = None,
    max_answer_tokens: int | None = None,
) -> ReflectResult:
    recalled = await recall(
        rt,
        bank_id,
        RecallRequest(
            query=req.query,
            max_tokens=BUDGET_TOKENS[req.budget],
            tags=req.tags,
            tags_match=req.tags_match,
        ),
    )
    qvec = await asyncio.to_thread(rt.embedder.embed_query, req.query)
    async with rt.pool.acquire() as conn:
        bank = await conn.fetchrow(Q.bank_profile, bank_id)
        models = await conn.fetch(
            Q.mental_models_near,
            bank_id,
            qvec,
            exclude_model,
            MODEL_MIN_SIMILARITY,
            MODEL_LIMIT,
        )
    memories = recalled.results
    if not rt.llm.configured("reflect"):
        top = memories[:10]
        lines = [f"- {m.text}" for m in top] or ["- (no memories match this question)"]
        return ReflectResult(
            bank_id=bank_id,
            query=req.query,
            answer="Most relevant memories:\n" + "\n".join(lines),
            based_on=BasedOn(memories=[m.id for m in top]),
            mode="extractive",
            note=OFFLINE_NOTE,
            structured_output_error=NO_LLM_STRUCTURED if req.response_schema is not None else None,
        )

    body = [f"QUESTION: {req.query}"]
    if req.context:
        body.append(f"WHY IT IS ASKED: {req.context}")
    persona = _persona(bank)
    if persona:
        body.append(persona)
    body.append("MENTAL MODELS:")
    body += [f"[mental_model {r['id']}] {r['name']}: {r['content']}" for r in models] or ["(none)"]
    body.append("MEMORIES:")
    for m in memories:
        when = (
            f" ({m.occurred_start.date()})"
            if m.occurred_start
            else (f" (said {m.mentioned_at.date()})" if m.mentioned_at else "")
        )
        body.append(f"[memory {m.id}] {m.text}{when}")
    usage = Usage()
    out = await rt.llm.json(
        "reflect",
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(body)}],
        ReflectOutput,
        bank_id=bank_id,
        operation=operation,
        operation_id=operation_id,
        max_tokens=max_answer_tokens or req.max_tokens,
        usage=usage,
    )
    known_m = {m.id for m in memories}
    known_mm = {r["id"] for r in models}
    result = ReflectResult(
        bank_id=bank_id,
        query=req.query,
        answer=out.answer.strip(),
        mode="llm",
        model=rt.llm.model_name("reflect"),
        based_on=BasedOn(
            memories=[i for i in dict.fromkeys(out.memory_ids) if i in known_m],
            mental_models=[i for i in dict.fromkeys(out.mental_model_ids) if i in known_mm],
        ),
    )
    if req.response_schema is not None:
        prompt = "\n".join(
            [
                f"QUESTION: {req.query}",
                f"ANSWER: {result.answer}",
                f"SCHEMA: {json.dumps(req.response_schema)}",
                *body[body.index("MEMORIES:") :],
            ]
        )
        try:
            result.structured_output = await rt.llm.json_schema(
                "reflect",
                [{"role": "system", "content": STRUCTURED}, {"role": "user", "content": prompt}],
                "response",
                req.response_schema,
                bank_id=bank_id,
                operation=operation,
                operation_id=operation_id,
                usage=usage,
            )
        except LLMError as exc:
            result.structured_output_error = str(exc)
    result.usage = {
        "calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
    }
    return result
