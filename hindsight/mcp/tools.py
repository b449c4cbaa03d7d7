"""Every MCP tool, defined once.

A tool is an async function whose first parameter is a `Call` (engine, principal, bank) and whose
other parameters are its MCP arguments. `surfaces.py` turns each into the single-bank form (bank
from the URL) and the multi-bank form (optional `bank_id` argument, else X-Bank-Id header, else
HINDSIGHT_MCP_BANK_ID). `scope="global"` tools (bank management) exist only in multi-bank mode.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Literal

from pydantic import BaseModel, Field, ValidationError

from ..engine.errors import InvalidArgument
from ..engine.validation import describe_validation, parse_retain_items
from ..engine.keys import Principal
from ..engine.models import (
    Bank, BankCreate, RecallRequest, RecallResult, RetainItem, RetainResult,
)


@dataclass
class Call:
    engine: Any
    who: Principal
    bank_id: str


@dataclass
class ToolDef:
    fn: Callable
    name: str
    description: str
    scope: str
    read_only: bool
    destructive: bool
    idempotent: bool


TOOLS: list[ToolDef] = []


def tool(*, scope: str = "bank", read_only: bool = False, destructive: bool = False, idempotent: bool = False):
    def deco(fn: Callable) -> Callable:
        TOOLS.append(ToolDef(fn, fn.__name__, inspect.cleandoc(fn.__doc__ or ""), scope, read_only, destructive, idempotent))
        return fn

    return deco


def validated(model: type[BaseModel], prefix: str = "", **values: Any):
    """Build an engine model, turning validation failures into an error that names the argument."""
    try:
        return model(**{k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        raise InvalidArgument(describe_validation(exc, prefix)) from None


class BankList(BaseModel):
    banks: list[Bank]


class BankCreated(BaseModel):
    bank: Bank
    created: bool = Field(description="False when the bank already existed (returned unchanged).")


@tool()
async def retain(
    call: Call,
    content: str,
    context: str = "general",
    timestamp: str | None = None,
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    document_id: str | None = None,
) -> RetainResult:
    """Store information to long-term memory.

    Use it when the user shares personal facts, preferences or interests, mentions events or
    milestones, states decisions, opinions or goals, or discusses work context. `timestamp` is the
    ISO 8601 time the event occurred (relative dates such as "yesterday" are resolved against it);
    `tags` label the memory for filtered recall; retaining the same `document_id` again replaces
    that document's memories. Returns the ids of the stored memory units."""
    item = validated(
        RetainItem, content=content, context=context, timestamp=timestamp, tags=tags,
        metadata=metadata, document_id=document_id,
    )
    return await call.engine.retain(call.who, call.bank_id, [item])


@tool()
async def retain_batch(call: Call, items: list[dict[str, Any]]) -> RetainResult:
    """Store many memories in one call (up to the server's batch limit, at least 1,000).

    Each item takes the arguments of `retain`: content (required), context, timestamp, tags,
    metadata, document_id. All items are committed together or not at all."""
    parsed = parse_retain_items(items)
    return await call.engine.retain(call.who, call.bank_id, parsed)


@tool(read_only=True, idempotent=True)
async def recall(
    call: Call,
    query: str,
    max_tokens: int = 4096,
    tags: list[str] | None = None,
    tags_match: Literal["any", "all"] = "any",
    types: list[Literal["world", "experience"]] | None = None,
    query_timestamp: str | None = None,
) -> RecallResult:
    """Search memories to provide personalized responses.

    Use it at the start of a conversation, before recommendations, and whenever the user refers to
    something they may have said before. Results come in rank order, cut to `max_tokens`; `tags`
    filters by label (`tags_match`: any or all); `types` limits to world facts or experiences;
    `query_timestamp` (ISO 8601) anchors relative times in the query such as "last May"."""
    req = validated(
        RecallRequest, query=query, max_tokens=max_tokens, tags=tags, tags_match=tags_match,
        types=types, query_timestamp=query_timestamp,
    )
    return await call.engine.recall(call.who, call.bank_id, req)


@tool(scope="global", read_only=True, idempotent=True)
async def list_banks(call: Call) -> BankList:
    """List all available memory banks (those this API key may access)."""
    return BankList(banks=await call.engine.list_banks(call.who))


@tool(scope="global", idempotent=True)
async def create_bank(call: Call, bank_id: str, name: str | None = None, mission: str | None = None) -> BankCreated:
    """Create a new memory bank or retrieve an existing one.

    `mission` describes who the agent is and what it is trying to accomplish."""
    req = validated(BankCreate, bank_id=bank_id, name=name, mission=mission)
    bank, created = await call.engine.create_bank(call.who, req)
    return BankCreated(bank=bank, created=created)
