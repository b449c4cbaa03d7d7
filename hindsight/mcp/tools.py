"""Every MCP tool, defined once, as an engine operation's contract.

A tool names its request model (the engine's, which holds every default and limit) and is an
async function `(call, req) -> response model`. `surfaces.py` generates the MCP arguments from the
request model's fields and validates them once, with the model; the single-bank form takes the
bank from the URL, the multi-bank form from an optional `bank_id` argument, else the X-Bank-Id
header, else HINDSIGHT_MCP_BANK_ID. `scope="global"` tools (bank management and the collection
aliases) exist only in multi-bank mode.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from hindsight.engine.access.keys import Principal
from hindsight.engine.banks.schemas import Bank, BankCounts, BankCreate, BankCreated, BankDeleted, BankList
from hindsight.engine.banks.settings import BankSettingsChange
from hindsight.engine.directives.schemas import (
    Directive,
    DirectiveChange,
    DirectiveCreate,
    DirectiveDeleted,
    DirectiveList,
    DirectiveQuery,
    DirectiveRef,
)
from hindsight.engine.errors import InvalidArgument
from hindsight.engine.forgetting.schemas import (
    ClearMemories,
    ForgetEntity,
    ForgetMemory,
    ForgetMemoryResult,
    ForgetRetainedDocument,
    Forgotten,
    PurgeMemories,
)
from hindsight.engine.knowledge.documents import (
    Document,
    DocumentDelete,
    DocumentDeleted,
    DocumentList,
    DocumentListQuery,
    DocumentRef,
    ImportAccepted,
    ImportDocumentsRequest,
)
from hindsight.engine.knowledge.pages import (
    FolderCreate,
    KnowledgeNode,
    KnowledgePage,
    KnowledgeSearch,
    KnowledgeTree,
    NodeChange,
    NodeDeleted,
    NodeRef,
    PageCreate,
    PageCreated,
    PageHits,
    PageRef,
)
from hindsight.engine.knowledge.rag import (
    AccessRequest,
    AccessResult,
    DocumentSearchRequest,
    DocumentSearchResult,
    EndUser,
    RagSearchRequest,
    RagSearchResult,
)
from hindsight.engine.memory.curation import MemoryChange, MemoryInvalidate, MemoryUpdated
from hindsight.engine.memory.records import MemoryList, MemoryQuery, MemoryRef
from hindsight.engine.memory.schemas import Memory, RetainBatchRequest, RetainItem, RetainRequest, RetainResult
from hindsight.engine.memory.tags import TagList, TagQuery
from hindsight.engine.queue.schemas import Operation, OperationList, OperationQuery, OperationRef
from hindsight.engine.reflection.mental_models import (
    MentalModel,
    MentalModelChange,
    MentalModelCreate,
    MentalModelDeleted,
    MentalModelList,
    MentalModelOperation,
    MentalModelQuery,
    MentalModelRef,
)
from hindsight.engine.reflection.reflect import ReflectRequest, ReflectResult
from hindsight.engine.search.schemas import RecallRequest, RecallResult
from hindsight.web.audit import AuditNote
from hindsight.web.end_user import end_user

if TYPE_CHECKING:
    from hindsight.engine.facade import Engine


@dataclass
class Call:
    """Who is calling, on which bank: what a tool needs besides its arguments."""

    engine: Engine
    who: Principal
    bank_id: str
    headers: dict = field(default_factory=dict)
    # where bank_id came from: url, argument, alias (collection_id), header or default
    bank_source: str = "url"
    # the call's audit note (web/audit.py): a tool that finds its bank itself names it there
    audit: AuditNote | None = None

    @property
    def end_user(self) -> EndUser:
        """The end user a RAG client acts for (x-user-id, x-session-tags), for document access."""
        return end_user(self.headers)


@dataclass(frozen=True)
class ToolDef:
    fn: Callable
    name: str
    description: str
    request: type[BaseModel] | None
    response: Any
    scope: str
    read_only: bool
    destructive: bool
    idempotent: bool
    top_level_result: bool = False
    collection_alias: bool = False
    bank_argument: str | None = None
    lean_result: bool = False


def toolbox(into: list[ToolDef]) -> Callable[..., Callable[[Callable], Callable]]:
    """A `tool` decorator declaring tools into `into`: each module of tools has its own list, and
    mcp/catalog.py puts them together (no module adds to another's list by being imported)."""

    def tool(
        request: type[BaseModel] | None = None,
        *,
        scope: str = "bank",
        read_only: bool = False,
        destructive: bool = False,
        idempotent: bool = False,
        top_level_result: bool = False,
        collection_alias: bool = False,
        bank_argument: str | None = None,
        lean_result: bool = False,
    ):
        """Register an MCP tool whose arguments are `request`'s fields. scope: "bank" (both
        surfaces; multi-bank adds `bank_id`) or "global" (multi-bank only). collection_alias: the
        multi-bank form also takes `collection_id`, a synonym of `bank_id`, for clients written
        against the RAG collection tools. bank_argument: a global tool whose request names its bank
        in that field (the collection tools), checked like any other bank. top_level_result: the
        result's fields are also put at the top of the JSON-RPC result, where RAG clients read them.
        lean_result: the result leaves out null fields and its text is compact JSON (surfaces.lean),
        for a result of many memories that an agent reads whole."""

        def deco(fn: Callable) -> Callable:
            into.append(
                ToolDef(
                    fn,
                    fn.__name__,
                    inspect.cleandoc(fn.__doc__ or ""),
                    request,
                    typing.get_type_hints(fn)["return"],
                    scope,
                    read_only,
                    destructive,
                    idempotent,
                    top_level_result,
                    collection_alias,
                    bank_argument,
                    lean_result,
                )
            )
            return fn

        return deco

    return tool


TOOLS: list[ToolDef] = []
tool = toolbox(TOOLS)


@tool(RetainRequest)
async def retain(call: Call, req: RetainRequest) -> RetainResult:
    """Store information to long-term memory.

    Use it when the user shares personal facts, preferences or interests, mentions events or
    milestones, states decisions, opinions or goals, or discusses work context. `timestamp` is the
    ISO 8601 time the event occurred (relative dates such as "yesterday" are resolved against it);
    `tags` label the memory for filtered recall; retaining the same `document_id` again replaces
    that document's memories. Returns the ids of the stored memory units. With an LLM configured,
    facts are extracted in the background (`operation_id`); `wait=true` returns once they are
    stored, with their ids."""
    return await call.engine.retain(call.who, call.bank_id, [req.item()], wait=req.wait)


@tool(RetainBatchRequest)
async def retain_batch(call: Call, req: RetainBatchRequest) -> RetainResult:
    """Store many memories in one call (up to the server's batch limit, at least 1,000).

    Each item takes the arguments of `retain`: content (required), context, timestamp, tags,
    metadata, document_id, entities. All items are committed together or not at all. `wait` as in
    retain."""
    return await call.engine.retain(call.who, call.bank_id, req.items, wait=req.wait)


@tool(RetainItem)
async def sync_retain(call: Call, req: RetainItem) -> RetainResult:
    """Store information to long-term memory and wait until it is stored (retain with `wait=true`).

    Takes the arguments of `retain`. Returns once the memory can be recalled; with an LLM
    configured, once its facts are extracted (up to the server's wait limit), with their ids."""
    return await call.engine.retain(call.who, call.bank_id, [req], wait=True)


@tool(RecallRequest, read_only=True, idempotent=True, lean_result=True)
async def recall(call: Call, req: RecallRequest) -> RecallResult:
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
    metadata.<key>). `trace: true` adds why each result came back: its score from each arm
    (semantic, keyword, time), the context it gained and the score it is ranked by."""
    return await call.engine.recall(call.who, call.bank_id, req)


@tool(scope="global", read_only=True, idempotent=True)
async def list_banks(call: Call, req: None) -> BankList:
    """List all available memory banks (those this API key may access)."""
    return await call.engine.list_banks(call.who)


@tool(BankCreate, scope="global", idempotent=True)
async def create_bank(call: Call, req: BankCreate) -> BankCreated:
    """Create a new memory bank or retrieve an existing one.

    `mission` describes who the agent is and what it is trying to accomplish."""
    return await call.engine.create_bank(call.who, req)


@tool(read_only=True, idempotent=True)
async def get_bank(call: Call, req: None) -> Bank:
    """The bank's profile: name, mission, disposition, settings kept for it, and what it holds
    (memories, entities, documents, last write)."""
    return await call.engine.get_bank(call.who, call.bank_id)


@tool(read_only=True, idempotent=True)
async def get_bank_stats(call: Call, req: None) -> BankCounts:
    """What the bank holds, counted: memories by type, links by kind, documents, operations by
    status, and when a memory was last written."""
    return await call.engine.count_bank(call.who, call.bank_id)


@tool(BankSettingsChange, idempotent=True)
async def update_bank(call: Call, req: BankSettingsChange) -> Bank:
    """Update the bank's name, mission or settings; what is not given stays.

    `config_updates` takes settings by Hindsight's names: `reflect_mission` (the mission) and
    `disposition_skepticism`, `disposition_literalism`, `disposition_empathy` (1-5) change how
    reflect answers; other names are kept for the bank and reported as not applied (this server
    has no such setting); null removes one."""
    return await call.engine.configure_bank(call.who, call.bank_id, req)


@tool(destructive=True, idempotent=True)
async def delete_bank(call: Call, req: None) -> BankDeleted:
    """Permanently delete the bank and everything in it (memories, documents, mental models,
    operations). Needs an admin key. In multi-bank mode the bank must be named (`bank_id` or the
    X-Bank-Id header): the server's default bank is never deleted by omission."""
    if call.bank_source == "default":
        raise InvalidArgument(
            "bank_id: name the bank to delete (the argument or the X-Bank-Id header); "
            "the server's default bank is not deleted by omission",
            "bank_id",
        )
    return await call.engine.delete_bank(call.who, call.bank_id)


