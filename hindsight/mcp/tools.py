"""Every MCP tool, defined once.

A tool is an async function whose first parameter is a `Call` (engine, principal, bank) and whose
other parameters are its MCP arguments. `surfaces.py` turns each into the single-bank form (bank
from the URL) and the multi-bank form (optional `bank_id` argument, else X-Bank-Id header, else
HINDSIGHT_MCP_BANK_ID). `scope="global"` tools (bank management) exist only in multi-bank mode.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..engine.documents import Document, FileIn, ImportAccepted, ImportRequest
from ..engine.errors import InvalidArgument, parse_uuid
from ..engine.keys import Principal
from ..engine.mental_models import (
    MentalModel,
    MentalModelCreate,
    MentalModelOperation,
    MentalModelUpdate,
    check_model_id,
)
from ..engine.models import (
    Bank,
    BankCreate,
    RecallRequest,
    RecallResult,
    RetainItem,
    RetainResult,
    _clean_tags,
)
from ..engine.operations import Operation, Status
from ..engine.rag import AccessResult, DocumentSearchResult, RagSearchResult, parse_caller
from ..engine.reflect import ReflectRequest, ReflectResult
from ..engine.relevance import Mode, SearchOptions
from ..engine.tags import TagsMatch
from ..engine.validation import parse_retain_items, validated


@dataclass
class Call:
    engine: Any
    who: Principal
    bank_id: str
    headers: dict = field(default_factory=dict)
    # where bank_id came from: url, argument, header or default (multi-bank mode, nothing given)
    bank_source: str = "url"


@dataclass
class ToolDef:
    fn: Callable
    name: str
    description: str
    scope: str
    read_only: bool
    destructive: bool
    idempotent: bool
    top_level_result: bool = False
    collection_alias: bool = False


TOOLS: list[ToolDef] = []


def tool(
    *,
    scope: str = "bank",
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    top_level_result: bool = False,
    collection_alias: bool = False,
):
    """Register an MCP tool. scope: "bank" (both surfaces; multi-bank adds `bank_id`) or "global"
    (multi-bank only). collection_alias: the multi-bank form also takes `collection_id`, a synonym
    of `bank_id`, for clients written against the RAG collection tools."""

    def deco(fn: Callable) -> Callable:
        TOOLS.append(
            ToolDef(
                fn,
                fn.__name__,
                inspect.cleandoc(fn.__doc__ or ""),
                scope,
                read_only,
                destructive,
                idempotent,
                top_level_result,
                collection_alias,
            )
        )
        return fn

    return deco


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
    wait: bool = False,
) -> RetainResult:
    """Store information to long-term memory.

    Use it when the user shares personal facts, preferences or interests, mentions events or
    milestones, states decisions, opinions or goals, or discusses work context. `timestamp` is the
    ISO 8601 time the event occurred (relative dates such as "yesterday" are resolved against it);
    `tags` label the memory for filtered recall; retaining the same `document_id` again replaces
    that document's memories. Returns the ids of the stored memory units. With an LLM configured,
    facts are extracted in the background (`operation_id`); `wait=true` returns once they are
    stored, with their ids."""
    item = validated(
        RetainItem,
        content=content,
        context=context,
        timestamp=timestamp,
        tags=tags,
        metadata=metadata,
        document_id=document_id,
    )
    return await call.engine.retain(call.who, call.bank_id, [item], wait=wait)


@tool()
async def retain_batch(call: Call, items: list[dict[str, Any]], wait: bool = False) -> RetainResult:
    """Store many memories in one call (up to the server's batch limit, at least 1,000).

    Each item takes the arguments of `retain`: content (required), context, timestamp, tags,
    metadata, document_id. All items are committed together or not at all. `wait` as in retain."""
    parsed = parse_retain_items(items)
    return await call.engine.retain(call.who, call.bank_id, parsed, wait=wait)


@tool(read_only=True, idempotent=True)
async def recall(
    call: Call,
    query: str,
    max_tokens: int = 4096,
    tags: list[str] | None = None,
    tags_match: TagsMatch = "any",
    types: list[Literal["world", "experience"]] | None = None,
    query_timestamp: str | None = None,
    mode: Mode = "hybrid",
    top_k: int | None = None,
    strictness: int | None = None,
    min_score: float | None = None,
    filter: str | None = None,
) -> RecallResult:
    """Search memories to provide personalized responses.

    Use it at the start of a conversation, before recommendations, and whenever the user refers to
    something they may have said before. Results come in rank order, cut to `max_tokens`; `tags`
    filters by label (`tags_match`: any or all, which also keep untagged memories; any_strict or
    all_strict, which drop them; exact, the same tag set); `types` limits to world facts or experiences;
    `query_timestamp` (ISO 8601) anchors relative times in the query such as "last May".
    `mode`: hybrid (default), vector or keyword; `top_k` (1-50) caps the count; `strictness` (0-5)
    or `min_score` (0-1) drops results below a relevance threshold; `filter` is an expression
    such as `metadata.speaker = "Ann" and tags contains "work"` (fields: type, context, text,
    document_id, tags, entities, created_at, mentioned_at, occurred_start, occurred_end,
    metadata.<key>)."""
    req = validated(
        RecallRequest,
        query=query,
        max_tokens=max_tokens,
        tags=tags,
        tags_match=tags_match,
        types=types,
        query_timestamp=query_timestamp,
        mode=mode,
        top_k=top_k,
        strictness=strictness,
        min_score=min_score,
        filter=filter,
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


@tool(read_only=True)
async def reflect(
    call: Call,
    query: str,
    context: str | None = None,
    budget: Literal["low", "mid", "high"] = "low",
) -> ReflectResult:
    """Generate thoughtful analysis by synthesizing stored memories with the bank's personality.

    Use it when reasoned analysis is needed rather than fact retrieval ("What should I do?",
    patterns across many memories). `context` says why the reflection is needed; `budget` (low,
    mid, high) sets how much memory is searched. Returns the answer and the ids of the memories
    and mental models it is based on; without an LLM configured it returns the most relevant
    memories and says so."""
    req = validated(ReflectRequest, query=query, context=context, budget=budget)
    return await call.engine.reflect(call.who, call.bank_id, req)


class MentalModelList(BaseModel):
    mental_models: list[MentalModel]


class Deleted(BaseModel):
    deleted: bool
    mental_model_id: str


def _model_id(value: Any) -> str:
    return check_model_id(value)


@tool()
async def create_mental_model(
    call: Call,
    name: str,
    source_query: str,
    mental_model_id: str | None = None,
    tags: list[str] | None = None,
    max_tokens: int = 2048,
) -> MentalModelOperation:
    """Create a mental model: a living document that stays current with your memories.

    Mental models are pre-computed reflections of `source_query`, refreshed automatically as new
    memories (matching `tags`, when given) arrive. `mental_model_id` is lowercase letters, digits
    and hyphens (generated from the name when omitted). Content is generated asynchronously; the
    response includes the `operation_id` to track it."""
    req = validated(
        MentalModelCreate,
        name=name,
        source_query=source_query,
        mental_model_id=mental_model_id,
        tags=tags,
        max_tokens=max_tokens,
    )
    return await call.engine.create_mental_model(call.who, call.bank_id, req)


@tool(read_only=True, idempotent=True)
async def list_mental_models(
    call: Call, tags: list[str] | None = None, tags_match: TagsMatch = "any"
) -> MentalModelList:
    """List all mental models in the bank, optionally filtered by their tags (`tags_match`: any
    or all also list untagged models; any_strict, all_strict or exact only tagged ones)."""
    try:
        clean = _clean_tags(tags) if tags is not None else None
    except ValueError as exc:
        raise InvalidArgument(f"tags: {exc}", "tags") from None
    return MentalModelList(
        mental_models=await call.engine.list_mental_models(call.who, call.bank_id, clean, tags_match)
    )


@tool(read_only=True, idempotent=True)
async def get_mental_model(call: Call, mental_model_id: str) -> MentalModel:
    """Retrieve a mental model by id, with its full content, last refresh time and status."""
    return await call.engine.get_mental_model(call.who, call.bank_id, _model_id(mental_model_id))


@tool(idempotent=True)
async def update_mental_model(
    call: Call,
    mental_model_id: str,
    name: str | None = None,
    source_query: str | None = None,
    tags: list[str] | None = None,
    max_tokens: int | None = None,
) -> MentalModel:
    """Update a mental model's name, source query, tags or max tokens. Changing the query, tags or
    size queues a refresh."""
    req = validated(MentalModelUpdate, name=name, source_query=source_query, tags=tags, max_tokens=max_tokens)
    return await call.engine.update_mental_model(call.who, call.bank_id, _model_id(mental_model_id), req)


@tool(destructive=True, idempotent=True)
async def delete_mental_model(call: Call, mental_model_id: str) -> Deleted:
    """Permanently delete a mental model (and its content history)."""
    await call.engine.delete_mental_model(call.who, call.bank_id, _model_id(mental_model_id))
    return Deleted(deleted=True, mental_model_id=mental_model_id)


@tool()
async def refresh_mental_model(call: Call, mental_model_id: str) -> MentalModelOperation:
    """Re-generate a mental model's content from the latest memories. Runs asynchronously; returns
    the `operation_id` (the one already pending, if a refresh is queued or running)."""
    return await call.engine.refresh_mental_model(call.who, call.bank_id, _model_id(mental_model_id))


class OperationList(BaseModel):
    operations: list[Operation]


@tool(read_only=True, idempotent=True)
async def get_operation(call: Call, operation_id: str) -> Operation:
    """Status of an asynchronous operation (fact extraction, mental-model refresh): queued,
    running, succeeded, failed or cancelled, with attempts, error and result."""
    return await call.engine.get_operation(call.who, call.bank_id, operation_id)


@tool(read_only=True, idempotent=True)
async def list_operations(
    call: Call,
    status: Status | None = None,
    type: str | None = None,
    limit: int = Field(50, ge=1, le=500),
) -> OperationList:
    """List the bank's operations, newest first, optionally by status or type."""
    found, _ = await call.engine.list_operations(call.who, call.bank_id, status, type, limit)
    return OperationList(operations=found)


@tool(destructive=True, idempotent=True)
async def cancel_operation(call: Call, operation_id: str) -> Operation:
    """Cancel a queued or running operation; finished ones are returned unchanged."""
    return await call.engine.cancel_operation(call.who, call.bank_id, operation_id)


@tool(collection_alias=True)
async def import_documents(
    call: Call,
    urls: list[str] | None = None,
    files: list[FileIn] | None = None,
    tags: list[str] | None = None,
    allowed_users: list[str] | None = None,
    chunk_size: int | None = None,
    wait: bool = False,
) -> ImportAccepted:
    """Import documents into the bank's knowledge base: public `urls` and/or `files` (each
    {name, text} or {name, content_base64}; TXT, Markdown, HTML, PDF, DOCX). Runs as an operation
    (track it with get_operation; `wait=true` returns when done, with each file's outcome).
    `tags` are access tags (callers need one in common via x-session-tags; none = public);
    `allowed_users` are x-user-id values that may always see them; `chunk_size` (characters)
    overrides the server default. Re-importing unchanged content is a no-op; changed content or a
    new chunk size replaces the document's chunks."""
    req = validated(
        ImportRequest, urls=urls, files=files, tags=tags, allowed_users=allowed_users, chunk_size=chunk_size
    )
    return await call.engine.import_documents(call.who, call.bank_id, req, wait)


class DocumentList(BaseModel):
    documents: list[Document]
    count: int


@tool(read_only=True, idempotent=True, collection_alias=True)
async def list_documents(
    call: Call,
    limit: int = Field(100, ge=1, le=1000),
    offset: int = Field(0, ge=0),
) -> DocumentList:
    """List the documents in the bank's knowledge base (name, type, URL, hash, size, tags, chunk
    count), by name."""
    docs = await call.engine.list_documents(call.who, call.bank_id, limit, offset)
    return DocumentList(documents=docs, count=len(docs))


@tool(read_only=True, idempotent=True, collection_alias=True)
async def get_document(call: Call, doc_id: str) -> Document:
    """One document's record, by the id list_documents or import_documents returned."""
    parse_uuid(doc_id, "doc_id", "a document")
    return await call.engine.get_document(call.who, call.bank_id, doc_id)


class DocumentDeleted(BaseModel):
    deleted: bool
    doc_id: str
    collection_id: str


@tool(destructive=True, idempotent=True, collection_alias=True)
async def delete_document(call: Call, doc_id: str, confirm: bool = False) -> DocumentDeleted:
    """Delete a document and all its chunks. Requires `confirm: true`. In multi-bank mode
    without a bank (argument or X-Bank-Id), the document is found among the banks this key may
    write."""
    if confirm is not True:
        raise InvalidArgument("confirm: deleting a document needs confirm=true", "confirm")
    parse_uuid(doc_id, "doc_id", "a document")
    bank_id = call.bank_id
    if call.bank_source == "default":
        bank_id = await call.engine.find_document_bank(call.who, doc_id) or bank_id
    await call.engine.delete_document(call.who, bank_id, doc_id)
    return DocumentDeleted(deleted=True, doc_id=doc_id, collection_id=bank_id)


@tool(read_only=True, idempotent=True, top_level_result=True)
async def rag_search(
    call: Call,
    search_phrases: list[str] = Field(
        description="1-5 search phrases for semantic retrieval", min_length=1, max_length=5
    ),
    top_k: int = Field(10, ge=1, le=20, description="Segments to return (at most 20)."),
) -> RagSearchResult:
    """Searches the knowledge base for relevant information using semantic search.

    All phrases are embedded together and searched in parallel (semantic and keyword); results
    are merged, deduplicated and reranked. The caller's `x-user-id` and `x-session-tags` headers
    decide which documents may be returned."""
    return await call.engine.rag_search(call.who, call.bank_id, search_phrases, parse_caller(call.headers), top_k)


@tool(read_only=True, idempotent=True)
async def search_documents(
    call: Call,
    query: str,
    mode: Mode = "hybrid",
    top_k: int = 5,
    strictness: int | None = None,
    min_score: float | None = None,
    filter: str | None = None,
) -> DocumentSearchResult:
    """Search the bank's documents (knowledge base) and return matching chunks with citations.

    `mode`: hybrid (semantic + full text, fused; default), vector or keyword. `top_k` 1-50
    (default 5). `strictness` 0-5 (default 1; 0 returns everything) or `min_score` 0-1 drops
    chunks below that relevance. `filter` is an expression over source_type, source_name (alias
    file_path), source_url, document_id, headline, text, tags, page, chunk_index, created_at,
    updated_at, e.g. `source_type = "pdf" and tags contains "manual"` or `file_path like "%guide%"`.
    Each result has content, file_path, chunk_id, score, page_numbers and the arms that found it.
    Access follows the `x-user-id` / `x-session-tags` headers, as in rag_search."""
    opts = validated(SearchOptions, mode=mode, top_k=top_k, strictness=strictness, min_score=min_score, filter=filter)
    return await call.engine.search_documents(call.who, call.bank_id, query, parse_caller(call.headers), opts)


@tool(read_only=True, idempotent=True, top_level_result=True)
async def verify_document_access(call: Call, segment_uid: str) -> AccessResult:
    """Verify that the current user (headers `x-user-id`, `x-session-tags`) may still access the
    document of a segment returned by rag_search, with a refreshed URL when it has one."""
    return await call.engine.verify_document_access(call.who, call.bank_id, segment_uid, parse_caller(call.headers))
