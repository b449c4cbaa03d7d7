"""The engine: one async method per operation, each taking the calling principal first.

MCP tools, REST routes and the CLI are thin adapters over these methods, so validation,
authorisation and limits are enforced once, whichever face a request came through.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from hindsight.config import Settings
from hindsight.db.sql import Q
from hindsight.engine.access import keys
from hindsight.engine.access.keys import Principal
from hindsight.engine.access.schemas import ApiKey, ApiKeyCreate, ApiKeyList
from hindsight.engine.audit import logs as audit_logs
from hindsight.engine.audit.schemas import AuditList, AuditQuery, AuditStats, AuditStatsQuery
from hindsight.engine.audit.trail import AuditTrail
from hindsight.engine.banks import files as bank_files
from hindsight.engine.banks import llm_health, registry
from hindsight.engine.banks import usage as llm_usage
from hindsight.engine.banks.registry import check_bank_id
from hindsight.engine.banks.schemas import (
    Bank,
    BankCounts,
    BankCreate,
    BankCreated,
    BankDeleted,
    BankList,
    BankQuery,
    BankUpdate,
)
from hindsight.engine.banks.settings import BankSettingsChange, settings_update
from hindsight.engine.banks.usage import get_bank_usage
from hindsight.engine.directives import store as directives
from hindsight.engine.directives.schemas import (
    Directive,
    DirectiveCreate,
    DirectiveDeleted,
    DirectiveList,
    DirectiveQuery,
    DirectiveUpdate,
)
from hindsight.engine.errors import Forbidden, InvalidArgument, NotFound
from hindsight.engine.forgetting import erase
from hindsight.engine.forgetting.schemas import (
    ClearMemories,
    ForgetEntity,
    ForgetMemory,
    ForgetMemoryResult,
    ForgetRetainedDocument,
    Forgotten,
    PurgeMemories,
)
from hindsight.engine.knowledge import documents, file_retain, pages, rag
from hindsight.engine.lifecycle import Lifecycle
from hindsight.engine.memory import curation, extraction, graph, records, sources, tags, timeseries
from hindsight.engine.memory.curation import actor_of
from hindsight.engine.memory.retain import RetainAccepted, extraction_awaited, reprocess_source, retain_later
from hindsight.engine.memory.retain import retain as _retain
from hindsight.engine.memory.schemas import Memory, RetainItem, RetainResult
from hindsight.engine.notify import webhooks
from hindsight.engine.notify.schemas import (
    DeliveryList,
    DeliveryQuery,
    TestQueued,
    Webhook,
    WebhookCreate,
    WebhookDeleted,
    WebhookList,
    WebhookUpdate,
)
from hindsight.engine.queue import operations
from hindsight.engine.queue.schemas import Operation, OperationList, OperationQuery
from hindsight.engine.reflection import mental_models, setup
from hindsight.engine.reflection.mental_models import (
    MentalModel,
    MentalModelCreate,
    MentalModelDeleted,
    MentalModelList,
    MentalModelOperation,
    MentalModelQuery,
    MentalModelUpdate,
    MentalModelVersion,
)
from hindsight.engine.reflection.reflect import ReflectRequest, ReflectResult, empty_bank_reflection
from hindsight.engine.reflection.reflect import reflect as _reflect
from hindsight.engine.rules.validation import parse
from hindsight.engine.runtime import Runtime
from hindsight.engine.search.recall import recall as _recall
from hindsight.engine.search.schemas import RecallRequest, RecallResult
from hindsight.engine.transfer import archive, portable
from hindsight.engine.worker.runner import Worker

log = logging.getLogger("hindsight")
T = TypeVar("T")


class Engine:
    """The operations, over the process's parts (engine/lifecycle.py), which `start` brings up."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.lifecycle = Lifecycle(settings)

    async def start(self, run_scheduler: bool = True) -> None:
        await self.lifecycle.start(run_scheduler)

    async def close(self) -> None:
        await self.lifecycle.close()

    @property
    def started(self) -> bool:
        return self.lifecycle.started

    @property
    def rt(self) -> Runtime:
        """What the rooms' functions run on (engine/runtime.py); only on a started engine."""
        return self.lifecycle.rt

    @property
    def worker(self) -> Worker:
        return self.lifecycle.worker

    @property
    def audit(self) -> AuditTrail:
        """The audit log's writer: the server shell records each request that reached a bank."""
        return self.lifecycle.audit

    async def authenticate(self, authorization: str | None) -> Principal:
        return await self.lifecycle.tenant.principal(authorization)

    # ---- banks --------------------------------------------------------------------------
    async def create_bank(self, who: Principal, req: BankCreate) -> BankCreated:
        """Admins create any bank; a scoped key only the banks it may write, as its first retain
        there would (Hindsight's integrations call create_bank at start-up)."""
        who.require_bank(req.bank_id, write=True)
        bank, created = await registry.create_bank(self.rt, req)
        await self.rt.reads.wrote(req.bank_id)
        return BankCreated(bank=bank, created=created)

    async def list_banks(self, who: Principal, query: BankQuery | None = None) -> BankList:
        return await registry.list_banks(self.rt, query or BankQuery(), who.visible_banks())

    async def get_bank(self, who: Principal, bank_id: str) -> Bank:
        self.require(who, bank_id)
        return await registry.get_bank(self.rt, bank_id)

    async def update_bank(self, who: Principal, bank_id: str, req: BankUpdate) -> Bank:
        async with self._writing(who, bank_id):
            return await registry.update_bank(self.rt, bank_id, req)

    async def change_bank(self, who: Principal, bank_id: str, change: Callable[[Bank], BankUpdate | None]) -> Bank:
        """Update a bank from what it holds now (`change` maps the bank to its update), in one
        transaction: a merge into its settings loses no concurrent writer's change."""
        async with self._writing(who, bank_id):
            return await registry.change_bank(self.rt, bank_id, change)

    async def configure_bank(
        self, who: Principal, bank_id: str, req: BankSettingsChange, field: str = "config_updates"
    ) -> Bank:
        """Name, mission and settings by Hindsight's names (engine/banks/settings.py), merged into
        what the bank keeps in one transaction; `field` is what the client called the settings."""

        def change(bank: Bank) -> BankUpdate | None:
            update = settings_update(req, bank, field)
            return parse(BankUpdate, update) if update else None

        return await self.change_bank(who, bank_id, change)

    async def count_bank(self, who: Principal, bank_id: str) -> BankCounts:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: registry.count_bank(rt, bank_id))

    async def delete_bank(self, who: Principal, bank_id: str) -> BankDeleted:
        check_bank_id(bank_id)
        who.require_admin()
        n = await registry.delete_bank(self.rt, bank_id)
        erase.after_erasure(self.rt)  # its rows went by cascade; their copies follow (db/vacuum.py)
        await self.rt.reads.wrote(bank_id)
        return BankDeleted(deleted=True, bank_id=bank_id, memories_deleted=n)

    # ---- memories -------------------------------------------------------------------
    async def retain(self, who: Principal, bank_id: str, items: list[RetainItem], wait: bool = False) -> RetainResult:
        async with self._writing(who, bank_id):
            result = await _retain(self.rt, bank_id, items, actor=actor_of(who.key_id, who.kind))
            return await extraction_awaited(self.rt, bank_id, result) if wait else result

    async def retain_later(self, who: Principal, bank_id: str, items: list[RetainItem]) -> RetainAccepted:
        """Accept now (items committed with their operation), store in the background."""
        async with self._writing(who, bank_id):
            return await retain_later(self.rt, bank_id, items, actor=actor_of(who.key_id, who.kind))

    async def recall(self, who: Principal, bank_id: str, req: RecallRequest) -> RecallResult:
        self.require(who, bank_id)
        if req.max_tokens > self.settings.max_recall_tokens:
            raise InvalidArgument(
                f"max_tokens: {req.max_tokens} exceeds the limit of {self.settings.max_recall_tokens}", "max_tokens"
            )
        async with self.rt.gates.reading(bank_id):
            return await self._read(bank_id, lambda rt: _recall(rt, bank_id, req))

    async def list_memories(self, who: Principal, bank_id: str, query: records.MemoryQuery) -> records.MemoryList:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: records.list_memories(rt, bank_id, query))

    async def get_source(self, who: Principal, bank_id: str, document_id: str) -> sources.RetainedSource:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: sources.get_source(rt, bank_id, document_id))

    async def list_sources(
        self, who: Principal, bank_id: str, query: sources.SourceQuery
    ) -> tuple[list[sources.RetainedSource], int]:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: sources.list_sources(rt, bank_id, query))

    async def list_source_units(
        self, who: Principal, bank_id: str, document_id: str, limit: int, offset: int
    ) -> tuple[list[Memory], int]:
        async with self._reading(who, bank_id):
            return await self._read(
                bank_id, lambda rt: sources.list_source_units(rt, bank_id, document_id, limit, offset)
            )

    async def forget_retained_document(self, who: Principal, bank_id: str, req: ForgetRetainedDocument) -> Forgotten:
        """What was retained under a document_id, and all drawn from it (engine/forgetting/erase.py)."""
        async with self._writing(who, bank_id):
            return await erase.forget_retained_document(self.rt, bank_id, req, actor_of(who.key_id, who.kind))

    async def update_source(
        self, who: Principal, bank_id: str, document_id: str, change: sources.SourceChange
    ) -> sources.RetainedSource:
        async with self._writing(who, bank_id):
            return await sources.update_source(self.rt, bank_id, document_id, change)

    async def reprocess_source(self, who: Principal, bank_id: str, document_id: str) -> RetainAccepted:
        """Retain a document's text again, in the background, replacing its memories."""
        async with self._writing(who, bank_id):
            return await reprocess_source(self.rt, bank_id, document_id, actor_of(who.key_id, who.kind))

    async def get_chunk(self, who: Principal, chunk_id: str) -> sources.SourceUnit:
        """A retained document's unit by id alone, among the banks `who` may read."""
        return await sources.find_source_unit(self.rt, chunk_id, who.visible_banks())

    async def preview_extraction(
        self, who: Principal, bank_id: str, req: extraction.ExtractionPreviewRequest
    ) -> extraction.ExtractionPreview:
        """The facts a retain of this text would store, stored nowhere (calls the LLM)."""
        self.require(who, bank_id)
        return await extraction.preview_extraction(self.rt, bank_id, req)

    async def retain_files(
        self, who: Principal, bank_id: str, uploads: list[file_retain.Upload], metas: list[file_retain.FileMemory]
    ) -> list[str]:
        """Files retained as memories, each by an operation; returns their ids."""
        async with self._writing(who, bank_id):
            return await file_retain.request_file_retains(self.rt, bank_id, uploads, metas)

    async def get_memory(self, who: Principal, bank_id: str, memory_id: str) -> Memory:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: records.get_memory(rt, bank_id, memory_id))

    async def memory_lineage(self, who: Principal, bank_id: str, memory_id: str) -> records.Lineage:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: records.get_lineage(rt, bank_id, memory_id))

    async def list_entities(self, who: Principal, bank_id: str, query: records.EntityQuery) -> records.EntityList:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: records.list_entities(rt, bank_id, query))

    async def get_entity(self, who: Principal, bank_id: str, entity_id: str) -> graph.EntityDetail:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: graph.get_entity(rt, bank_id, entity_id))

    async def entities_seen(self, who: Principal, bank_id: str, entity_ids: list[int]) -> dict[int, tuple]:
        """When the bank's memories first and last mentioned each entity."""
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: graph.entities_seen(rt, bank_id, entity_ids))

    async def entity_graph(self, who: Principal, bank_id: str, query: graph.EntityGraphQuery) -> graph.EntityGraph:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: graph.entity_graph(rt, bank_id, query))

    async def memory_graph(self, who: Principal, bank_id: str, query: graph.MemoryGraphQuery) -> graph.MemoryGraph:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: graph.memory_graph(rt, bank_id, query))

    async def list_tags(self, who: Principal, bank_id: str, query: tags.TagQuery) -> tags.TagList:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: tags.list_tags(rt, bank_id, query))

    async def memories_timeseries(
        self, who: Principal, bank_id: str, query: timeseries.TimeseriesQuery
    ) -> timeseries.MemoriesTimeseries:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: timeseries.memories_timeseries(rt, bank_id, query))

    async def get_memories(self, who: Principal, bank_id: str, memory_ids: list[str]) -> list[Memory]:
        """The bank's memories among `memory_ids`, in that order (those not found are left out)."""
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: records.get_memories(rt, bank_id, memory_ids))

    async def forget_memory(self, who: Principal, bank_id: str, req: ForgetMemory) -> ForgetMemoryResult:
        """One memory and everything drawn from it, everywhere it reached (engine/forgetting/erase.py);
        a dry run needs the same right, as it reads what a forget would reach."""
        async with self._writing(who, bank_id):
            return await erase.forget_memory(self.rt, bank_id, req, actor_of(who.key_id, who.kind))

    async def forget_entity(self, who: Principal, bank_id: str, req: ForgetEntity) -> Forgotten:
        """Every memory that names an entity ("forget everything about Bob")."""
        async with self._writing(who, bank_id):
            return await erase.forget_entity(self.rt, bank_id, req, actor_of(who.key_id, who.kind))

    async def purge_memories(self, who: Principal, bank_id: str, req: PurgeMemories) -> Forgotten:
        """Memories no longer true (invalidated, superseded), forgotten for good."""
        async with self._writing(who, bank_id):
            return await erase.purge_memories(self.rt, bank_id, req, actor_of(who.key_id, who.kind))

    async def clear_memories(self, who: Principal, bank_id: str, req: ClearMemories) -> Forgotten:
        """Every memory of the bank (or of one type); the bank stays."""
        async with self._writing(who, bank_id):
            return await erase.clear_memories(self.rt, bank_id, req, actor_of(who.key_id, who.kind))

    async def update_memory(
        self, who: Principal, bank_id: str, memory_id: str, req: curation.MemoryUpdate
    ) -> curation.MemoryUpdated:
        """Edit, invalidate or restore one memory; the change is recorded in its history."""
        async with self._writing(who, bank_id):
            return await curation.update_memory(self.rt, bank_id, memory_id, req, actor_of(who.key_id, who.kind))

    async def invalidate_memory(
        self, who: Principal, bank_id: str, memory_id: str, reason: str | None = None
    ) -> curation.MemoryUpdated:
        req = curation.MemoryUpdate(state="invalidated", reason=reason)
        async with self._writing(who, bank_id):
            return await curation.update_memory(self.rt, bank_id, memory_id, req, actor_of(who.key_id, who.kind))

    async def memory_history(self, who: Principal, bank_id: str, memory_id: str) -> curation.MemoryHistory:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: curation.memory_history(rt, bank_id, memory_id))

    async def reflect(self, who: Principal, bank_id: str, req: ReflectRequest) -> ReflectResult:
        self.require(who, bank_id)
        if not await self._bank_exists(bank_id):
            return empty_bank_reflection(bank_id, req)
        return await self._read(bank_id, lambda rt: _reflect(rt, bank_id, req))

    # ---- mental models ------------------------------------------------------------------
    async def create_mental_model(self, who: Principal, bank_id: str, req: MentalModelCreate) -> MentalModelOperation:
        async with self._writing(who, bank_id):
            return await mental_models.create_mental_model(self.rt, bank_id, req)

    async def list_mental_models(self, who: Principal, bank_id: str, req: MentalModelQuery) -> MentalModelList:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: mental_models.list_mental_models(rt, bank_id, req))

    async def get_mental_model(self, who: Principal, bank_id: str, model_id: str) -> MentalModel:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: mental_models.get_mental_model(rt, bank_id, model_id))

    async def mental_model_history(self, who: Principal, bank_id: str, model_id: str) -> list[MentalModelVersion]:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: mental_models.get_mental_model_history(rt, bank_id, model_id))

    async def update_mental_model(
        self, who: Principal, bank_id: str, model_id: str, req: MentalModelUpdate
    ) -> MentalModel:
        async with self._writing(who, bank_id):
            return await mental_models.update_mental_model(self.rt, bank_id, model_id, req)

    async def delete_mental_model(self, who: Principal, bank_id: str, model_id: str) -> MentalModelDeleted:
        async with self._writing(who, bank_id):
            await mental_models.delete_mental_model(self.rt, bank_id, model_id)
        return MentalModelDeleted(deleted=True, mental_model_id=model_id)

    async def preview_mental_model_refresh(
        self, who: Principal, bank_id: str, model_id: str
    ) -> mental_models.RefreshPreview:
        """What a refresh would write now, written nowhere (calls the LLM as a refresh does)."""
        self.require(who, bank_id)
        return await mental_models.preview_refresh(self.rt, bank_id, model_id)

    async def consolidate(self, who: Principal, bank_id: str) -> mental_models.Consolidation:
        """Refresh now every model whose content is behind the bank's memories."""
        async with self._writing(who, bank_id):
            return await mental_models.consolidate(self.rt, bank_id)

    async def recover_consolidation(self, who: Principal, bank_id: str) -> int:
        """Ask again for the fact extractions and refreshes that failed; returns how many."""
        async with self._writing(who, bank_id):
            return await mental_models.recover_failed(self.rt, bank_id)

    async def clear_mental_model(self, who: Principal, bank_id: str, model_id: str) -> MentalModel:
        async with self._writing(who, bank_id):
            return await mental_models.clear_mental_model(self.rt, bank_id, model_id)

    async def refresh_mental_model(self, who: Principal, bank_id: str, model_id: str) -> MentalModelOperation:
        async with self._writing(who, bank_id):
            return await mental_models.refresh_mental_model(self.rt, bank_id, model_id)

    # ---- directives -----------------------------------------------------------------------
    async def create_directive(self, who: Principal, bank_id: str, req: DirectiveCreate) -> Directive:
        async with self._writing(who, bank_id):
            return await directives.create_directive(self.rt, bank_id, req)

    async def list_directives(self, who: Principal, bank_id: str, query: DirectiveQuery) -> DirectiveList:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: directives.list_directives(rt, bank_id, query))

    async def get_directive(self, who: Principal, bank_id: str, directive_id: str) -> Directive:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: directives.get_directive(rt, bank_id, directive_id))

    async def update_directive(
        self, who: Principal, bank_id: str, directive_id: str, req: DirectiveUpdate
    ) -> Directive:
        async with self._writing(who, bank_id):
            return await directives.update_directive(self.rt, bank_id, directive_id, req)

    async def delete_directive(self, who: Principal, bank_id: str, directive_id: str) -> DirectiveDeleted:
        async with self._writing(who, bank_id):
            await directives.delete_directive(self.rt, bank_id, directive_id)
        return DirectiveDeleted(deleted=True, directive_id=directive_id)

    # ---- webhooks -------------------------------------------------------------------------
    async def create_webhook(self, who: Principal, bank_id: str, req: WebhookCreate) -> Webhook:
        async with self._writing(who, bank_id):
            return await webhooks.create_webhook(self.rt, bank_id, req)

    async def list_webhooks(self, who: Principal, bank_id: str) -> WebhookList:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: webhooks.list_webhooks(rt, bank_id))

    async def get_webhook(self, who: Principal, bank_id: str, webhook_id: str) -> Webhook:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: webhooks.get_webhook(rt, bank_id, webhook_id))

    async def update_webhook(self, who: Principal, bank_id: str, webhook_id: str, req: WebhookUpdate) -> Webhook:
        async with self._writing(who, bank_id):
            return await webhooks.update_webhook(self.rt, bank_id, webhook_id, req)

    async def delete_webhook(self, who: Principal, bank_id: str, webhook_id: str) -> WebhookDeleted:
        async with self._writing(who, bank_id):
            await webhooks.delete_webhook(self.rt, bank_id, webhook_id)
        return WebhookDeleted(deleted=True, webhook_id=webhook_id)

    async def test_webhook(self, who: Principal, bank_id: str, webhook_id: str) -> TestQueued:
        async with self._writing(who, bank_id):
            return await webhooks.test_webhook(self.rt, bank_id, webhook_id)

    async def list_webhook_deliveries(
        self, who: Principal, bank_id: str, webhook_id: str, query: DeliveryQuery
    ) -> DeliveryList:
        self.require(who, bank_id)
        return await webhooks.list_deliveries(self.rt, bank_id, webhook_id, query)

    # ---- documents -------------------------------------------------------------------------
    async def import_documents(
        self, who: Principal, bank_id: str, req: documents.ImportRequest, wait: bool = False
    ) -> documents.ImportAccepted:
        async with self._writing(who, bank_id):
            return await documents.import_documents(self.rt, bank_id, req, wait)

    async def list_documents(
        self, who: Principal, bank_id: str, req: documents.DocumentListQuery
    ) -> documents.DocumentList:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: documents.list_documents(rt, bank_id, req))

    async def get_document(self, who: Principal, bank_id: str, document_id: str) -> documents.Document:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: documents.get_document(rt, bank_id, document_id))

    async def delete_document(self, who: Principal, bank_id: str, document_id: str) -> documents.DocumentDeleted:
        async with self._writing(who, bank_id):
            await documents.delete_document(self.rt, bank_id, document_id)
        self.rt.vacuum.request()  # its chunks' copies in the database follow (db/vacuum.py)
        return documents.DocumentDeleted(deleted=True, document_id=document_id, bank_id=bank_id)

    async def document_counts(self, who: Principal, bank_ids: list[str]) -> dict[str, int]:
        """How many documents each of the banks holds, among those `who` may see."""
        visible = who.visible_banks()
        return await documents.count_documents(self.rt, [b for b in bank_ids if visible is None or b in visible])

    async def find_document_bank(self, who: Principal, document_id: str) -> str | None:
        """The bank holding a document id, among the banks `who` may see (ids are UUIDs, unique
        across banks), for clients that name a document without its collection."""
        return await documents.find_document_bank(self.rt, document_id, who.visible_banks())

    async def rag_search(
        self, who: Principal, bank_id: str, req: rag.RagSearchRequest, end_user: rag.EndUser
    ) -> rag.RagSearchResult:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: rag.rag_search(rt, bank_id, req, end_user))

    async def search_documents(
        self, who: Principal, bank_id: str, req: rag.DocumentSearchRequest, end_user: rag.EndUser
    ) -> rag.DocumentSearchResult:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: rag.search_documents(rt, bank_id, req, end_user))

    async def verify_document_access(
        self, who: Principal, bank_id: str, segment_uid: str, end_user: rag.EndUser
    ) -> rag.AccessResult:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: rag.verify_document_access(rt, bank_id, segment_uid, end_user))

    # ---- knowledge base: pages and folders ------------------------------------------------
    async def knowledge_tree(self, who: Principal, bank_id: str) -> pages.KnowledgeTree:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: pages.tree(rt, bank_id))

    async def create_knowledge_folder(
        self, who: Principal, bank_id: str, req: pages.FolderCreate
    ) -> pages.KnowledgeNode:
        async with self._writing(who, bank_id):
            return await pages.create_folder(self.rt, bank_id, req)

    async def create_knowledge_page(self, who: Principal, bank_id: str, req: pages.PageCreate) -> pages.PageCreated:
        async with self._writing(who, bank_id):
            return await pages.create_page(self.rt, bank_id, req)

    async def get_knowledge_page(self, who: Principal, bank_id: str, page_id: str) -> pages.KnowledgePage:
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: pages.get_page(rt, bank_id, page_id))

    async def update_knowledge_node(
        self, who: Principal, bank_id: str, node_id: str, req: pages.NodeUpdate
    ) -> pages.KnowledgeNode:
        async with self._writing(who, bank_id):
            return await pages.update_node(self.rt, bank_id, node_id, req)

    async def delete_knowledge_node(self, who: Principal, bank_id: str, node_id: str) -> pages.NodeDeleted:
        async with self._writing(who, bank_id):
            return await pages.delete_node(self.rt, bank_id, node_id)

    async def search_knowledge(self, who: Principal, bank_id: str, req: pages.KnowledgeSearch) -> pages.PageHits:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: pages.search(rt, bank_id, req))

    async def export_knowledge(self, who: Principal, bank_id: str) -> pages.KnowledgeBundle:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: pages.export(rt, bank_id))

    # ---- export / import ------------------------------------------------------------------
    async def export_bank(self, who: Principal, bank_id: str):
        """Checks access before the first byte, so errors are proper responses, not a cut stream."""
        self.require(who, bank_id)
        if not await self._bank_exists(bank_id):
            raise NotFound(f"bank {bank_id!r} does not exist", "bank_id")
        # Streamed after this returns, from one snapshot of the server chosen now.
        target = await self.rt.reads.target(bank_id)
        return portable.export_bank(self.lifecycle.on(target), bank_id)

    async def import_bank(
        self, who: Principal, bank_id: str, fileobj, on_conflict: portable.OnConflict = "rename"
    ) -> portable.ImportResult:
        self.require(who, bank_id, write=True)
        if on_conflict not in ("rename", "skip", "replace"):  # typed for callers, checked for the CLI's strings
            raise InvalidArgument("on_conflict: must be rename, skip or replace", "on_conflict")
        async with self._writing(who, bank_id):
            return await portable.import_bank(self.rt, bank_id, fileobj, on_conflict)

    async def export_bank_setup(self, who: Principal, bank_id: str) -> tuple[Bank, setup.BankSetup]:
        """The bank's profile, settings and mental models, without its memories."""
        self.require(who, bank_id)
        return await self._read(bank_id, lambda rt: setup.read_setup(rt, bank_id))

    async def apply_bank_setup(
        self, who: Principal, bank_id: str, req: setup.BankSetup, dry_run: bool = False
    ) -> setup.SetupApplied:
        who.require_bank(check_bank_id(bank_id), write=True)
        applied = await setup.apply_setup(self.rt, bank_id, req, dry_run)
        await self.rt.reads.wrote(bank_id)
        return applied

    async def export_documents(self, who: Principal, bank_id: str, document_ids: list[str] | None) -> str:
        """Queue an export of the bank's documents as a transfer archive; returns the operation's id.
        It keeps a file of the bank until the operation is deleted, so it takes a key that may write."""
        async with self._writing(who, bank_id):
            return await archive.request_export(self.rt, bank_id, document_ids)

    async def import_documents_archive(
        self, who: Principal, bank_id: str, source, name: str, on_conflict: archive.OnConflict = "skip"
    ) -> str:
        """Queue the import of a transfer archive's documents; returns the operation's id."""
        async with self._writing(who, bank_id):
            return await archive.request_import(self.rt, bank_id, source, name, on_conflict)

    async def bank_file(self, who: Principal, key: str) -> bank_files.BankFile:
        """A file kept for a bank, by its key (which names the bank); checked before a byte is sent."""
        bank_id = bank_files.bank_of_key(key)
        self.require(who, bank_id)
        return await bank_files.file_head(self.rt, bank_id, key)

    def bank_file_parts(self, f: bank_files.BankFile):
        """The bytes of a file `bank_file` returned, a part at a time."""
        return bank_files.file_parts(self.rt, f)

    async def probe_llms(self, who: Principal, bank_id: str) -> llm_health.LlmHealth:
        """Whether the LLMs the bank's work uses answer now (one small call each)."""
        self.require(who, bank_id)
        return await llm_health.probe_llms(self.rt, bank_id)

    # ---- operations and usage -------------------------------------------------------------
    async def get_operation(self, who: Principal, bank_id: str, operation_id: str) -> Operation:
        self.require(who, bank_id)
        return await operations.get_operation(self.rt, bank_id, operation_id)

    async def list_operations(self, who: Principal, bank_id: str, req: OperationQuery) -> OperationList:
        self.require(who, bank_id)
        return await operations.list_operations(self.rt, bank_id, req)

    async def cancel_operation(self, who: Principal, bank_id: str, operation_id: str) -> Operation:
        async with self._writing(who, bank_id):
            return await operations.cancel_operation(self.rt, bank_id, operation_id)

    async def retry_operation(self, who: Principal, bank_id: str, operation_id: str) -> Operation:
        async with self._writing(who, bank_id):
            return await operations.retry_operation(self.rt, bank_id, operation_id)

    async def delete_operation(self, who: Principal, bank_id: str, operation_id: str) -> Operation:
        async with self._writing(who, bank_id):
            return await operations.delete_operation(self.rt, bank_id, operation_id)

    async def usage(self, who: Principal, bank_id: str) -> dict:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: get_bank_usage(rt, bank_id))

    async def _read(self, bank_id: str, run: Callable[[Runtime], Awaitable[T]]) -> T:
        """`run` on the runtime of where a read of the bank goes now: a replica that has replayed
        the bank's last write, else the primary (db/replicas.py). A replica that fails under it
        (gone, or cancelling the read to replay WAL) hands the read to the primary."""
        target = await self.rt.reads.target(bank_id)
        if target.replica is None:
            return await run(self.rt)
        try:
            return await run(self.lifecycle.on(target))
        except Exception as exc:
            if not await target.failed(exc):
                raise
        return await run(self.rt)

    @contextlib.asynccontextmanager
    async def _writing(self, who: Principal, bank_id: str) -> AsyncIterator[None]:
        """For a write to the bank: the caller may write it, and once the write is done (and
        before it is acknowledged) where it lies in the primary's WAL is recorded, so that reads
        of the bank through any server process see it (db/replicas.py)."""
        self.require(who, bank_id, write=True)
        yield
        await self.rt.reads.wrote(bank_id)

    async def list_llm_requests(
        self, who: Principal, bank_id: str, query: llm_usage.LLMRequestQuery
    ) -> llm_usage.LLMRequestList:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: llm_usage.list_llm_requests(rt, bank_id, query))

    async def llm_request_stats(
        self, who: Principal, bank_id: str, query: llm_usage.LLMStatsQuery
    ) -> llm_usage.LLMStats:
        async with self._reading(who, bank_id):
            return await self._read(bank_id, lambda rt: llm_usage.llm_request_stats(rt, bank_id, query))

    def _reading(self, who: Principal, bank_id: str):
        """For a read of the bank as a whole: the caller may read it, and one of the bank's lanes
        is held while the read runs (banks/gates.py), so a flood of them waits at this bank's
        gate, not ahead of other banks' requests."""
        self.require(who, bank_id)
        return self.rt.gates.reading(bank_id)

    def require(self, who: Principal, bank_id: str, write: bool = False) -> None:
        """A valid bank id the caller may read (or write). A bank that was never written reads as
        empty: an agent's first call in a new conversation is recall, on a bank its first retain
        will create. Things looked up by id in it (a model, a document, an operation) are simply
        not found."""
        check_bank_id(bank_id)
        who.require_bank(bank_id, write=write)

    async def _bank_exists(self, bank_id: str) -> bool:
        async with self.rt.pool.acquire() as conn:
            return bool(await conn.fetchval(Q.bank_exists, bank_id))

    # ---- the audit log ----------------------------------------------------------------
    def require_audit(self, who: Principal, bank_id: str | None) -> None:
        """Every bank's records: admins. One bank's: admins and the keys that may write that bank
        (its owners); a read-only key reads memories, not who else did."""
        if bank_id is None:
            who.require_admin()
            return
        self.require(who, bank_id)
        if not who.is_admin and who.read_only:
            raise Forbidden(f"reading the audit log of bank {bank_id!r} needs a key that may write it", "bank_id")

    async def list_audit_logs(self, who: Principal, bank_id: str | None, query: AuditQuery) -> AuditList:
        self.require_audit(who, bank_id)
        if bank_id is None:  # every bank's: no one bank's position to read past, so the primary
            return await audit_logs.list_audit_logs(self.rt, None, query)
        return await self._read(bank_id, lambda rt: audit_logs.list_audit_logs(rt, bank_id, query))

    async def audit_stats(self, who: Principal, bank_id: str, query: AuditStatsQuery) -> AuditStats:
        self.require_audit(who, bank_id)
        return await self._read(bank_id, lambda rt: audit_logs.audit_stats(rt, bank_id, query))

    async def export_audit_logs(self, who: Principal, bank_id: str | None, query: AuditQuery):
        """Checks access before the first byte; the records (one bank's, or every bank's) as JSON lines."""
        self.require_audit(who, bank_id)
        if bank_id is None:
            return audit_logs.export_audit_logs(self.rt, None, query.start_date, query.end_date)
        # Streamed after this returns, from one snapshot of the server chosen now.
        target = await self.rt.reads.target(bank_id)
        return audit_logs.export_audit_logs(self.lifecycle.on(target), bank_id, query.start_date, query.end_date)

    # ---- keys -------------------------------------------------------------------------
    async def create_key(self, who: Principal, req: ApiKeyCreate) -> ApiKey:
        who.require_admin()
        return await keys.create_key(self.rt, req)

    async def list_keys(self, who: Principal) -> ApiKeyList:
        who.require_admin()
        return ApiKeyList(keys=await keys.list_keys(self.rt))

    async def revoke_key(self, who: Principal, key_id: str) -> ApiKey:
        who.require_admin()
        return await keys.revoke_key(self.rt, key_id)