@tool(ReflectRequest, read_only=True)
async def reflect(call: Call, req: ReflectRequest) -> ReflectResult:
    """Generate thoughtful analysis by synthesizing stored memories with the bank's personality.

    Use it when reasoned analysis is needed rather than fact retrieval ("What should I do?",
    patterns across many memories). `context` says why the reflection is needed; `budget` (low,
    mid, high) sets how much memory is searched. Returns the answer and the ids of the memories
    and mental models it is based on; without an LLM configured it returns the most relevant
    memories and says so."""
    return await call.engine.reflect(call.who, call.bank_id, req)


@tool(MentalModelCreate)
async def create_mental_model(call: Call, req: MentalModelCreate) -> MentalModelOperation:
    """Create a mental model: a living document that stays current with your memories.

    Mental models are pre-computed reflections of `source_query`, refreshed automatically as new
    memories (matching `tags`, when given) arrive. `mental_model_id` is lowercase letters, digits
    and hyphens (generated from the name when omitted). Content is generated asynchronously; the
    response includes the `operation_id` to track it."""
    return await call.engine.create_mental_model(call.who, call.bank_id, req)


@tool(MentalModelQuery, read_only=True, idempotent=True)
async def list_mental_models(call: Call, req: MentalModelQuery) -> MentalModelList:
    """List all mental models in the bank, optionally filtered by their tags (`tags_match`: any
    or all also list untagged models; any_strict, all_strict or exact only tagged ones)."""
    return await call.engine.list_mental_models(call.who, call.bank_id, req)


