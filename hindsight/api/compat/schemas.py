"""Request and response shapes of Hindsight's `/v1/default` API, as its clients send and read them.

Requests are lenient the way the reference's are: explicit nulls and fields we do not act on
(strategies, observation scopes, triggers, ...) are accepted and ignored, so a client's default
payload never fails. Responses carry every field the client's generated models require, with
the types they validate strictly: times as ISO strings, metadata values as strings.
Field names follow `hindsight_client_api.models` (hindsight-client 1.1.0).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hindsight.engine.rules.tags import TagsMatch
from hindsight.engine.rules.text import Strict

Budget = Literal["low", "mid", "high"]


class Lenient(Strict):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


def _no_tag_groups(v: list | None) -> list | None:
    """Compound tag filters (`tag_groups`) are not implemented: refused, because ignoring one
    would answer with more than the caller's scope allows."""
    if v:
        raise ValueError("compound tag filters are not supported here; use tags with tags_match")
    return v


class TagFiltered(Lenient):
    tag_groups: list[Any] | None = None

    _groups = field_validator("tag_groups")(_no_tag_groups)


# ---- banks ----------------------------------------------------------------------------------
class Disposition(Lenient):
    skepticism: int = Field(3, ge=1, le=5)
    literalism: int = Field(3, ge=1, le=5)
    empathy: int = Field(3, ge=1, le=5)


class BankIn(Lenient):
    """PUT/PATCH /banks/{bank_id}. `reflect_mission` > `mission` > `background`, and the
    `disposition_*` fields over the `disposition` object, as the reference resolves them."""

    name: str | None = Field(None, max_length=200)
    mission: str | None = Field(None, max_length=4_000)
    reflect_mission: str | None = Field(None, max_length=4_000)
    background: str | None = Field(None, max_length=4_000)
    disposition: Disposition | None = None
    disposition_skepticism: int | None = Field(None, ge=1, le=5)
    disposition_literalism: int | None = Field(None, ge=1, le=5)
    disposition_empathy: int | None = Field(None, ge=1, le=5)

    def resolved_mission(self) -> str | None:
        return self.reflect_mission or self.mission or self.background

    def disposition_updates(self) -> dict[str, int]:
        base = self.disposition.model_dump() if self.disposition else {}
        for trait in ("skepticism", "literalism", "empathy"):
            value = getattr(self, f"disposition_{trait}")
            if value is not None:
                base[trait] = value
        return base


class BankProfile(BaseModel):
    bank_id: str
    name: str
    disposition: Disposition
    mission: str
    background: str | None = None


class BankListItem(BaseModel):
    bank_id: str
    name: str | None = None
    disposition: Disposition
    mission: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    fact_count: int | None = None
    last_write_at: str | None = None


class BankList(BaseModel):
    banks: list[BankListItem]
    total: int
    limit: int
    offset: int


class BankStats(BaseModel):
    """The reference's bank statistics from our counts: nodes are memory units, links are a
    unit's entity mentions (`entity`) and an extracted fact's sources (`source`); we have no
    observations or consolidation, so those counts are 0."""

    bank_id: str
    total_nodes: int
    total_links: int
    total_documents: int
    nodes_by_fact_type: dict[str, int]
    links_by_link_type: dict[str, int]
    links_by_fact_type: dict[str, int]
    links_breakdown: dict[str, dict[str, int]]
    pending_operations: int
    failed_operations: int
    operations_by_status: dict[str, int]
    last_consolidated_at: str | None = None
    last_memory_write_at: str | None = None
    pending_consolidation: int = 0
    failed_consolidation: int = 0
    total_observations: int = 0


class BankConfigUpdate(Lenient):
    """PATCH /banks/{bank_id}/config: `updates` by the reference's field names (or their
    HINDSIGHT_API_* forms)."""

    updates: dict[str, Any] = Field(max_length=100)


