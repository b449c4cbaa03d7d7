"""REST face of documents: import (files as base64 or text, and URLs), list, get, delete, search."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from ..engine.documents import Document, ImportAccepted, ImportRequest
from ..engine.keys import Principal
from ..engine.rag import DocumentSearchResult, RagSearchResult, parse_caller
from ..engine.relevance import SearchOptions
from .deps import bank_path, engine, principal

router = APIRouter(prefix="/v1/banks/{bank_id}/documents", tags=["documents"])


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    search_phrases: list[str] = Field(min_length=1, max_length=5)
    top_k: int = Field(10, ge=1, le=20)


@router.post("", status_code=202, summary="Import files and URLs (an operation; ?wait=true waits for it)")
async def import_documents(
    req: ImportRequest,
    bank_id: str = Depends(bank_path),
    wait: bool = Query(False),
    who: Principal = Depends(principal),
    eng=Depends(engine),
) -> ImportAccepted:
    return await eng.import_documents(who, bank_id, req, wait)


@router.get("", summary="List documents")
async def list_documents(
    bank_id: str = Depends(bank_path),
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0),
    who: Principal = Depends(principal),
    eng=Depends(engine),
) -> dict:
    return {"documents": [d.model_dump(mode="json") for d in await eng.list_documents(who, bank_id, limit, offset)]}


@router.post("/search", summary="rag_search over the documents (x-user-id / x-session-tags headers filter access)")
async def search(
    req: SearchRequest,
    request: Request,
    bank_id: str = Depends(bank_path),
    who: Principal = Depends(principal),
    eng=Depends(engine),
) -> RagSearchResult:
    return await eng.rag_search(who, bank_id, req.search_phrases, parse_caller(request.headers), req.top_k)


class QueryRequest(SearchOptions):
    query: str = Field(min_length=1, max_length=2_000)
    top_k: int = Field(5, ge=1, le=50)


@router.post("/query", summary="Search documents with mode, top_k, strictness/min_score and a filter expression")
async def query(
    req: QueryRequest,
    request: Request,
    bank_id: str = Depends(bank_path),
    who: Principal = Depends(principal),
    eng=Depends(engine),
) -> DocumentSearchResult:
    opts = SearchOptions(**req.model_dump(exclude={"query"}))
    return await eng.search_documents(who, bank_id, req.query, parse_caller(request.headers), opts)


@router.get("/{document_id}", summary="Get one document")
async def get_document(
    document_id: str, bank_id: str = Depends(bank_path), who: Principal = Depends(principal), eng=Depends(engine)
) -> Document:
    return await eng.get_document(who, bank_id, document_id)


@router.delete("/{document_id}", summary="Delete a document and its chunks")
async def delete_document(
    document_id: str, bank_id: str = Depends(bank_path), who: Principal = Depends(principal), eng=Depends(engine)
) -> dict:
    await eng.delete_document(who, bank_id, document_id)
    return {"deleted": True, "document_id": document_id}