@tool(MentalModelRef, read_only=True, idempotent=True)
async def get_mental_model(call: Call, req: MentalModelRef) -> MentalModel:
    """Retrieve a mental model by id, with its full content, last refresh time and status."""
    return await call.engine.get_mental_model(call.who, call.bank_id, req.mental_model_id)


@tool(MentalModelChange, idempotent=True)
async def update_mental_model(call: Call, req: MentalModelChange) -> MentalModel:
    """Update a mental model's name, source query, tags or max tokens. Changing the query, tags or
    size queues a refresh."""
    return await call.engine.update_mental_model(call.who, call.bank_id, req.mental_model_id, req.changes())


@tool(MentalModelRef, destructive=True, idempotent=True)
async def delete_mental_model(call: Call, req: MentalModelRef) -> MentalModelDeleted:
    """Permanently delete a mental model (and its content history)."""
    return await call.engine.delete_mental_model(call.who, call.bank_id, req.mental_model_id)


@tool(MentalModelRef)
async def refresh_mental_model(call: Call, req: MentalModelRef) -> MentalModelOperation:
    """Re-generate a mental model's content from the latest memories. Runs asynchronously; returns
    the `operation_id` (the one already pending, if a refresh is queued or running)."""
    return await call.engine.refresh_mental_model(call.who, call.bank_id, req.mental_model_id)


