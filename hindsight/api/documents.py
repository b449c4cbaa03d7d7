"""REST face of documents: import (files as base64 or text, and URLs), list, get, delete, search."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.knowledge.documents import (
    Document,
    DocumentDeleted,
    DocumentList,
    DocumentListQuery,
    ImportAccepted,
    ImportRequest,
)
from hindsight.engine.knowledge.rag import (
    DocumentSearchRequest,
    DocumentSearchResult,
    RagSearchRequest,
    RagSearchResult,
)
from hindsight.web.end_user import end_user

router = APIRouter(prefix="/v1/banks/{bank_id}/documents", tags=["documents"])


@router.post("", status_code=202, summary="Import files and URLs (an operation; ?wait=true waits for it)")
async def import_documents(
    req: ImportRequest,
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    wait: bool = Query(False),
) -> ImportAccepted:
    return await eng.import_documents(who, bank_id, req, wait)


@router.get("", summary="List documents")
async def list_documents(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    query: DocumentListQuery = Query(),
) -> DocumentList:
    return await eng.list_documents(who, bank_id, query)


@router.post("/search", summary="rag_search over the documents (x-user-id / x-session-tags headers filter access)")
async def search(
    req: RagSearchRequest,
    request: Request,
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
) -> RagSearchResult:
    return await eng.rag_search(who, bank_id, req, end_user(request.headers))


@router.post("/query", summary="Search documents with mode, top_k, strictness/min_score and a filter expression")
async def query(
    req: DocumentSearchRequest,
    request: Request,
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
) -> DocumentSearchResult:
    return await eng.search_documents(who, bank_id, req, end_user(request.headers))


@router.get("/{document_id}", summary="Get one document")
async def get_document(document_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Document:
    return await eng.get_document(who, bank_id, document_id)


@router.delete("/{document_id}", summary="Delete a document and its chunks")
async def delete_document(document_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> DocumentDeleted:
    return await eng.delete_document(who, bank_id, document_id)