class BankConfig(BaseModel):
    bank_id: str
    config: dict[str, Any] = Field(description="The bank's settings as they apply, with the overrides.")
    overrides: dict[str, Any] = Field(description="What was set for this bank through this route.")
    not_applied: list[str] = Field(
        default_factory=list,
        description="Overrides accepted and kept but not acted on: settings this server does not have.",
    )


class Deleted(BaseModel):
    success: bool = True
    message: str | None = None
    deleted_count: int | None = None


# ---- retain -----------------------------------------------------------------------------------
class EntityIn(Lenient):
    text: str
    type: str | None = None


class MemoryItemIn(Lenient):
    content: str | list[dict[str, Any]]
    timestamp: datetime | str | None = None
    context: str | None = None
    metadata: dict[str, Any] | None = None
    document_id: str | None = None
    entities: list[EntityIn] | None = None
    tags: list[str] | None = None
    update_mode: str | None = None


class RetainIn(Lenient):
    items: list[MemoryItemIn]
    is_async: bool | None = Field(False, alias="async")
    document_tags: list[str] | None = None
    operation_id: str | None = None


class TokenUsage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


class RetainOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    success: bool = True
    bank_id: str
    items_count: int
    is_async: bool = Field(alias="async")
    operation_id: str | None = None
    usage: TokenUsage | None = None
    extraction: str | None = Field(
        None,
        description="Ours, on a synchronous retain with an LLM: succeeded, empty (no fact found), failed, or queued "
        "/ running (still going when the call returned); none offline.",
    )


# ---- recall, reflect, memories ----------------------------------------------------------------
class RecallIn(TagFiltered):
    query: str
    types: list[str] | None = None
    budget: Budget | None = None
    max_tokens: int | None = 4096
    trace: bool | None = False
    query_timestamp: str | None = None
    include: dict[str, Any] | None = None
    tags: list[str] | None = None
    tags_match: TagsMatch | None = None


class RecallScores(BaseModel):
    """Hindsight's per-stage scores of a result (with `trace`): `final` is what results are ranked by;
    `semantic` (cosine similarity) and `keyword` (summed idf of the query words held) are null when
    that arm did not surface the result; there is no reranker."""

    final: float
    reranker: float | None = None
    semantic: float | None = None
    keyword: float | None = None


class RecallResultOut(BaseModel):
    id: str
    text: str
    type: str | None = None
    entities: list[str] | None = None
    context: str | None = None
    occurred_start: str | None = None
    occurred_end: str | None = None
    mentioned_at: str | None = None
    document_id: str | None = None
    metadata: dict[str, str] | None = None
    chunk_id: str | None = None
    tags: list[str] | None = None
    scores: RecallScores | None = None


class RecallOut(BaseModel):
    results: list[RecallResultOut]
    trace: dict[str, Any] | None = None


class ReflectIn(TagFiltered):
    query: str
    budget: Budget | None = None
    context: str | None = None
    max_tokens: int | None = None
    include: dict[str, Any] | None = None
    response_schema: dict[str, Any] | None = None
    tags: list[str] | None = None
    tags_match: TagsMatch | None = None
    on_llm_failure: Literal["error", "extractive"] | None = Field(
        None,
        description="Ours: when the LLM fails, `error` (502/503/504 naming the cause) or `extractive` (the most "
        "relevant memories verbatim, with `mode: extractive` and `llm_error`); default: the server's setting.",
    )


class ReflectFact(BaseModel):
    id: str
    text: str
    type: str | None = None
    context: str | None = None
    occurred_start: str | None = None
    occurred_end: str | None = None
    mentioned_at: str | None = None
    document_id: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, str] | None = None


class ReflectMentalModel(BaseModel):
    id: str
    text: str
    context: str | None = None


class ReflectBasedOn(BaseModel):
    memories: list[ReflectFact] = Field(default_factory=list)
    mental_models: list[ReflectMentalModel] = Field(default_factory=list)
    directives: list[dict[str, Any]] = Field(default_factory=list)