@tool(MentalModelRef, destructive=True, idempotent=True)
async def clear_mental_model(call: Call, req: MentalModelRef) -> MentalModel:
    """Clear a mental model's content: it reads as pending, with no content, until its next
    refresh (call refresh_mental_model to rebuild it now). Every refresh rebuilds the content in
    full; clear it when the content should go at once. Its earlier versions stay in its history."""
    return await call.engine.clear_mental_model(call.who, call.bank_id, req.mental_model_id)


@tool(MemoryQuery, read_only=True, idempotent=True, lean_result=True)
async def list_memories(call: Call, req: MemoryQuery) -> MemoryList:
    """Browse the bank's stored memories, newest first, without ranking (to search, use recall).

    `type` (world, experience), `q` (a substring of the text or context), `document_id`, `tags`
    with `tags_match` filter; `limit` (up to 1,000) and `offset` page. Each memory has its id,
    text, type, times, entities, tags and metadata."""
    return await call.engine.list_memories(call.who, call.bank_id, req)


@tool(MemoryRef, read_only=True, idempotent=True, lean_result=True)
async def get_memory(call: Call, req: MemoryRef) -> Memory:
    """One memory by id: its text, type, context, times (when it happened, was said, is true),
    entities, tags, metadata, document and whether it was superseded or invalidated."""
    return await call.engine.get_memory(call.who, call.bank_id, req.memory_id)


@tool(MemoryChange, idempotent=True)
async def update_memory(call: Call, req: MemoryChange) -> MemoryUpdated:
    """Correct one memory: its text (re-embedded), context, type, dates, valid_from/valid_to,
    entities or tags; `state: invalidated` retracts it (kept for audit, left out of recall) and
    `state: valid` restores it (also undoing a supersession). Give a `reason`: every change is
    recorded in the memory's history with who made it. Ids come from recall results."""
    return await call.engine.update_memory(call.who, call.bank_id, req.memory_id, req.changes())


@tool(MemoryInvalidate, idempotent=True)
async def invalidate_memory(call: Call, req: MemoryInvalidate) -> MemoryUpdated:
    """Retract a memory that is wrong: it stays stored for audit but leaves recall, reflect and
    mental models. Reversible with update_memory state=valid. To record that something changed
    (Alice moved), retain the new fact with `supersedes` instead; when the user asks for it to be
    forgotten for good, use forget_memory."""
    return await call.engine.invalidate_memory(call.who, call.bank_id, req.memory_id, req.reason)


@tool(ClearMemories, destructive=True, idempotent=True)
async def clear_memories(call: Call, req: ClearMemories) -> Forgotten:
    """Forget the bank's memories, keeping the bank, its settings and mental models (those drawn
    from them are refreshed without them).

    Without `type`: every memory, with the text retained for them and their entities. With `type`
    (world, experience): only the memories of that type. Cannot be undone; to retract one wrong
    memory, use invalidate_memory instead."""
    return await call.engine.clear_memories(call.who, call.bank_id, req)


