"""The knowledge base: a person's and an agent's curated notes in a bank, as pages in folders.

A page is either written (its content is what a person or an agent wrote, kept as is) or
generated (a mental model answers its source query from the bank's memories and keeps it current;
the model's content is the page's, its versions the page's history). A written page is also
retained into the bank, its name then its content, under the document id `kb:<page id>`, so that
recall and reflect find what it says; rewriting it replaces those memories, deleting it removes
them. A generated page is not retained: what it says comes from memories recall already finds,
and retaining it would feed each refresh its own last answer.

Folders nest (at most MAX_DEPTH deep); a bank holds at most MAX_NODES nodes. Deleting a folder
deletes everything under it, pages' memories and mental models with them. Page names are unique
within their folder, in any case. Search ranks pages by a full-text match of their name and
content and by vector similarity (a written page's nearest retained unit, a generated page's
source query), fused by rank.
"""

from __future__ import annotations

import json
import re
import secrets
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hindsight.db.sql import Q, fill
from hindsight.engine.banks.registry import ensure_bank
from hindsight.engine.errors import Conflict, InvalidArgument, NotFound
from hindsight.engine.knowledge.rag import RRF_K
from hindsight.engine.memory.retain import retain
from hindsight.engine.memory.schemas import RetainItem
from hindsight.engine.memory.sources import delete_sources
from hindsight.engine.reflection import mental_models
from hindsight.engine.reflection.mental_models import MentalModelCreate, MentalModelUpdate
from hindsight.engine.rules.fields import clean_tags, not_blank
from hindsight.engine.rules.text import Strict

if TYPE_CHECKING:
    import asyncpg

    from hindsight.engine.runtime import Runtime

MAX_NODES = 2_000
MAX_DEPTH = 16
DOCUMENT = "kb:"  # a written page's memories are retained under this prefix and its id
NODE_ID = re.compile(r"^k[fp]-[0-9a-f]{12}$")
ROOT = "root"  # what an agent may name the top of the tree as (Hindsight's update_knowledge_node)
MIN_SIMILARITY = 0.25
_COLUMNS = Q.kb_node_columns
_NODES = fill(Q.kb_nodes, columns=_COLUMNS)
_GET = fill(Q.kb_node_get, columns=_COLUMNS)
PARENT = Field(None, max_length=64, description="The folder it goes in (a `kf-...` id); none: the top.")


class FolderCreate(Strict):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    parent_id: str | None = PARENT

    _name = field_validator("name")(lambda v: not_blank(v, "name"))


class PageCreate(Strict):
    """A page, written (`content`) or generated (`source_query`): one of the two."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="Unique within its folder.")
    content: str | None = Field(
        None, min_length=1, description="What the page says (markdown), kept as written and retained into the bank."
    )
    source_query: str | None = Field(
        None,
        min_length=1,
        max_length=4_000,
        description="Instead of content: the question the page answers, generated from the bank's memories and "
        "kept current as they change.",
    )
    parent_id: str | None = PARENT
    tags: list[str] = Field(
        default_factory=list,
        description="A written page's memories carry them; a generated page draws only from memories carrying all.",
    )
    max_tokens: int | None = Field(None, ge=64, le=32_768, description="A generated page's longest content.")
    managed: bool = Field(False, description="A client's flag: true for a page it maintains itself.")
    refresh_after_consolidation: bool | None = Field(
        None, description="Accepted from Hindsight's agents: a generated page refreshes whenever new memories arrive."
    )

    _tags = field_validator("tags", mode="before")(clean_tags)
    _blank = field_validator("name", "content", "source_query")(
        lambda v, info: v if v is None else not_blank(v, info.field_name)
    )

    @model_validator(mode="after")
    def _one_kind(self) -> PageCreate:
        if (self.content is None) == (self.source_query is None):
            raise ValueError("give the page's content (a written page) or its source_query (a generated one)")
        if self.content is not None and self.max_tokens is not None:
            raise ValueError("max_tokens is a generated page's: a written page has no source_query")
        return self


class NodeUpdate(Strict):
    """Only what is given changes. `parent_id` given as null (or "root") moves the node to the
    top; a written page takes `content`, a generated one `source_query` and `max_tokens`."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1, max_length=200)
    parent_id: str | None = Field(
        None, max_length=64, description='The folder to move it into; null or "root": the top.'
    )
    content: str | None = Field(None, min_length=1)
    source_query: str | None = Field(None, min_length=1, max_length=4_000)
    tags: list[str] | None = None
    max_tokens: int | None = Field(None, ge=64, le=32_768)
    refresh_after_consolidation: bool | None = Field(None, description="Accepted from Hindsight's agents; no effect.")

    _tags = field_validator("tags", mode="before")(clean_tags)
    _blank = field_validator("name", "content", "source_query")(
        lambda v, info: v if v is None else not_blank(v, info.field_name)
    )