class ReflectOut(BaseModel):
    text: str
    based_on: ReflectBasedOn | None = None
    structured_output: Any = None
    structured_output_error: str | None = None
    usage: TokenUsage | None = None
    mode: Literal["llm", "extractive"] | None = Field(
        None, description="Ours: llm, or extractive (offline mode, or the LLM failed and on_llm_failure allowed it)."
    )
    llm_error: dict[str, str] | None = Field(None, description="Ours: {cause, message} when the LLM failed.")


class MemoryUnit(BaseModel):
    id: str
    text: str | None = None
    context: str | None = None
    date: str | None = None
    fact_type: str | None = None
    type: str | None = None
    document_id: str | None = None
    mentioned_at: str | None = None
    occurred_start: str | None = None
    occurred_end: str | None = None
    entities: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    created_at: str | None = None


class UpdateMemoryIn(Lenient):
    """PATCH /memories/{memory_id}: hindsight-client's UpdateMemoryRequest. Its values are checked
    by our own MemoryUpdate (so errors read the same on both APIs). `resolve_entities` is accepted:
    names are matched to the bank's entities by their canonical form (case and spacing), which is
    what either of its values asks of a hand-written name here."""

    text: str | None = None
    context: str | None = None
    occurred_start: str | None = None
    occurred_end: str | None = None
    mentioned_at: str | None = None
    fact_type: str | None = None
    entities: list[str] | None = None
    resolve_entities: bool = True
    state: str | None = None
    reason: str | None = None


class MemoryUnitList(BaseModel):
    items: list[MemoryUnit]
    total: int
    limit: int
    offset: int


class DocumentOut(BaseModel):
    id: str
    bank_id: str
    original_text: str | None
    content_hash: str | None
    created_at: str
    updated_at: str
    memory_unit_count: int
    tags: list[str] | None = None
    document_metadata: dict[str, Any] | None = None


class DocumentItem(BaseModel):
    id: str
    bank_id: str
    content_hash: str
    created_at: str
    updated_at: str
    text_length: int
    memory_unit_count: int
    document_metadata: dict[str, Any]
    tags: list[str]


class DocumentList(BaseModel):
    items: list[DocumentItem]
    total: int
    limit: int
    offset: int


class Chunk(BaseModel):
    """One unit of a retained document, as the reference's chunk: the id is the memory's."""

    chunk_id: str
    document_id: str
    bank_id: str
    chunk_index: int
    chunk_text: str
    created_at: str


class ChunkList(BaseModel):
    items: list[Chunk]
    total: int
    limit: int
    offset: int


class DocumentDeleted(BaseModel):
    success: bool = True
    message: str
    document_id: str
    memory_units_deleted: int


# ---- mental models ------------------------------------------------------------------------------
class Trigger(Lenient):
    """A model's refresh settings. Ours refreshes when memories carrying all of its tags arrive
    (all_strict, the reference's default for a tagged model); another match is refused rather
    than silently not applied. Schedules and modes are accepted and ignored."""

    tags_match: TagsMatch | None = None
    tag_groups: list[Any] | None = None

    @field_validator("tags_match")
    @classmethod
    def _match(cls, v: str | None) -> str | None:
        if v not in (None, "all_strict"):
            raise ValueError("a mental model draws from memories carrying all of its tags (all_strict) only")
        return v

    _groups = field_validator("tag_groups")(_no_tag_groups)


class MentalModelIn(Lenient):
    id: str | None = None
    name: str
    source_query: str
    tags: list[str] | None = None
    max_tokens: int | None = None
    trigger: Trigger | None = None


class MentalModelPatch(Lenient):
    name: str | None = None
    source_query: str | None = None
    max_tokens: int | None = None
    tags: list[str] | None = None
    trigger: Trigger | None = None


class MentalModelCreated(BaseModel):
    mental_model_id: str
    operation_id: str


