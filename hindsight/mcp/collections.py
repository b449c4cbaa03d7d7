"""Collection tools: thin aliases over banks and documents, for clients written against the
RAG-over-MCP collection servers (list_collections, create_collection, fetch_and_add_document_from_url,
delete_collection, search_rag; list_documents and delete_document are the bank tools, which take
`collection_id` in multi-bank mode). Multi-bank surface only: a collection *is* a bank, so on a
bank URL there is nothing to choose.
"""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hindsight.bank_ids import valid_bank_id
from hindsight.engine.banks.schemas import BankCreate, ChunkSize
from hindsight.engine.errors import InvalidArgument
from hindsight.engine.knowledge.documents import ImportRequest, http_url
from hindsight.engine.knowledge.rag import DocumentSearchRequest, DocumentSearchResult, Phrase
from hindsight.engine.rules.fields import confirmation
from hindsight.engine.rules.text import Strict
from hindsight.engine.rules.validation import parse
from hindsight.engine.search.relevance import MAX_TOP_K
from hindsight.mcp.tools import Call, ToolDef, toolbox

# The collection tools (mcp/catalog.py lists them beside the bank tools).
TOOLS: list[ToolDef] = []
tool = toolbox(TOOLS)


def collection_slug(name: str) -> str:
    """`name` itself when it is a valid bank id, else lowercase words joined by hyphens."""
    if valid_bank_id(name):
        return name
    slug = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-_")[:64].strip("-_")
    if not slug:
        raise InvalidArgument(f"name: {name!r} has no letters or digits to make a collection id from", "name")
    return slug


class CollectionCreate(Strict):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="The collection's name (its id when valid as one).")
    description: str = Field("", max_length=4_000, description="What the collection holds (the bank's mission).")
    chunk_size: int | None = ChunkSize

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("give the collection a name")
        return v.strip()


class UrlImport(Strict):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=4_096, description="A public http(s) URL.")
    collection_id: str = Field(description="The collection (bank) to add it to.")

    _url = field_validator("url")(http_url)


class CollectionDelete(Strict):
    model_config = ConfigDict(extra="forbid")

    collection_id: str = Field(description="The collection (bank) to delete.")
    confirm: confirmation("a collection") = False  # type: ignore[valid-type]


class CollectionSearch(Strict):
    model_config = ConfigDict(extra="forbid")

    collectionId: str = Field(description="The collection (bank) to search.")
    query: Phrase = Field(description="What to search for.")
    top_k: int = Field(5, ge=1, le=MAX_TOP_K, description="At most this many chunks (1-50).")
    min_similarity: float = Field(0.5, ge=0.0, le=1.0, description="Relevance threshold 0-1 (see search_documents).")


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
async def list_collections(call: Call, req: None) -> CollectionList:
    """List the document collections (banks) this API key may access, with document counts."""
    banks = (await call.engine.list_banks(call.who)).banks
    counts = await call.engine.document_counts(call.who, [b.bank_id for b in banks])
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


@tool(CollectionCreate, scope="global", idempotent=True)
async def create_collection(call: Call, req: CollectionCreate) -> CollectionCreated:
    """Create a new, empty collection (a bank). Its id is `name` when that is a valid bank id
    (1-128 of A-Z a-z 0-9 _ - . : @), else a slug of it ("Team Docs!" -> "team-docs"); `description`
    becomes the bank's mission; `chunk_size` (200-20,000 characters) is its default chunk size.
    Returns {collection_id}."""
    bank = parse(
        BankCreate,
        {
            "bank_id": collection_slug(req.name),
            "name": req.name,
            "mission": req.description or None,
            "document_chunk_size": req.chunk_size,
        },
    )
    created = await call.engine.create_bank(call.who, bank)
    return CollectionCreated(collection_id=created.bank.bank_id, created=created.created)


@tool(UrlImport, scope="global", bank_argument="collection_id")
async def fetch_and_add_document_from_url(call: Call, req: UrlImport) -> UrlAdded:
    """Fetch a public URL and ingest it as a document of the collection (HTML, PDF, DOCX, text),
    waiting for the import (up to the server's wait limit; then track `operation_id`)."""
    imp = parse(ImportRequest, {"urls": [req.url]})
    acc = await call.engine.import_documents(call.who, call.bank_id, imp, wait=True)
    out = UrlAdded(collection_id=call.bank_id, url=req.url, operation_id=acc.operation_id, status=acc.status)
    files = (acc.result or {}).get("files") or []
    if files:
        f = files[0]
        out.document_id, out.chunks, out.error = f.get("document_id"), f.get("chunks"), f.get("error")
        out.outcome = f["status"] if f["status"] != "failed" else None
        if f["status"] == "failed":
            out.status = "failed"
    return out


@tool(CollectionDelete, scope="global", destructive=True, idempotent=True, bank_argument="collection_id")
async def delete_collection(call: Call, req: CollectionDelete) -> CollectionDeleted:
    """Delete an entire collection (the bank: documents, chunks, memories, mental models).
    Requires `confirm: true` and an admin key. Use with caution."""
    docs = (await call.engine.document_counts(call.who, [call.bank_id])).get(call.bank_id, 0)
    gone = await call.engine.delete_bank(call.who, call.bank_id)
    return CollectionDeleted(deleted=True, collection_id=call.bank_id, documents=docs, memories=gone.memories_deleted)


@tool(CollectionSearch, scope="global", read_only=True, idempotent=True, bank_argument="collectionId")
async def search_rag(call: Call, req: CollectionSearch) -> DocumentSearchResult:
    """Search a collection for relevant information and return matching chunks with citations.
    `min_similarity` (0-1) is the relevance threshold (see search_documents)."""
    search = parse(DocumentSearchRequest, {"query": req.query, "top_k": req.top_k, "min_score": req.min_similarity})
    return await call.engine.search_documents(call.who, call.bank_id, search, call.end_user)