class NodeRef(Strict):
    model_config = ConfigDict(extra="forbid")

    node_id: str = Field(max_length=64, description="A folder's (`kf-...`) or a page's (`kp-...`) id.")


class NodeChange(NodeUpdate, NodeRef):
    """update_knowledge_node's arguments: the node, then what changes."""

    def changes(self) -> NodeUpdate:
        return NodeUpdate.model_construct(
            self.model_fields_set - {"node_id"}, **{k: getattr(self, k) for k in NodeUpdate.model_fields}
        )


class PageRef(Strict):
    model_config = ConfigDict(extra="forbid")

    page_id: str = Field(max_length=64, description="The page's id (`kp-...`), from the tree or a search.")


class KnowledgeSearch(Strict):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=1_000, description="What to look for.")
    limit: int = Field(10, ge=1, le=50, description="Pages at most, best first.")

    _query = field_validator("query")(lambda v: not_blank(v, "query"))


class KnowledgeNode(BaseModel):
    node_id: str
    kind: Literal["folder", "page"]
    name: str
    parent_id: str | None = None
    page_kind: Literal["written", "generated"] | None = Field(None, description="A page's: written or generated.")
    mental_model_id: str | None = Field(None, description="A generated page's mental model.")
    source_query: str | None = None
    tags: list[str] = Field(default_factory=list)
    managed: bool = False
    status: str | None = Field(None, description="A generated page's: pending, ready or failed.")
    is_stale: bool | None = Field(None, description="A generated page with a refresh queued or running.")
    created_at: datetime
    updated_at: datetime = Field(description="A folder's or written page's last change; a generated page's refresh.")
    children: list[KnowledgeNode] = Field(default_factory=list)


class KnowledgeTree(BaseModel):
    roots: list[KnowledgeNode]
    nodes: int = Field(description="Folders and pages in all.")


class KnowledgePage(KnowledgeNode):
    content: str | None = Field(
        None, description="What the page says (a generated page: none until its first refresh)."
    )
    type: str = Field(description="From a `type:<x>` tag, else knowledge-page.")
    markdown: str = Field(description="The page as one markdown document: YAML front matter, then the content.")


class PageCreated(BaseModel):
    page_id: str
    mental_model_id: str | None = None
    operation_id: str | None = Field(
        None, description="A generated page's first refresh; a written page's fact extraction."
    )
    node: KnowledgeNode


class NodeDeleted(BaseModel):
    deleted: bool
    node_id: str
    nodes: int = Field(description="Folders and pages deleted, this one included.")


class PageHit(BaseModel):
    page_id: str
    name: str
    mental_model_id: str | None = None
    snippet: str
    score: float = Field(description="Fused rank score (results are ordered by it).")
    updated_at: datetime


class PageHits(BaseModel):
    results: list[PageHit]
    total: int


class BundleFile(BaseModel):
    path: str
    content: str


class KnowledgeBundle(BaseModel):
    files: list[BundleFile]


# ---- reading ---------------------------------------------------------------------------------------
def _node(r: asyncpg.Record) -> KnowledgeNode:
    generated = r["mental_model_id"] is not None
    return KnowledgeNode(
        node_id=r["id"],
        kind=r["kind"],
        name=r["name"],
        parent_id=r["parent_id"],
        page_kind=None if r["kind"] == "folder" else ("generated" if generated else "written"),
        mental_model_id=r["mental_model_id"],
        source_query=r["source_query"],
        tags=list(r["model_tags"] if generated else r["tags"]),
        managed=r["managed"],
        status=r["model_status"] if generated else None,
        is_stale=(r["pending"] is not None) if generated else (False if r["kind"] == "page" else None),
        created_at=r["created_at"],
        updated_at=(r["last_refreshed_at"] or r["created_at"]) if generated else r["updated_at"],
    )


def _content(r: asyncpg.Record) -> str | None:
    return r["model_content"] if r["mental_model_id"] is not None else r["content"]


def page_type(tags: list[str]) -> str:
    return next((t.removeprefix("type:") for t in tags if t.startswith("type:") and len(t) > 5), "knowledge-page")