@tool(ForgetMemory, destructive=True, idempotent=True)
async def forget_memory(call: Call, req: ForgetMemory) -> ForgetMemoryResult:
    """Forget a memory for good, when the user asks for it to be forgotten: it, the facts extracted
    from it and its history leave the bank (recall, listings, exports, mental models drawn from it
    are refreshed without it). Cannot be undone; `dry_run=true` lists what would go first.
    `include_sources=true` also forgets the raw text a fact came from. To retract a wrong memory
    but keep it for audit, use invalidate_memory instead."""
    return await call.engine.forget_memory(call.who, call.bank_id, req)


@tool(ForgetEntity, destructive=True, idempotent=True)
async def forget_entity(call: Call, req: ForgetEntity) -> Forgotten:
    """Forget everything about a person (or any named entity): every memory linked to the name or
    containing it, with the facts drawn from them ("forget everything about Bob"). Cannot be
    undone: call it with `dry_run=true` first, show the user what would go, then again without."""
    return await call.engine.forget_entity(call.who, call.bank_id, req)


@tool(PurgeMemories, destructive=True, idempotent=True)
async def purge_memories(call: Call, req: PurgeMemories) -> Forgotten:
    """Forget, for good, memories that are no longer true: those invalidated (`invalidated`) and
    those superseded or ended (`superseded`), which are otherwise kept for audit. `dry_run=true`
    counts them first."""
    return await call.engine.purge_memories(call.who, call.bank_id, req)


@tool(ForgetRetainedDocument, destructive=True, idempotent=True)
async def forget_retained_document(call: Call, req: ForgetRetainedDocument) -> Forgotten:
    """Forget everything retained under a `document_id` (a conversation, a document): its memories,
    the facts drawn from them and the text kept for it. `dry_run=true` counts them first."""
    return await call.engine.forget_retained_document(call.who, call.bank_id, req)


@tool(OperationRef, read_only=True, idempotent=True)
async def get_operation(call: Call, req: OperationRef) -> Operation:
    """Status of an asynchronous operation (fact extraction, mental-model refresh): queued,
    running, succeeded, failed or cancelled, with attempts, error and result."""
    return await call.engine.get_operation(call.who, call.bank_id, req.operation_id)


@tool(OperationQuery, read_only=True, idempotent=True)
async def list_operations(call: Call, req: OperationQuery) -> OperationList:
    """List the bank's operations, newest first, optionally by status or type."""
    return await call.engine.list_operations(call.who, call.bank_id, req)


@tool(OperationRef, destructive=True, idempotent=True)
async def cancel_operation(call: Call, req: OperationRef) -> Operation:
    """Cancel a queued or running operation; finished ones are returned unchanged."""
    return await call.engine.cancel_operation(call.who, call.bank_id, req.operation_id)


@tool(ImportDocumentsRequest, collection_alias=True)
async def import_documents(call: Call, req: ImportDocumentsRequest) -> ImportAccepted:
    """Import documents into the bank's knowledge base: public `urls` and/or `files` (each
    {name, text} or {name, content_base64}; TXT, Markdown, HTML, PDF, DOCX). Runs as an operation
    (track it with get_operation; `wait=true` returns when done, with each file's outcome).
    `tags` are access tags (callers need one in common via x-session-tags; none = public);
    `allowed_users` are x-user-id values that may always see them; `chunk_size` (characters)
    overrides the server default. Re-importing unchanged content is a no-op; changed content or a
    new chunk size replaces the document's chunks."""
    return await call.engine.import_documents(call.who, call.bank_id, req, req.wait)


@tool(DocumentListQuery, read_only=True, idempotent=True, collection_alias=True)
async def list_documents(call: Call, req: DocumentListQuery) -> DocumentList:
    """List the documents in the bank's knowledge base (name, type, URL, hash, size, tags, chunk
    count), by name."""
    return await call.engine.list_documents(call.who, call.bank_id, req)


@tool(DocumentRef, read_only=True, idempotent=True, collection_alias=True)
async def get_document(call: Call, req: DocumentRef) -> Document:
    """One document's record, by the id list_documents or import_documents returned."""
    return await call.engine.get_document(call.who, call.bank_id, req.doc_id)


