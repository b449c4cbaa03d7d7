"""Collection tools: thin aliases over banks and documents, for clients written against the
RAG-over-MCP collection servers (list_collections, create_collection, fetch_and_add_document_from_url,
delete_collection, search_rag; list_documents and delete_document are the bank tools, which take
`collection_id` in multi-bank mode). Multi-bank surface only: a collection *is* a bank, so on a
bank URL there is nothing to choose.
"""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, Field

from ..config import valid_bank_id
from ..engine import documents
from ..engine.banks import check_bank_id
from ..engine.documents import ImportRequest
from ..engine.errors import InvalidArgument
from ..engine.models import BankCreate
from ..engine.rag import DocumentSearchResult, parse_caller
from ..engine.relevance import SearchOptions
from ..engine.validation import validated
from .tools import Call, tool


def collection_slug(name: str) -> str:
    """`name` itself when it is a valid bank id, else lowercase words joined by hyphens."""
    if valid_bank_id(name):
        return name
    slug = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-_")[:64].strip("-_")
    if not slug:
        raise InvalidArgument(f"name: {name!r} has no letters or digits to make a collection id from", "name")
    return slug


class Collection(BaseModel):
    collection_id: str
    name: str | None = None
    description: str | None = None
    document_count: int = 0
    memory_count: int = 0
    status: str = "active"
    created_at: datetime | None = None


class CollectionList(BaseModel):
    collections: list[Collection]
    total_count: int


class CollectionCreated(BaseModel):
    collection_id: str
    created: bool = Field(description="False when a bank with this id already existed (returned unchanged).")


class CollectionDeleted(BaseModel):
    deleted: bool
    collection_id: str
    documents: int
    memories: int


class UrlAdded(BaseModel):
    collection_id: str
    url: str
    operation_id: str
    status: str = Field(description="succeeded, failed, or queued/running when it outlived the wait.")
    document_id: str | None = None
    chunks: int | None = None
    outcome: str | None = Field(None, description="imported, replaced or unchanged")
    error: str | None = None


@tool(scope="global", read_only=True, idempotent=True)
async def list_collections(call: Call) -> CollectionList:
    """List the document collections (banks) this API key may access, with document counts."""
    banks = await call.engine.list_banks(call.who)
    counts = await documents.counts(call.engine, [b.bank_id for b in banks])
    out = [
        Collection(
            collection_id=b.bank_id,
            name=b.name or b.bank_id,
            description=b.mission,
            document_count=counts.get(b.bank_id, 0),
            memory_count=b.memory_count or 0,
            created_at=b.created_at,
        )
        for b in banks
    ]
    return CollectionList(collections=out, total_count=len(out))


@tool(scope="global", idempotent=True)
async def create_collection(
    call: Call, name: str, description: str = "", chunk_size: int | None = None
) -> CollectionCreated:
    """Create a new, empty collection (a bank). Its id is `name` when that is a valid bank id
    (1-128 of A-Z a-z 0-9 _ - . : @), else a slug of it ("Team Docs!" -> "team-docs"); `description`
    becomes the bank's mission; `chunk_size` (200-20,000 characters) is its default chunk size.
    Returns {collection_id}."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument("name: give the collection a name", "name")
    req = validated(
        BankCreate,
        bank_id=collection_slug(name.strip()),
        name=name.strip(),
        mission=description or None,
        document_chunk_size=chunk_size,
    )
    bank, created = await call.engine.create_bank(call.who, req)
    return CollectionCreated(collection_id=bank.bank_id, created=created)


@tool(scope="global")
async def fetch_and_add_document_from_url(call: Call, url: str, collection_id: str) -> UrlAdded:
    """Fetch a public URL and ingest it as a document of the collection (HTML, PDF, DOCX, text),
    waiting for the import (up to the server's wait limit; then track `operation_id`)."""
    bank_id = check_bank_id(collection_id, "collection_id")
    req = validated(ImportRequest, urls=[url])
    acc = await call.engine.import_documents(call.who, bank_id, req, wait=True)
    out = UrlAdded(collection_id=bank_id, url=url, operation_id=acc.operation_id, status=acc.status)
    files = (acc.result or {}).get("files") or []
    if files:
        f = files[0]
        out.document_id, out.chunks, out.error = f.get("document_id"), f.get("chunks"), f.get("error")
        out.outcome = f["status"] if f["status"] != "failed" else None
        if f["status"] == "failed":
            out.status = "failed"
    return out


@tool(scope="global", destructive=True, idempotent=True)
async def delete_collection(call: Call, collection_id: str, confirm: bool = False) -> CollectionDeleted:
    """Delete an entire collection (the bank: documents, chunks, memories, mental models).
    Requires `confirm: true` and an admin key. Use with caution."""
    bank_id = check_bank_id(collection_id, "collection_id")
    if confirm is not True:
        raise InvalidArgument("confirm: deleting a collection needs confirm=true", "confirm")
    docs = (await documents.counts(call.engine, [bank_id])).get(bank_id, 0)
    memories = await call.engine.delete_bank(call.who, bank_id)
    return CollectionDeleted(deleted=True, collection_id=bank_id, documents=docs, memories=memories)


@tool(scope="global", read_only=True, idempotent=True)
async def search_rag(
    call: Call,
    collectionId: str,
    query: str,
    top_k: int = Field(5, ge=1, le=50),
    min_similarity: float = Field(0.5, ge=0.0, le=1.0),
) -> DocumentSearchResult:
    """Search a collection for relevant information and return matching chunks with citations.
    `min_similarity` (0-1) is the relevance threshold (see search_documents)."""
    bank_id = check_bank_id(collectionId, "collectionId")
    opts = validated(SearchOptions, top_k=top_k, min_score=min_similarity)
    return await call.engine.search_documents(call.who, bank_id, query, parse_caller(call.headers), opts)