class MentalModelOut(BaseModel):
    id: str
    bank_id: str
    name: str
    source_query: str | None = None
    content: str | None = None
    tags: list[str] | None = None
    max_tokens: int | None = None
    last_refreshed_at: str | None = None
    last_refresh_failed_at: str | None = None
    created_at: str | None = None
    is_stale: bool | None = None


class MentalModelList(BaseModel):
    items: list[MentalModelOut]
    total: int
    limit: int
    offset: int


class Submitted(BaseModel):
    operation_id: str
    status: str = "queued"


# ---- operations and system ----------------------------------------------------------------------
class OperationOut(BaseModel):
    id: str
    task_type: str
    operation_id: str
    operation_type: str
    items_count: int
    document_id: str | None = None
    mental_model_id: str | None = None
    created_at: str
    updated_at: str | None = None
    status: str
    error_message: str | None
    retry_count: int | None = None
    next_retry_at: str | None = None


class OperationStatus(BaseModel):
    operation_id: str
    status: str
    operation_type: str | None = None
    id: str | None = None
    task_type: str | None = None
    mental_model_id: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    completed_at: str | None = None
    error_message: str | None = None
    retry_count: int | None = None
    next_retry_at: str | None = None
    result_metadata: dict[str, Any] | None = None


class OperationList(BaseModel):
    bank_id: str
    total: int
    limit: int
    offset: int
    operations: list[OperationOut]


class Cancelled(BaseModel):
    success: bool
    message: str
    operation_id: str


class Features(BaseModel):
    observations: bool = False
    mcp: bool = True
    worker: bool = True
    bank_config_api: bool = True
    bank_llm_health: bool = True
    file_upload_api: bool = True
    document_export_api: bool = True
    document_import_api: bool = True
    audit_log: bool = False
    llm_trace: bool = False
    store_document_text: bool = True


class Version(BaseModel):
    api_version: str
    features: Features


class Liveness(BaseModel):
    status: str = "ok"
    version: str
    uptime_seconds: float


# ---- the rest of the reference's surface ------------------------------------------------------------
class DispositionIn(Lenient):
    skepticism: int = Field(ge=1, le=5)
    literalism: int = Field(ge=1, le=5)
    empathy: int = Field(ge=1, le=5)


class UpdateDispositionIn(Lenient):
    """PUT /banks/{bank_id}/profile: the three traits, all given."""

    disposition: DispositionIn


class AddBackgroundIn(Lenient):
    """POST /banks/{bank_id}/background (deprecated there): text added to the mission."""

    content: str = Field(min_length=1, max_length=4_000)
    update_disposition: bool | None = True


class BackgroundOut(BaseModel):
    mission: str
    background: str | None = None
    disposition: Disposition | None = None


class TemplateMentalModel(Lenient):
    id: str
    name: str
    source_query: str
    tags: list[str] | None = None
    max_tokens: int | None = 2048
    trigger: Trigger | dict[str, Any] | None = None
    content: str | None = Field(
        None, description="Ours: content already written; a new model starts with it instead of a refresh."
    )


class TemplateDirective(Lenient):
    name: str
    content: str
    priority: int | None = 0
    is_active: bool | None = True
    tags: list[str] | None = None


class TemplateIn(Lenient):
    """A bank template manifest (the reference's BankTemplateManifest, version "1")."""

    version: str
    bank: dict[str, Any] | None = None
    mental_models: list[TemplateMentalModel] | None = None
    directives: list[TemplateDirective] | None = None
    name: str | None = Field(None, description="Ours: the bank's display name.")


class TemplateModelOut(BaseModel):
    id: str
    name: str
    source_query: str
    tags: list[str] = Field(default_factory=list)
    max_tokens: int = 2048
    trigger: dict[str, Any] = Field(default_factory=dict)


