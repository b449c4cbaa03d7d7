"""Reflect: recall sized by budget, the closest mental models, then an answer grounded in them.

The LLM sees each memory and mental model with its id and must cite the ones it used; cited ids
not among those given are dropped, so `based_on` never points at something the model invented.
Offline (no LLM), reflect is extractive: the best memories, and a note saying no LLM is set.

The LLM's answer is checked before it is used: not empty, and at most the caller's `max_tokens`
(a mental model's, on a refresh) or MAX_ANSWER_TOKENS, estimated as the engine estimates tokens
(text.estimate_tokens); an answer that fails is re-asked with the reason (llm/client.py). A
caller's bound is also said in the prompt (ANSWER LENGTH) and given to the provider as its
max_tokens (plus the JSON's overhead), so that a model that follows instructions meets it. When
the LLM fails for good, reflect raises LLMUnavailable naming the cause, or, when the caller
allows it (`on_llm_failure: "extractive"`, or HINDSIGHT_API_REFLECT_ON_LLM_FAILURE), answers as
offline mode would, marked as such (`mode: "extractive"`, `llm_error`). A refresh never falls
back: it fails and the model keeps its content.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from hindsight.db.sql import Q
from hindsight.engine.directives.schemas import AppliedDirective
from hindsight.engine.directives.store import directives_for
from hindsight.engine.errors import LLMUnavailable
from hindsight.engine.rules.fields import clean_tags, not_blank
from hindsight.engine.rules.tags import TagsMatch
from hindsight.engine.rules.text import Strict
from hindsight.engine.search.recall import recall
from hindsight.engine.search.schemas import RecallRequest
from hindsight.llm import Cause, LLMError, Rejected, Usage
from hindsight.text import estimate_tokens

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


# Recall tokens per budget: how much memory the answer may draw on.
BUDGET_TOKENS = {"low": 2048, "mid": 4096, "high": 8192}
MODEL_LIMIT = 3
MODEL_MIN_SIMILARITY = 0.3
EXTRACTIVE_HEAD = "Most relevant memories:\n"
OFFLINE_NOTE = "No LLM is configured (offline mode): this answer lists the most relevant memories verbatim."
NO_LLM_STRUCTURED = "structured output needs an LLM, and none is configured (offline mode)"
FAILED_NOTE = "The LLM failed ({cause}): this answer lists the most relevant memories verbatim."
FAILED_STRUCTURED = "structured output needs the LLM, which failed"
MAX_SCHEMA_BYTES = 32_768
# Values in a response_schema (objects, arrays and scalars): jsonschema checks a schema against its
# metaschema in pure Python during request validation, at a cost per value, so a bound on values
# bounds that time. A schema with 100 typed and described properties has ~300, a Pydantic model
# of 56 optional described fields ~540.
MAX_SCHEMA_VALUES = 1_000
# The longest answer taken from the LLM when the request sets no max_tokens: the largest it may set.
MAX_ANSWER_TOKENS = 32_768
# Tokens the reply's JSON adds to the answer (keys, cited ids): the provider's max_tokens is the
# answer's bound plus this, so that an answer at its bound is not cut off mid-JSON.
JSON_OVERHEAD_TOKENS = 256
OnLLMFailure = Literal["error", "extractive"]
WHAT = {"mental_model": "mental-model refresh"}  # an operation's name in an error message
LENGTH_LINE = "ANSWER LENGTH:"


def _values(schema: Any) -> int:
    """The JSON values in `schema`, counted without recursion (it may nest deeply)."""
    count, stack = 0, [schema]
    while stack:
        v = stack.pop()
        count += 1
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return count


# Keywords whose value maps names to schemas, and keywords whose value is data, not schemas.
_NAMED_SCHEMAS = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})
_DATA = frozenset({"enum", "const", "default", "examples", "description", "title", "$comment"})


def _regex_keyword(schema: Any, path: str = "") -> str | None:
    """Where `schema` asks for a regular expression (pattern, patternProperties), or None.

    jsonschema runs them with Python's re, on the event loop, over the LLM's answer, which the
    caller can steer: `^(a+)+$` against 40 characters of a's and a b backtracks for hours and
    holds every request (re holds the GIL, so no thread would help)."""
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            if (found := _regex_keyword(item, f"{path}.{i}" if path else str(i))) is not None:
                return found
        return None
    if not isinstance(schema, dict):
        return None
    for key, value in schema.items():
        here = f"{path}.{key}" if path else key
        if key == "patternProperties" or (key == "pattern" and isinstance(value, str)):
            return here
        if key in _DATA:
            continue
        if key in _NAMED_SCHEMAS and isinstance(value, dict):
            for name, sub in value.items():
                if (found := _regex_keyword(sub, f"{here}.{name}")) is not None:
                    return found
        elif (found := _regex_keyword(value, here)) is not None:
            return found
    return None


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
    on_llm_failure: OnLLMFailure | None = Field(
        None,
        description="When the LLM fails: `error` (an llm_unavailable error naming the cause) or `extractive` (the "
        "most relevant memories verbatim, with `mode: extractive` and `llm_error`); default: the server's "
        "HINDSIGHT_API_REFLECT_ON_LLM_FAILURE.",
    )

    _tags = field_validator("tags", mode="before")(clean_tags)

    @field_validator("response_schema")
    @classmethod
    def _schema(cls, v: dict | None) -> dict | None:
        if v is None:
            return v
        if len(json.dumps(v)) > MAX_SCHEMA_BYTES:
            raise ValueError(f"larger than {MAX_SCHEMA_BYTES // 1024} KiB")
        if _values(v) > MAX_SCHEMA_VALUES:
            raise ValueError(f"more than {MAX_SCHEMA_VALUES} values (objects, arrays and scalars)")
        if (where := _regex_keyword(v)) is not None:
            raise ValueError(
                f"{where}: regular expressions (pattern, patternProperties) are not supported; the server "
                "would run them over the LLM's answer"
            )
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


class LLMFailure(BaseModel):
    cause: Cause = Field(description="How the LLM failed.")
    message: str


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
    llm_error: LLMFailure | None = Field(
        None, description="The LLM failed and, as on_llm_failure allowed, this answer is extractive instead."
    )
    directives: list[str] = Field(
        default_factory=list, description="Ids of the bank's directives the LLM was given to follow (LLM only)."
    )
    # The memories and mental models the answer was written from sight of (all those put before
    # the LLM, not only those it cited): a mental model's refresh is not kept when one of them was
    # forgotten meanwhile (engine/reflection/mental_models.py). Not part of the response.
    _shown: list[str] = PrivateAttr(default_factory=list)
    _shown_models: list[str] = PrivateAttr(default_factory=list)


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

DIRECTIVES_HEAD = """DIRECTIVES: the bank owner's standing instructions. Follow every one in your answer, whatever
the memories say; when two conflict, the one listed first wins. Do not mention them."""
DIRECTIVES_REMINDER = "REMINDER: the answer must follow the DIRECTIVES given above."


def system_prompt(directives: list[AppliedDirective]) -> str:
    """reflect's system message, with the directives it applies, highest priority first."""
    if not directives:
        return SYSTEM
    rules = [f"- {d.name}: {d.content}" for d in directives]
    return "\n".join([SYSTEM, "", DIRECTIVES_HEAD, *rules])


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
    # Reading the bank takes one of its lanes, as a recall does (banks/gates.py); the LLM's
    # answer is waited for without one.
    async with rt.gates.reading(bank_id):
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
        qvec = await rt.embedder.query(req.query)
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
            directives = await directives_for(conn, bank_id, req.tags, req.tags_match)
    memories = recalled.results
    limit = max_answer_tokens or req.max_tokens or MAX_ANSWER_TOKENS
    if not rt.llm.configured("reflect"):
        return _extractive(bank_id, req, memories, limit, OFFLINE_NOTE, NO_LLM_STRUCTURED)

    body = [f"QUESTION: {req.query}"]
    if req.context:
        body.append(f"WHY IT IS ASKED: {req.context}")
    persona = _persona(bank)
    if persona:
        body.append(persona)
    if max_answer_tokens or req.max_tokens:  # asked for, so that a longer answer is the LLM's fault
        body.append(f"{LENGTH_LINE} at most {limit} tokens (about {limit * 3 // 4} words).")
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
    if directives:
        body.append(DIRECTIVES_REMINDER)
    usage = Usage()

    def check(out: ReflectOutput) -> None:
        if not out.answer.strip():
            raise Rejected("empty", "its `answer` is blank")
        if (n := estimate_tokens(out.answer)) > limit:
            raise Rejected("too_long", f"its answer is about {n} tokens; the limit is {limit}")

    try:
        out = await rt.llm.json(
            "reflect",
            [{"role": "system", "content": system_prompt(directives)}, {"role": "user", "content": "\n".join(body)}],
            ReflectOutput,
            bank_id=bank_id,
            operation=operation,
            operation_id=operation_id,
            max_tokens=limit + JSON_OVERHEAD_TOKENS if (max_answer_tokens or req.max_tokens) else None,
            check=check,
            usage=usage,
        )
    except LLMError as exc:
        fallback = req.on_llm_failure or rt.settings.reflect_on_llm_failure
        if fallback != "extractive":
            raise LLMUnavailable.of(exc, WHAT.get(operation, operation)) from None
        note = FAILED_NOTE.format(cause=exc.cause)
        result = _extractive(bank_id, req, memories, limit, note, FAILED_STRUCTURED)
        result.llm_error = LLMFailure(cause=exc.cause, message=exc.message)
        result.usage = _usage(usage)
        return result
    known_m = {m.id for m in memories}
    known_mm = {r["id"] for r in models}
    result = ReflectResult(
        bank_id=bank_id,
        query=req.query,
        answer=out.answer.strip(),
        mode="llm",
        model=rt.llm.model_name("reflect"),
        directives=[d.directive_id for d in directives],
        based_on=BasedOn(
            memories=[i for i in dict.fromkeys(out.memory_ids) if i in known_m],
            mental_models=[i for i in dict.fromkeys(out.mental_model_ids) if i in known_mm],
        ),
    )
    result._shown = list(known_m)
    result._shown_models = list(known_mm)
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
    result.usage = _usage(usage)
    return result