def markdown(node: KnowledgeNode, content: str | None) -> str:
    """The page as a markdown document; front matter values are JSON (valid YAML)."""
    front = {
        "id": node.node_id,
        "type": page_type(node.tags),
        "title": node.name,
        "description": node.source_query,
        "tags": node.tags,
        "timestamp": node.updated_at.isoformat(),
    }
    lines = ["---", *(f"{k}: {json.dumps(v)}" for k, v in front.items()), "---", ""]
    return "\n".join(lines) + (content or "") + "\n"


def _page(r: asyncpg.Record) -> KnowledgePage:
    node = _node(r)
    content = _content(r)
    return KnowledgePage(
        **node.model_dump(), content=content, type=page_type(node.tags), markdown=markdown(node, content)
    )


async def tree(rt: Runtime, bank_id: str) -> KnowledgeTree:
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(_NODES, bank_id)
    nodes = {r["id"]: _node(r) for r in rows}
    roots: list[KnowledgeNode] = []
    for n in nodes.values():
        parent = nodes.get(n.parent_id) if n.parent_id else None
        (parent.children if parent is not None else roots).append(n)
    return KnowledgeTree(roots=roots, nodes=len(nodes))


def check_node_id(node_id: str, field: str = "node_id", kind: str | None = None) -> str:
    if not NODE_ID.match(node_id) or (
        kind is not None and not node_id.startswith("kf-" if kind == "folder" else "kp-")
    ):
        what = {"folder": "a folder id (kf-...)", "page": "a page id (kp-...)"}.get(
            kind or "", "a node id (kf-... or kp-...)"
        )
        raise InvalidArgument(f"{field}: {node_id[:70]!r} is not {what}", field)
    return node_id


def _missing(bank_id: str, node_id: str, field: str = "node_id") -> NotFound:
    return NotFound(f"{field}: {node_id} does not exist in the knowledge base of bank {bank_id!r}", field)


async def get_page(rt: Runtime, bank_id: str, page_id: str) -> KnowledgePage:
    check_node_id(page_id, "page_id", "page")
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(_GET, bank_id, page_id)
    if r is None:
        raise _missing(bank_id, page_id, "page_id")
    return _page(r)


async def _get_node(rt: Runtime, bank_id: str, node_id: str) -> KnowledgeNode:
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(_GET, bank_id, node_id)
    if r is None:
        raise _missing(bank_id, node_id)
    return _node(r)


# ---- writing ---------------------------------------------------------------------------------------
async def _check_room(conn, bank_id: str, parent_id: str | None, adding: int = 1) -> None:
    """The bank has room for `adding` more nodes, and the folder they go in exists and is not too deep."""
    if await conn.fetchval(Q.kb_node_count, bank_id) + adding > MAX_NODES:
        raise Conflict(f"the knowledge base of bank {bank_id!r} already holds {MAX_NODES} nodes, the most it may")
    if parent_id is None:
        return
    above = await conn.fetch(Q.kb_ancestors, bank_id, parent_id)
    if not above:
        raise _missing(bank_id, parent_id, "parent_id")
    if above[0]["kind"] != "folder":
        raise InvalidArgument(f"parent_id: {parent_id} is a page; pages go in folders", "parent_id")
    if len(above) >= MAX_DEPTH:
        raise InvalidArgument(f"parent_id: folders nest at most {MAX_DEPTH} deep", "parent_id")


async def _check_name(conn, bank_id: str, parent_id: str | None, name: str, node_id: str | None = None) -> None:
    if await conn.fetchval(Q.kb_page_name_taken, bank_id, parent_id, name, node_id):
        where = f"folder {parent_id}" if parent_id else "the top folder"
        raise Conflict(f"name: a page named {name!r} is already in {where}", "name")


def _parent(parent_id: str | None) -> str | None:
    if parent_id is None or parent_id == ROOT:
        return None
    return check_node_id(parent_id, "parent_id", "folder")


async def create_folder(rt: Runtime, bank_id: str, req: FolderCreate) -> KnowledgeNode:
    parent = _parent(req.parent_id)
    node_id = "kf-" + secrets.token_hex(6)
    async with rt.writes.open(bank_id) as conn:
        await ensure_bank(conn, bank_id)
        await _check_room(conn, bank_id, parent)
        await conn.execute(Q.kb_node_insert, bank_id, node_id, "folder", req.name, parent, None, None, [], False)
    return await _get_node(rt, bank_id, node_id)