class TemplateOut(BaseModel):
    version: str = "1"
    bank: dict[str, Any] | None = None
    mental_models: list[TemplateModelOut] | None = None
    directives: list[dict[str, Any]] | None = None


class TemplateImported(BaseModel):
    bank_id: str
    config_applied: bool
    mental_models_created: list[str] = Field(default_factory=list)
    mental_models_updated: list[str] = Field(default_factory=list)
    directives_created: list[str] = Field(default_factory=list)
    directives_updated: list[str] = Field(default_factory=list)
    operation_ids: list[str] = Field(default_factory=list)
    dry_run: bool = False


class LlmOperationHealth(BaseModel):
    operation: str
    ok: bool
    status: str
    latency_ms: float | None = None


class LlmHealthOut(BaseModel):
    bank_id: str
    operations: list[LlmOperationHealth]


class ObservationScope(BaseModel):
    tags: list[str]
    count: int


class ObservationScopes(BaseModel):
    scopes: list[ObservationScope]
    total: int = 0
    limit: int = 100
    offset: int = 0


class ConsolidationIn(Lenient):
    observation_scopes: list[list[str]] | None = None


class ConsolidationOut(BaseModel):
    operation_id: str
    deduplicated: bool = False


class Recovered(BaseModel):
    retried_count: int


class ObservationsCleared(BaseModel):
    deleted_count: int


class DryRunExtractIn(Lenient):
    """POST /memories/dry-run-extract. The reference's prompt settings to A/B (retain_mission,
    extraction mode, chunk size, entity labels, output language) are accepted and not applied:
    this server has one extraction prompt."""

    content: str | list[dict[str, Any]]
    context: str | None = ""
    timestamp: str | None = None


class ExtractedFactOut(BaseModel):
    text: str
    fact_type: str
    occurred_start: str | None = None
    occurred_end: str | None = None
    entities: list[str] = Field(default_factory=list)


class DryRunExtractOut(BaseModel):
    facts: list[ExtractedFactOut]
    usage: TokenUsage


class RefreshScope(BaseModel):
    tags: list[str] | None = None
    tags_match: str
    tag_groups: list[Any] | None = None
    fact_types: list[str] | None = None
    exclude_mental_models: bool = False
    exclude_mental_model_ids: list[str] = Field(default_factory=list)


class RefreshWindow(BaseModel):
    created_after: str | None = None
    created_before: str
    watermark: str | None = None


class FactCounts(BaseModel):
    retrieved: dict[str, int] = Field(default_factory=dict)
    used: dict[str, int] = Field(default_factory=dict)


class RefreshTrace(BaseModel):
    recorded_at: str | None = None
    effective_mode: str
    mode_fallback_reason: str | None = None
    outcome: str
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    llm_calls: list[dict[str, Any]] = Field(default_factory=list)
    usage: TokenUsage | None = None
    duration_ms: int = 0
    warnings: list[str] = Field(default_factory=list)


class DryRunRefreshOut(BaseModel):
    mental_model_id: str
    name: str
    requested_mode: str = "full"
    effective_mode: str = "full"
    mode_fallback_reason: str | None = None
    outcome: str
    would_persist: bool
    scope: RefreshScope
    window: RefreshWindow
    facts: FactCounts
    based_on: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    current_content: str
    candidate_content: str
    preview_content: str
    diff: str
    trace: RefreshTrace
    usage: TokenUsage = Field(default_factory=TokenUsage)
    duration_ms: int = 0
    warnings: list[str] = Field(default_factory=list)


class DocumentPatch(Lenient):
    tags: list[str] | None = None


class Succeeded(BaseModel):
    success: bool = True


class Reprocessed(BaseModel):
    success: bool = True
    operation_id: str
    items_count: int


class OperationDone(BaseModel):
    success: bool
    message: str
    operation_id: str


class Submitted202(BaseModel):
    operation_id: str
    status: str = "pending"


class FilesRetained(BaseModel):
    operation_ids: list[str]


