"""Retain, recall, reflect and memory browsing in the reference's shape, over the same engine calls
as our own API. What the reference does that we do not (observations, budgets on recall,
chunks and entity observations in recall) is accepted and left out of the answer."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile

from hindsight.api.compat import convert
from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.errors import InvalidArgument
from hindsight.engine.forgetting.schemas import ClearMemories, ForgetMemory, ForgetRetainedDocument
from hindsight.engine.knowledge.file_retain import FileMemory, Upload
from hindsight.engine.memory.curation import MemoryUpdate
from hindsight.engine.memory.extraction import ExtractionPreviewRequest
from hindsight.engine.memory.records import MemoryQuery
from hindsight.engine.memory.sources import SourceChange, SourceQuery
from hindsight.engine.reflection.mental_models import MentalModelQuery
from hindsight.engine.reflection.reflect import ReflectRequest
from hindsight.engine.rules.fields import MAX_OFFSET
from hindsight.engine.rules.tags import TagsMatch
from hindsight.engine.rules.validation import parse
from hindsight.engine.search.schemas import RecallRequest
from hindsight.web.audit import about_bank
from hindsight.web.errors import LLM_ERROR_RESPONSES

router = APIRouter(prefix="/v1/default/banks/{bank_id}", tags=["Hindsight-compatible: memories"])


@router.post(
    "/memories",
    response_model=M.RetainOut,
    response_model_by_alias=True,
    summary="Retain items (async: queued as an operation; else stored, and with an LLM, extracted)",
)
async def retain(body: M.RetainIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    items = convert.retain_items(body)
    if body.is_async:
        return convert.retain_accepted(await eng.retain_later(who, bank_id, items))
    return convert.retain_done(await eng.retain(who, bank_id, items, wait=True))


@router.post("/memories/recall", response_model=M.RecallOut, summary="Recall memories for a query")
async def recall(body: M.RecallIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    known = [t for t in body.types if t in convert.KNOWN_TYPES] if body.types else None
    if body.types and not known:  # only observations asked for: we keep none
        parse(RecallRequest, dict(query=body.query))
        eng.require(who, bank_id)
        return M.RecallOut(results=[])
    req = parse(
        RecallRequest,
        dict(
            query=body.query,
            max_tokens=body.max_tokens,
            tags=convert.as_list(body.tags) or None,
            tags_match=body.tags_match,
            types=known,
            query_timestamp=body.query_timestamp,
            trace=bool(body.trace),
        ),
    )
    result = await eng.recall(who, bank_id, req)
    # Written once, as our own route does: FastAPI's second pass over the answer is skipped.
    return Response(convert.recall_answer(result), media_type="application/json")


@router.post(
    "/reflect",
    response_model=M.ReflectOut,
    summary="Answer a question from the bank's memories",
    responses=LLM_ERROR_RESPONSES,
)
async def reflect(body: M.ReflectIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    req = parse(
        ReflectRequest,
        dict(
            query=body.query,
            context=body.context,
            budget=body.budget,
            tags=convert.as_list(body.tags) or None,
            tags_match=body.tags_match,
            max_tokens=body.max_tokens,
            response_schema=body.response_schema,
            on_llm_failure=body.on_llm_failure,
        ),
    )
    res = await eng.reflect(who, bank_id, req)
    facts: list | None = None
    models: list | None = None
    if body.include is not None and body.include.get("facts") is not None:
        facts = await eng.get_memories(who, bank_id, res.based_on.memories)
        ids = res.based_on.mental_models
        models = (await eng.list_mental_models(who, bank_id, MentalModelQuery(ids=ids))).mental_models if ids else []
    return convert.reflect_out(res, facts, models)


@router.post(
    "/memories/dry-run-extract",
    response_model=M.DryRunExtractOut,
    summary="The facts a retain of this text would store, stored nowhere (needs an LLM; the reference's prompt "
    "settings are not applied)",
    responses=LLM_ERROR_RESPONSES,
)
async def dry_run_extract(body: M.DryRunExtractIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    req = parse(ExtractionPreviewRequest, convert.dry_run_extract_in(body))
    return convert.dry_run_extract_out(await eng.preview_extraction(who, bank_id, req))


@router.post(
    "/files/retain",
    response_model=M.FilesRetained,
    summary="Retain files as memories (txt, md, html, pdf, docx), each by an operation: read, then retained under "
    "its document_id (default: the file's name)",
)
async def retain_files(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    files: list[UploadFile] = File(..., description="The files."),
    request: str = Form("{}", description="A FileRetainRequest as JSON text (files_metadata)."),
):
    metas = [parse(FileMemory, m, f"files_metadata.{i}.") for i, m in enumerate(convert.file_metas(request))]
    uploads = [Upload(name=f.filename or "", content_type=f.content_type, data=f.file) for f in files]
    return M.FilesRetained(operation_ids=await eng.retain_files(who, bank_id, uploads, metas))


@router.get("/memories/list", response_model=M.MemoryUnitList, summary="List memories, newest first")
async def list_memories(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    type: str | None = None,
    q: str | None = None,
    document_id: str | None = None,
    tags: list[str] | None = Query(None),
    tags_match: TagsMatch = "any",
    limit: int = Query(100, ge=0, le=1000),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    if type is not None and type not in convert.KNOWN_TYPES:
        return M.MemoryUnitList(items=[], total=0, limit=limit, offset=offset)
    query = parse(
        MemoryQuery,
        dict(type=type, q=q, document_id=document_id, tags=tags, tags_match=tags_match, limit=limit, offset=offset),
    )
    found = await eng.list_memories(who, bank_id, query)
    return M.MemoryUnitList(
        items=[convert.memory_unit(m) for m in found.memories], total=found.total, limit=limit, offset=offset
    )


@router.delete(
    "/memories",
    response_model=M.Deleted,
    summary="Forget the bank's memories (or those of one type); the bank and its settings stay",
)
async def clear_bank_memories(bank_id: BankPath, who: PrincipalDep, eng: EngineDep, type: str | None = None):
    gone = await eng.clear_memories(who, bank_id, parse(ClearMemories, {"type": type}))
    return M.Deleted(message=f"{gone.memories} memories forgotten", deleted_count=gone.memories)


@router.delete(
    "/memories/{memory_id}",
    response_model=M.Deleted,
    summary="Forget one memory and everything drawn from it (this server's addition)",
)
async def delete_memory(memory_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    gone = await eng.forget_memory(who, bank_id, parse(ForgetMemory, {"memory_id": memory_id}))
    return M.Deleted(message=f"memory {memory_id} forgotten", deleted_count=gone.memories)


@router.get("/memories/{memory_id}", summary="One memory")
async def get_memory(memory_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> dict[str, Any]:
    history = await eng.memory_history(who, bank_id, memory_id)
    return {**convert.curated_unit(history.memory), "history": convert.versions(history)}


@router.patch(
    "/memories/{memory_id}", summary="Curate one memory: edit, invalidate or revert (recorded in its history)"
)
async def update_memory(
    memory_id: str, body: M.UpdateMemoryIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep
) -> dict[str, Any]:
    updated = await eng.update_memory(who, bank_id, memory_id, parse(MemoryUpdate, convert.memory_update(body)))
    return {**convert.curated_unit(updated.memory), "version": updated.version, "changed": updated.changed}


@router.get("/memories/{memory_id}/history", summary="Every version of one memory, oldest first")
async def memory_history(memory_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> dict[str, Any]:
    history = await eng.memory_history(who, bank_id, memory_id)
    return {"memory_id": memory_id, "history": convert.versions(history), "supersedes": history.supersedes}


@router.get("/documents", response_model=M.DocumentList, summary="Retained documents, most recently written first")
async def list_documents(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    q: str | None = None,
    tags: list[str] | None = Query(None),
    tags_match: TagsMatch = "any",
    limit: int = Query(100, ge=0, le=1000),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    query = parse(SourceQuery, dict(q=q, tags=tags, tags_match=tags_match, limit=limit, offset=offset))
    found, total = await eng.list_sources(who, bank_id, query)
    return convert.source_list(found, total, limit, offset)


@router.get(
    "/documents/{document_id:path}/chunks",
    response_model=M.ChunkList,
    summary="The units a retained document was split into, in order",
)
async def list_chunks(
    document_id: str,
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    units, total = await eng.list_source_units(who, bank_id, document_id, limit, offset)
    return convert.chunk_list(units, total, document_id, bank_id, limit, offset)


@router.post(
    "/documents/{document_id:path}/reprocess",
    response_model=M.Reprocessed,
    summary="Retain a document's text again as it was retained (in the background), replacing its memories",
)
async def reprocess_document(document_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    accepted = await eng.reprocess_source(who, bank_id, document_id)
    return M.Reprocessed(operation_id=accepted.operation_id, items_count=accepted.items)


@router.patch(
    "/documents/{document_id:path}",
    response_model=M.Succeeded,
    summary="New tags for a retained document and every memory retained under it",
)
async def update_document(
    document_id: str, body: M.DocumentPatch, bank_id: BankPath, who: PrincipalDep, eng: EngineDep
):
    change = parse(SourceChange, body.model_dump(exclude_unset=True))
    if change.tags is None:
        eng.require(who, bank_id, write=True)
        raise InvalidArgument("body: give at least one field to change (tags)", "tags")
    await eng.update_source(who, bank_id, document_id, change)
    return M.Succeeded()


@router.delete(
    "/documents/{document_id:path}",
    response_model=M.DocumentDeleted,
    summary="Delete a retained document and its memories",
)
async def delete_document(document_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    req = parse(ForgetRetainedDocument, {"document_id": document_id})
    gone = await eng.forget_retained_document(who, bank_id, req)
    return M.DocumentDeleted(
        message=f"document {document_id!r} deleted", document_id=document_id, memory_units_deleted=gone.memories
    )


@router.get(
    "/documents/{document_id:path}", response_model=M.DocumentOut, summary="The text retained under a document_id"
)
async def get_document(document_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.source(await eng.get_source(who, bank_id, document_id))


chunks = APIRouter(prefix="/v1/default/chunks", tags=["Hindsight-compatible: memories"])


@chunks.get(
    "/{chunk_id}",
    response_model=M.Chunk,
    summary="One unit of a retained document by its id (ids are unique across banks), among those the key may read",
)
async def get_chunk(chunk_id: str, request: Request, who: PrincipalDep, eng: EngineDep):
    unit = await eng.get_chunk(who, chunk_id)
    about_bank(request.scope, unit.bank_id)  # its path names no bank: the bank's audit log shows the read
    return convert.chunk_out(unit)