def _retained(page_id: str, name: str, content: str, tags: list[str]) -> RetainItem:
    """What a written page retains: its name, then its content, as one timeless item."""
    return RetainItem(
        content=f"{name}\n\n{content}",
        context="knowledge page",
        timestamp="unset",
        tags=tags,
        metadata={"knowledge_page": page_id, "page_name": name},
        document_id=DOCUMENT + page_id,
    )


async def create_page(rt: Runtime, bank_id: str, req: PageCreate) -> PageCreated:
    parent = _parent(req.parent_id)
    page_id = "kp-" + secrets.token_hex(6)
    if req.content is not None:

        async def insert(conn, _result) -> None:
            await _check_room(conn, bank_id, parent)
            await _check_name(conn, bank_id, parent, req.name)
            await conn.execute(
                Q.kb_node_insert, bank_id, page_id, "page", req.name, parent, None, req.content, req.tags, req.managed
            )

        done = await retain(
            rt, bank_id, [_retained(page_id, req.name, req.content, req.tags)], on_commit=insert, actor="knowledge"
        )
        return PageCreated(page_id=page_id, operation_id=done.operation_id, node=await _get_node(rt, bank_id, page_id))
    assert req.source_query is not None  # PageCreate holds one of the two
    model = MentalModelCreate(
        name=req.name, source_query=req.source_query, tags=req.tags, max_tokens=req.max_tokens or 4_096
    )
    vec = await rt.embedder.query(req.source_query)
    async with rt.writes.open(bank_id) as conn:
        await ensure_bank(conn, bank_id)
        await _check_room(conn, bank_id, parent)
        await _check_name(conn, bank_id, parent, req.name)
        made = await mental_models.add_mental_model(rt, conn, bank_id, model, vec)
        await conn.execute(
            Q.kb_node_insert, bank_id, page_id, "page", req.name, parent, made.mental_model_id, None, [], req.managed
        )
    rt.queue.poke()
    return PageCreated(
        page_id=page_id,
        mental_model_id=made.mental_model_id,
        operation_id=made.operation_id,
        node=await _get_node(rt, bank_id, page_id),
    )


async def update_node(rt: Runtime, bank_id: str, node_id: str, req: NodeUpdate) -> KnowledgeNode:
    check_node_id(node_id)
    given = req.model_fields_set - {"refresh_after_consolidation"}
    moving = "parent_id" in given
    parent = _parent(req.parent_id) if moving else None
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(_GET, bank_id, node_id)
    if r is None:
        raise _missing(bank_id, node_id)
    node = _node(r)
    if node.kind == "folder" and given & {"content", "source_query", "tags", "max_tokens"}:
        raise InvalidArgument("a folder has only a name and a parent_id", sorted(given - {"name", "parent_id"})[0])
    if node.page_kind == "written" and given & {"source_query", "max_tokens"}:
        raise InvalidArgument("source_query: a written page has content, not a source query", "source_query")
    if node.page_kind == "generated" and "content" in given:
        raise InvalidArgument("content: a generated page's content comes from its source query", "content")
    name = req.name if req.name is not None else node.name
    where = parent if moving else node.parent_id

    async def place(conn, _result=None) -> None:
        if moving and parent is not None:
            above = await conn.fetch(Q.kb_ancestors, bank_id, parent)
            if any(a["id"] == node_id for a in above):
                raise InvalidArgument("parent_id: a folder cannot move under itself", "parent_id")
            reach = max((d["depth"] for d in await conn.fetch(Q.kb_subtree, bank_id, node_id)), default=1)
            await _check_room(conn, bank_id, parent, adding=0)
            if len(above) + reach > MAX_DEPTH:
                raise InvalidArgument(f"parent_id: folders nest at most {MAX_DEPTH} deep", "parent_id")
        if node.kind == "page" and ({"name", "parent_id"} & given):
            await _check_name(conn, bank_id, where, name, node_id)
        await conn.execute(
            Q.kb_node_update,
            bank_id,
            node_id,
            req.name,
            moving,
            parent,
            req.content,
            req.tags if node.page_kind == "written" else None,
        )

    if node.page_kind == "written" and given & {"name", "content", "tags"}:
        content = req.content if req.content is not None else _content(r)
        tags = req.tags if req.tags is not None else node.tags
        assert content is not None  # a written page always has content
        await retain(rt, bank_id, [_retained(node_id, name, content, tags)], on_commit=place, actor="knowledge")
    else:
        async with rt.writes.open(bank_id) as conn:
            await place(conn)
        if node.page_kind == "generated" and given & {"name", "source_query", "tags", "max_tokens"}:
            assert node.mental_model_id is not None
            change = MentalModelUpdate.model_validate(
                {k: getattr(req, k) for k in ("name", "source_query", "tags", "max_tokens") if k in given}
            )
            await mental_models.update_mental_model(rt, bank_id, node.mental_model_id, change)
    return await _get_node(rt, bank_id, node_id)