class FilesRequest(Lenient):
    """The `request` field of POST /files/retain (a JSON string): per-file metadata. The
    reference's parser choice is accepted and not applied (this server has one reader per type)."""

    files_metadata: list[dict[str, Any]] | None = None
    parser: str | list[str] | None = None


# ---- directives ---------------------------------------------------------------------------------
class DirectiveIn(Lenient):
    name: str
    content: str
    priority: int = 0
    is_active: bool = True
    tags: list[str] | None = None


class DirectivePatch(Lenient):
    name: str | None = None
    content: str | None = None
    priority: int | None = None
    is_active: bool | None = None
    tags: list[str] | None = None


class DirectiveOut(BaseModel):
    id: str
    bank_id: str
    name: str
    content: str
    priority: int = 0
    is_active: bool = True
    tags: list[str] = Field(default_factory=list)
    created_at: str | None = None
    updated_at: str | None = None


class DirectiveList(BaseModel):
    items: list[DirectiveOut]
    total: int
    limit: int
    offset: int


# ---- entities, graphs, tags, time series --------------------------------------------------------
class EntityListItem(BaseModel):
    id: str
    canonical_name: str
    mention_count: int
    first_seen: str | None = None
    last_seen: str | None = None
    metadata: dict[str, Any] | None = None


class EntityListOut(BaseModel):
    items: list[EntityListItem]
    total: int
    limit: int
    offset: int


class EntityObservation(BaseModel):
    text: str
    mentioned_at: str | None = None


class EntityDetailOut(BaseModel):
    id: str
    canonical_name: str
    mention_count: int
    first_seen: str | None = None
    last_seen: str | None = None
    metadata: dict[str, Any] | None = None
    observations: list[EntityObservation]


class EntityGraphOut(BaseModel):
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    total_entities: int
    total_edges: int
    limit: int


class GraphOut(BaseModel):
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    table_rows: list[dict[str, Any]]
    total_units: int
    limit: int


class TagItem(BaseModel):
    tag: str
    count: int


class TagListOut(BaseModel):
    items: list[TagItem]
    total: int
    limit: int
    offset: int


class TimeBucketOut(BaseModel):
    time: str
    world: int = 0
    experience: int = 0
    observation: int = 0


class TimeseriesOut(BaseModel):
    bank_id: str
    period: str
    trunc: str
    time_field: str = "created_at"
    buckets: list[TimeBucketOut] = Field(default_factory=list)


# ---- the LLM request log ------------------------------------------------------------------------
class LLMRequestEntry(BaseModel):
    id: str
    bank_id: str | None
    operation: str | None
    scope: str | None
    trace_id: str | None
    span_id: str | None
    parent_span_id: str | None
    provider: str | None
    model: str | None
    status: str
    started_at: str | None
    ended_at: str | None
    duration_ms: int | None
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    total_tokens: int | None
    input: Any = None
    output: Any = None
    error: str | None
    llm_info: dict[str, Any]
    metadata: dict[str, Any]


class LLMRequestListOut(BaseModel):
    bank_id: str
    total: int
    limit: int
    offset: int
    items: list[LLMRequestEntry]


class LLMTokenSums(BaseModel):
    input: int
    output: int
    cached: int
    total: int


class LLMStatsBucketOut(BaseModel):
    time: str
    statuses: dict[str, int]
    total: int
    tokens: LLMTokenSums


class LLMStatsOut(BaseModel):
    bank_id: str
    period: str
    trunc: str
    start: str
    buckets: list[LLMStatsBucketOut]


# ---- webhooks -----------------------------------------------------------------------------------
class WebhookHttpConfig(Lenient):
    method: str = "POST"
    timeout_seconds: int = 30
    headers: dict[str, str] = Field(default_factory=dict)
    params: dict[str, str] = Field(default_factory=dict)