@tool(DocumentDelete, destructive=True, idempotent=True, collection_alias=True)
async def delete_document(call: Call, req: DocumentDelete) -> DocumentDeleted:
    """Delete a document and all its chunks. Requires `confirm: true`. In multi-bank mode
    without a bank (argument or X-Bank-Id), the document is found among the banks this key may
    write."""
    bank_id = call.bank_id
    if call.bank_source == "default":
        bank_id = await call.engine.find_document_bank(call.who, req.doc_id) or bank_id
        if call.audit is not None:
            call.audit.bank_id = bank_id
    return await call.engine.delete_document(call.who, bank_id, req.doc_id)


@tool(RagSearchRequest, read_only=True, idempotent=True, top_level_result=True)
async def rag_search(call: Call, req: RagSearchRequest) -> RagSearchResult:
    """Searches the knowledge base for relevant information using semantic search.

    All phrases are embedded together and searched in parallel (semantic and keyword); results
    are merged, deduplicated and reranked. The caller's `x-user-id` and `x-session-tags` headers
    decide which documents may be returned."""
    return await call.engine.rag_search(call.who, call.bank_id, req, call.end_user)


@tool(DocumentSearchRequest, read_only=True, idempotent=True)
async def search_documents(call: Call, req: DocumentSearchRequest) -> DocumentSearchResult:
    """Search the bank's documents (knowledge base) and return matching chunks with citations.

    `mode`: hybrid (semantic + full text, fused; default), vector or keyword. `top_k` 1-50
    (default 5). `strictness` 0-5 (default 1; 0 returns everything) or `min_score` 0-1 drops
    chunks below that relevance. `filter` is an expression over source_type, source_name (alias
    file_path), source_url, document_id, headline, text, tags, page, chunk_index, created_at,
    updated_at, e.g. `source_type = "pdf" and tags contains "manual"` or `file_path like "%guide%"`.
    Each result has content, file_path, chunk_id, score, page_numbers and the arms that found it.
    Access follows the `x-user-id` / `x-session-tags` headers, as in rag_search."""
    return await call.engine.search_documents(call.who, call.bank_id, req, call.end_user)


@tool(AccessRequest, read_only=True, idempotent=True, top_level_result=True)
async def verify_document_access(call: Call, req: AccessRequest) -> AccessResult:
    """Verify that the current user (headers `x-user-id`, `x-session-tags`) may still access the
    document of a segment returned by rag_search, with a refreshed URL when it has one."""
    return await call.engine.verify_document_access(call.who, call.bank_id, req.segment_uid, call.end_user)


@tool(DirectiveQuery, read_only=True, idempotent=True)
async def list_directives(call: Call, req: DirectiveQuery) -> DirectiveList:
    """List the bank's directives: standing instructions reflect and mental models follow, highest
    priority first. `active_only` (default true) leaves out inactive ones; `tags` filters by their
    tags (`tags_match` as in recall). Page with `limit` and `offset` until the page adds up to
    `total`."""
    return await call.engine.list_directives(call.who, call.bank_id, req)


@tool(DirectiveCreate)
async def create_directive(call: Call, req: DirectiveCreate) -> Directive:
    """Give reflect and mental models a standing instruction (a directive), such as "Answer in
    French" or "Never reveal phone numbers". Every active directive is put into reflect's prompt,
    highest `priority` first. Untagged directives apply to every reflect; tagged ones only to
    reflects (and mental models) whose tags match theirs."""
    return await call.engine.create_directive(call.who, call.bank_id, req)


@tool(DirectiveRef, read_only=True, idempotent=True)
async def get_directive(call: Call, req: DirectiveRef) -> Directive:
    """One directive by id."""
    return await call.engine.get_directive(call.who, call.bank_id, req.directive_id)


@tool(DirectiveChange, idempotent=True)
async def update_directive(call: Call, req: DirectiveChange) -> Directive:
    """Change a directive's name, content, priority, tags, or turn it off (`is_active: false`)
    and on again; only the arguments given change."""
    return await call.engine.update_directive(call.who, call.bank_id, req.directive_id, req.changes())