def _usage(usage: Usage) -> dict[str, int]:
    return {"calls": usage.calls, "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}


def _extractive(bank_id: str, req: ReflectRequest, memories: list, limit: int, note: str, why_no_structured: str):
    """The answer without an LLM (offline, or the LLM failed): the most relevant memories
    verbatim, as many of the top ten as fit in `limit` tokens (a mental model's content is never
    longer than its max_tokens, whoever wrote it)."""
    lines: list[str] = []
    used = []
    budget = limit * 4 - len(EXTRACTIVE_HEAD)  # text.estimate_tokens: four characters a token
    for m in memories[:10]:
        line = f"- {m.text}"
        if len(line) + 1 > budget:
            if not lines:  # the best memory alone is too long: its beginning
                lines.append(line[: max(0, budget - 2)].rstrip() + " …")
                used.append(m.id)
            break
        lines.append(line)
        used.append(m.id)
        budget -= len(line) + 1
    result = ReflectResult(
        bank_id=bank_id,
        query=req.query,
        answer=EXTRACTIVE_HEAD + "\n".join(lines or ["- (no memories match this question)"]),
        based_on=BasedOn(memories=used),
        mode="extractive",
        note=note,
        structured_output_error=why_no_structured if req.response_schema is not None else None,
    )
    result._shown = used
    return result