class WebhookIn(Lenient):
    url: str
    secret: str | None = None
    event_types: list[str] = Field(default_factory=lambda: ["consolidation.completed"])
    enabled: bool = True
    http_config: WebhookHttpConfig = Field(default_factory=WebhookHttpConfig)


class WebhookPatch(Lenient):
    url: str | None = None
    secret: str | None = None
    event_types: list[str] | None = None
    enabled: bool | None = None
    http_config: WebhookHttpConfig | None = None


class WebhookOut(BaseModel):
    id: str
    bank_id: str | None
    url: str
    secret: str | None = Field(
        None, description="The signing secret the server made, in the answer that made it only; else null."
    )
    event_types: list[str]
    enabled: bool
    http_config: WebhookHttpConfig
    created_at: str | None = None
    updated_at: str | None = None


class WebhookListOut(BaseModel):
    items: list[WebhookOut]
    total: int = Field(description="Webhooks of the bank in all (newer clients page by it).")
    limit: int
    offset: int


class WebhookDeliveryOut(BaseModel):
    id: str
    webhook_id: str | None
    url: str
    event_type: str
    status: str
    attempts: int
    next_retry_at: str | None = None
    last_error: str | None = None
    last_response_status: int | None = None
    last_response_body: str | None = None
    last_attempt_at: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


class WebhookDeliveryListOut(BaseModel):
    items: list[WebhookDeliveryOut]
    next_cursor: str | None = None


# ---- the knowledge base ---------------------------------------------------------------------------
class FolderIn(Lenient):
    name: str
    parent_id: str | None = None


class PageIn(Lenient):
    name: str
    source_query: str
    parent_id: str | None = None
    tags: list[str] | None = None
    max_tokens: int | None = None
    trigger: dict[str, Any] | None = None


class NodePatch(Lenient):
    name: str | None = None
    parent_id: str | None = None
    source_query: str | None = None
    tags: list[str] | None = None
    max_tokens: int | None = None
    trigger: dict[str, Any] | None = None


class KnowledgeNodeOut(BaseModel):
    id: str
    kind: Literal["folder", "page"]
    name: str
    parent_id: str | None = None
    mental_model_id: str | None = None
    managed: bool = False
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    timestamp: str | None = None
    is_stale: bool | None = None
    trigger: dict[str, Any] | None = None
    children: list[KnowledgeNodeOut] = Field(default_factory=list)


class KnowledgeTreeOut(BaseModel):
    roots: list[KnowledgeNodeOut]


class PageCreatedOut(BaseModel):
    page_id: str
    mental_model_id: str
    operation_id: str | None = None


class KnowledgePageOut(BaseModel):
    id: str
    name: str
    type: str
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    timestamp: str | None = None
    body: str | None = None
    markdown: str


class PageSearchHit(BaseModel):
    id: str
    name: str
    mental_model_id: str | None = None
    snippet: str
    score: float
    updated_at: str | None = None


class PageSearchOut(BaseModel):
    results: list[PageSearchHit]
    total: int


class BundleFileOut(BaseModel):
    path: str
    content: str


class BundleOut(BaseModel):
    files: list[BundleFileOut]


# ---- audit log ------------------------------------------------------------------------------------
class AuditLogEntry(BaseModel):
    id: str
    action: str
    transport: str
    bank_id: str | None
    started_at: str | None
    ended_at: str | None
    duration_ms: int | None = None
    request: dict[str, Any] | None = Field(description="method, route and request_id; never a request's content.")
    response: dict[str, Any] | None = Field(description="status and outcome; never a response's content.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="principal, and a system action's counts.")


class AuditLogListResponse(BaseModel):
    bank_id: str
    total: int
    limit: int
    offset: int
    items: list[AuditLogEntry]


class AuditLogStatsBucket(BaseModel):
    time: str
    actions: dict[str, int]
    total: int


class AuditLogStatsResponse(BaseModel):
    bank_id: str
    period: str
    trunc: str
    start: str
    buckets: list[AuditLogStatsBucket]