@tool(DirectiveRef, destructive=True, idempotent=True)
async def delete_directive(call: Call, req: DirectiveRef) -> DirectiveDeleted:
    """Permanently delete a directive (to pause one, set is_active false with update_directive)."""
    return await call.engine.delete_directive(call.who, call.bank_id, req.directive_id)


@tool(TagQuery, read_only=True, idempotent=True)
async def list_tags(call: Call, req: TagQuery) -> TagList:
    """List the tags used in the bank, each with how many memories carry it, most used first
    (`source: mental_models` counts the mental models' tags instead). `q` filters them with `*` as
    a wildcard, in any case: `project:*`, `*-admin`. Use them as recall's `tags`."""
    return await call.engine.list_tags(call.who, call.bank_id, req)


@tool(read_only=True, idempotent=True)
async def get_knowledge_base_tree(call: Call, req: None) -> KnowledgeTree:
    """Browse the bank's knowledge base: its folders and pages, nested. Start here to see what the
    bank documents: a page is a curated note, written by a person or an agent, or generated from
    the bank's memories to answer a question and kept current (`is_stale` true while a refresh is
    pending). Read one with get_knowledge_page, or find one with search_knowledge_base."""
    return await call.engine.knowledge_tree(call.who, call.bank_id)


@tool(KnowledgeSearch, read_only=True, idempotent=True)
async def search_knowledge_base(call: Call, req: KnowledgeSearch) -> PageHits:
    """Find knowledge pages by relevance (their names and contents, by words and by meaning),
    with a snippet each; read a hit whole with get_knowledge_page. This searches the curated pages
    only: recall searches the bank's memories (where written pages are found too)."""
    return await call.engine.search_knowledge(call.who, call.bank_id, req)


@tool(PageRef, read_only=True, idempotent=True)
async def get_knowledge_page(call: Call, req: PageRef) -> KnowledgePage:
    """Read a knowledge page: its content, and the page as one markdown document (YAML front
    matter: id, type, title, description, tags, timestamp; then the content). Page ids (`kp-...`)
    come from get_knowledge_base_tree or search_knowledge_base."""
    return await call.engine.get_knowledge_page(call.who, call.bank_id, req.page_id)


@tool(FolderCreate)
async def create_knowledge_folder(call: Call, req: FolderCreate) -> KnowledgeNode:
    """Make a folder in the knowledge base, at the top or in `parent_id` (a `kf-...` id). Folders
    group pages; they hold nothing of their own."""
    return await call.engine.create_knowledge_folder(call.who, call.bank_id, req)


@tool(PageCreate)
async def create_knowledge_page(call: Call, req: PageCreate) -> PageCreated:
    """Add a page to the knowledge base. Either write it, `content` (markdown, kept as written and
    retained into the bank so that recall finds it), or have it generated, `source_query` (the
    question it answers: its content is made from the bank's memories in the background, tracked
    by `operation_id`, and kept current). `name` is unique within its folder (`parent_id`, a
    `kf-...` id; none: the top). Examples: name="Deployment runbook", content="1. ..."; name="Team
    preferences", source_query="What tools and conventions does the team prefer?"."""
    return await call.engine.create_knowledge_page(call.who, call.bank_id, req)


@tool(NodeChange, idempotent=True)
async def update_knowledge_node(call: Call, req: NodeChange) -> KnowledgeNode:
    """Rename or move a folder or page (`parent_id`: a folder's `kf-...` id, or "root" for the top),
    rewrite a written page (`content`, `tags`) or change a generated one (`source_query`, `tags`,
    `max_tokens`, which refresh it). Only the arguments given change."""
    return await call.engine.update_knowledge_node(call.who, call.bank_id, req.node_id, req.changes())


@tool(NodeRef, destructive=True, idempotent=True)
async def delete_knowledge_node(call: Call, req: NodeRef) -> NodeDeleted:
    """Delete a folder or page and everything under it: written pages' memories and generated
    pages' mental models go too. This cannot be undone."""
    return await call.engine.delete_knowledge_node(call.who, call.bank_id, req.node_id)