async def delete_node(rt: Runtime, bank_id: str, node_id: str) -> NodeDeleted:
    """The node and everything under it: written pages' memories, generated pages' models."""
    check_node_id(node_id)
    async with rt.writes.open(bank_id) as conn:
        under = await conn.fetch(Q.kb_subtree, bank_id, node_id)
        if not under:
            raise _missing(bank_id, node_id)
        await conn.execute(Q.kb_node_delete, bank_id, node_id)
        written = [DOCUMENT + n["id"] for n in under if n["written"]]
        if written:
            await delete_sources(conn, bank_id, written)
        for n in under:
            if n["mental_model_id"] is not None:
                await mental_models.remove_mental_model(conn, bank_id, n["mental_model_id"])
    return NodeDeleted(deleted=True, node_id=node_id, nodes=len(under))


# ---- search and export -------------------------------------------------------------------------------
async def search(rt: Runtime, bank_id: str, req: KnowledgeSearch) -> PageHits:
    """Pages by relevance: the full-text and vector arms, fused by reciprocal rank."""
    vec = await rt.embedder.query(req.query)
    wanted = max(req.limit * 3, 30)
    async with rt.pool.acquire() as conn:
        by_words = await conn.fetch(Q.kb_search_keyword, bank_id, req.query, wanted)
        by_meaning = await conn.fetch(Q.kb_search_vector, bank_id, vec, wanted, MIN_SIMILARITY)
        scores: dict[str, float] = {}
        for rows in (by_words, by_meaning):
            for rank, row in enumerate(rows, 1):
                scores[row["id"]] = scores.get(row["id"], 0.0) + 1.0 / (RRF_K + rank)
        best = sorted(scores, key=lambda i: (-scores[i], i))[: req.limit]
        snippets = {r["id"]: r["snippet"] for r in by_words}
        rows = [await conn.fetchrow(_GET, bank_id, page_id) for page_id in best]
    hits = []
    for r in rows:
        if r is None:  # deleted meanwhile
            continue
        node = _node(r)
        text = snippets.get(node.node_id) or " ".join((_content(r) or "").split())[:240]
        hits.append(
            PageHit(
                page_id=node.node_id,
                name=node.name,
                mental_model_id=node.mental_model_id,
                snippet=text,
                score=round(scores[node.node_id], 6),
                updated_at=node.updated_at,
            )
        )
    return PageHits(results=hits, total=len(scores))


async def export(rt: Runtime, bank_id: str) -> KnowledgeBundle:
    """The knowledge base as markdown files: index.md (the tree, linking each page), one
    `<page id>.md` a page, and `log/<page id>.md` with a generated page's earlier contents."""
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(_NODES, bank_id)
        histories = {
            r["id"]: await conn.fetch(Q.mental_model_history, bank_id, r["mental_model_id"])
            for r in rows
            if r["mental_model_id"] is not None
        }
    nodes = {r["id"]: (_node(r), r) for r in rows}
    children: dict[str | None, list[str]] = {}
    for node_id, (n, _) in nodes.items():
        children.setdefault(n.parent_id if n.parent_id in nodes else None, []).append(node_id)
    index = ["# Knowledge base", ""]

    def walk(parent: str | None, depth: int) -> None:
        for node_id in children.get(parent, []):
            n = nodes[node_id][0]
            line = f"- {n.name}/" if n.kind == "folder" else f"- [{n.name}]({n.node_id}.md)"
            index.append("  " * depth + line)
            walk(node_id, depth + 1)

    walk(None, 0)
    files = [BundleFile(path="index.md", content="\n".join(index) + "\n")]
    for node_id, (n, r) in nodes.items():
        if n.kind != "page":
            continue
        files.append(BundleFile(path=f"{node_id}.md", content=markdown(n, _content(r))))
        versions = histories.get(node_id) or []
        if versions:
            log: list[Any] = [f"# {n.name}: earlier contents", ""]
            for v in versions:
                log += [f"## version {v['version']} ({v['created_at'].isoformat()})", "", v["content"], ""]
            files.append(BundleFile(path=f"log/{node_id}.md", content="\n".join(log)))
    return KnowledgeBundle(files=files)
