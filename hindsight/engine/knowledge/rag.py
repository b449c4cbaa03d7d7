"""rag_search and verify_document_access: the RAG-over-MCP contract over a bank's documents.

Access (documented in docs/documents.md): a document with no access tags and no allowed users is public;
otherwise the end_user sees it when `x-user-id` is among its allowed users or `x-session-tags`
shares at least one tag with it. Every phrase is embedded on the query threads (keyword mode
embeds nothing); each phrase's semantic and keyword searches run concurrently; all lists are
fused with reciprocal rank fusion (a chunk found by several phrases and arms rises), deduplicated
and cut to `top_k`. `search_documents` is the same search with every option of
relevance.SearchOptions (mode, threshold, filter), in the result shape of the RAG-over-MCP search
tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from hindsight.db.binder import Binder, Fragment
from hindsight.db.sql import Q, fill
from hindsight.engine.rules.text import Strict
from hindsight.engine.search.arms.running import fetch_walks
from hindsight.engine.search.filters import CHUNK_FIELDS, compile_filter
from hindsight.engine.search.lexical import left_out, rarest_first, rarity_score, seed_candidates
from hindsight.engine.search.relevance import MAX_TOP_K as MAX_SEARCH_TOP_K
from hindsight.engine.search.relevance import SearchOptions, relevance_of, relevance_sql
from hindsight.language.query_terms import content_words

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


RRF_K = 60
PER_ARM = 30
MAX_TOP_K = 20  # rag_search's contract (the seed); search_documents allows relevance.MAX_TOP_K
MAX_PHRASES = 5
MAX_PHRASE_CHARS = 2_000
DEFAULT_TOP_K = 5
DEFAULT_STRICTNESS = 1


def _phrase(v: str) -> str:
    v = v.strip()
    if not v:
        raise ValueError("must not be blank")
    return v


Phrase = Annotated[str, Field(max_length=MAX_PHRASE_CHARS), AfterValidator(_phrase)]


class RagSearchRequest(Strict):
    model_config = ConfigDict(extra="forbid")

    search_phrases: list[Phrase] = Field(
        min_length=1, max_length=MAX_PHRASES, description="1-5 search phrases for semantic retrieval"
    )
    top_k: int = Field(10, ge=1, le=MAX_TOP_K, description="Segments to return (at most 20).")


class DocumentSearchRequest(SearchOptions):
    query: Phrase = Field(description="What to search for (at most 2,000 characters).")
    top_k: int = Field(DEFAULT_TOP_K, ge=1, le=MAX_SEARCH_TOP_K, description="At most this many chunks (1-50).")


class AccessRequest(Strict):
    model_config = ConfigDict(extra="forbid")

    segment_uid: str = Field(description="A segment_uid rag_search returned.")


class EndUser(Strict):
    """The end user a RAG client acts for (x-user-id, x-session-tags): document search shows them
    only the documents their id and tags may see."""

    user_id: str | None = None
    session_tags: list[str] = Field(default_factory=list)


class Segment(BaseModel):
    segment_uid: str
    source_file_name: str
    source_file_type: str
    headline: str | None = None
    segment_summary: str | None = None
    raw_text: str
    source_url: str | None = None
    page_start: int | None = None
    page_end: int | None = None
    score: float | None = Field(None, description="Relevance 0-1.")
    arms: list[str] | None = Field(None, description="Which searches found it: semantic, keyword.")


class RagSearchResult(BaseModel):
    status: str = "success"
    segments: list[Segment]


class AccessResult(BaseModel):
    has_access: bool
    refreshed_url: str | None = None
    access_level: str | None = None
    error: str | None = None


def summary(text: str) -> str:
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(text.split()))
    out = " ".join(sentences[:2])
    return out if len(out) <= 300 else out[:297] + "…"


@dataclass
class ChunkHit:
    """One fused chunk: its row, fused rank score, 0-1 relevance and the arms that found it."""

    row: Any
    score: float
    relevance: float
    arms: list[str]

    @property
    def pages(self) -> list[int]:
        lo, hi = self.row["page_start"], self.row["page_end"]
        return list(range(lo, (hi or lo) + 1)) if lo is not None else []


def keyword_statement(bank_id: str, counts: list[list], end_user: EndUser, filt: Fragment) -> tuple[str, list] | None:
    """The keyword arms of a search's phrases as one statement (chunk_keyword, a branch a phrase
    the bank holds words of), and its values, from each phrase's rows of chunk_word_frequencies;
    None when the bank holds none of the words. One statement, not one a phrase: each phrase's
    text differs, and each was prepared and planned on a round trip of its own."""
    p = Binder(bank_id, end_user.session_tags, end_user.user_id, PER_ARM)
    filters = filt.into(p)
    branches = []
    for k, rows in enumerate(counts):
        present, idf, _ = rarest_first(rows)
        if not present:
            continue
        words, weights = p([w for _, w in present], "text[]"), p(idf, "float8[]")
        score = rarity_score(len(present), weights)
        left = left_out(present)
        wider = ""
        if left:
            wider = fill(
                Q.chunk_keyword_wider, score=score, candidates=seed_candidates(Q.chunk_keyword_seed, left, p, filters)
            )
        candidates = seed_candidates(Q.chunk_keyword_seed, present, p, filters)
        branches.append(
            fill(
                Q.chunk_keyword_branch, phrase=p(k, "int"), words=words, candidates=candidates, score=score, wider=wider
            )
        )
    if not branches:
        return None
    return fill(Q.chunk_keyword, branches=" UNION ALL ".join(branches)), p.values


async def _keyword_lists(rt: Runtime, bank_id: str, words: list[list[str]], end_user: EndUser, filt: Fragment) -> list:
    """Each phrase's keyword arm (chunk ids, best first), from the bank's word frequencies (on a
    fixed connection, as recall's word counts: one plan, db/pool.py, _FIXED); planned for its
    words, as recall's keyword arm is (how common they are sets the plan)."""
    wanted = sorted({w for ws in words for w in ws})
    if not wanted:
        return [[] for _ in words]
    # The keyword search of a phrase asked twice (or with the same words, in the same order) runs once.
    distinct = list(dict.fromkeys(tuple(ws) for ws in words))
    found: list[list] = [[] for _ in distinct]
    async with rt.fixed.acquire() as conn:
        counts = {r["w"]: r for r in await conn.fetch(Q.chunk_word_frequencies, bank_id, wanted)}
    statement = keyword_statement(bank_id, [[counts[w] for w in ws] for ws in distinct], end_user, filt)
    if statement is not None:
        async with rt.planned.acquire() as conn:
            for r in await conn.fetch(statement[0], *statement[1]):
                found[r["phrase"]].append(r["id"])
    return [found[distinct.index(tuple(ws))] for ws in words]


async def search_chunks(
    rt: Runtime,
    bank_id: str,
    phrases: list[str],
    end_user: EndUser,
    opts: SearchOptions,
    top_k: int,
    default_strictness: int = 0,
) -> list[ChunkHit]:
    """Every phrase x arm (semantic, keyword; or one of them per `mode`) on its own connection,
    restricted to documents the end_user may see and to `opts.filter`; fused with RRF."""
    filt = Fragment()
    compiled = compile_filter(opts.filter, CHUNK_FIELDS, filt)
    filt.sql = f" AND {compiled}" if compiled else ""
    # The keyword arms need no vectors: they run while the model embeds the phrases.
    words = [content_words(phrase) if opts.mode != "vector" else [] for phrase in phrases]
    keyword = asyncio.ensure_future(_keyword_lists(rt, bank_id, words, end_user, filt))
    try:
        # On the query threads, as recall's queries (cached, one run a core): through the batch
        # path a search waited for a CPU slot behind imports embedding whole documents (up to 5 s
        # in a chaos drill). Keyword search ranks and scores without vectors, so embeds nothing.
        vectors = [] if opts.mode == "keyword" else await asyncio.gather(*(rt.embedder.query(t) for t in phrases))
    except BaseException:
        keyword.cancel()
        with contextlib.suppress(BaseException):  # its own error, if it had one, is not this one
            await keyword
        raise
    walks = []
    for vec in vectors:  # none in keyword mode
        p = Binder(bank_id, vec, end_user.session_tags, end_user.user_id, PER_ARM)
        walks.append((fill(Q.chunk_semantic, filter=filt.into(p)), p.values))
    # Each names the caller's access, so each is planned for its values (running.fetch_walks).
    by_phrase, nearest = await asyncio.gather(keyword, fetch_walks(rt.pool, walks))
    # Phrase by phrase, semantic then keyword: the order ties of the fused score keep.
    lists: list[tuple[str, list]] = []
    for i, ids in enumerate(by_phrase):
        lists += [("semantic", nearest[i])] if nearest else []
        lists.append(("keyword", ids))
    scores: dict = {}
    found_by: dict = {}
    for arm, ids in lists:
        for rank, cid in enumerate(ids):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (RRF_K + rank + 1)
            found_by.setdefault(cid, set()).add(arm)
    # a threshold may drop some: look at more than we return
    top = sorted(scores, key=scores.__getitem__, reverse=True)[: top_k * 3]
    if not top:
        return []
    p = Binder(bank_id, top)
    sql = fill(Q.chunk_details, relevance=relevance_sql(opts.mode, "c.embedding", "c.tsv", p, list(vectors), phrases))
    async with rt.pool.acquire() as conn:
        rows = {r["id"]: r for r in await conn.fetch(sql, *p.values)}
    floor = opts.threshold(default_strictness)
    hits = [
        ChunkHit(
            row=r,
            score=round(scores[cid], 6),
            relevance=relevance_of(r["relevance"]),
            arms=sorted(found_by[cid], key=["semantic", "keyword"].index),
        )
        for cid in top
        if (r := rows.get(cid)) is not None
    ]
    return [h for h in hits if h.relevance >= floor][:top_k]


async def rag_search(rt: Runtime, bank_id: str, req: RagSearchRequest, end_user: EndUser) -> RagSearchResult:
    hits = await search_chunks(rt, bank_id, req.search_phrases, end_user, SearchOptions(), req.top_k)
    return RagSearchResult(
        segments=[
            Segment(
                segment_uid=str(h.row["id"]),
                source_file_name=h.row["source_name"],
                source_file_type=h.row["source_type"],
                headline=h.row["headline"],
                segment_summary=summary(h.row["text"]),
                raw_text=h.row["text"],
                source_url=h.row["source_url"],
                page_start=h.row["page_start"],
                page_end=h.row["page_end"],
                score=h.relevance,
                arms=h.arms,
            )
            for h in hits
        ]
    )


class ChunkResult(BaseModel):
    """A search_documents hit, in the shape of the RAG-over-MCP search tools (content, file_path,
    chunk_id, score 0-1, page_numbers, vector_type) plus our ids and the arms that found it."""

    content: str
    file_path: str
    chunk_id: str
    chunk_index: int
    document_id: str
    source_type: str
    source_url: str | None = None
    headline: str | None = None
    score: float
    page_numbers: list[int]
    vector_type: str = Field(description="dense when the semantic arm found it, else sparse (full text).")
    arms: list[str]


class SearchMetadata(BaseModel):
    results_number: int
    search_type: str
    collection: str


class DocumentSearchResult(BaseModel):
    results: list[ChunkResult]
    metadata: SearchMetadata


SEARCH_TYPES = {"hybrid": "hybrid_search", "vector": "vector_search", "keyword": "full_text_search"}


async def search_documents(
    rt: Runtime, bank_id: str, req: DocumentSearchRequest, end_user: EndUser
) -> DocumentSearchResult:
    """The knowledge-base search with every option: mode, top_k (default 5), strictness (default 1),
    min_score, filter."""
    hits = await search_chunks(rt, bank_id, [req.query], end_user, req, req.top_k, DEFAULT_STRICTNESS)
    results = [
        ChunkResult(
            content=h.row["text"],
            file_path=h.row["source_name"],
            chunk_id=str(h.row["id"]),
            chunk_index=h.row["position"],
            document_id=str(h.row["document_id"]),
            source_type=h.row["source_type"],
            source_url=h.row["source_url"],
            headline=h.row["headline"],
            score=h.relevance,
            page_numbers=h.pages,
            vector_type="dense" if "semantic" in h.arms else "sparse",
            arms=h.arms,
        )
        for h in hits
    ]
    return DocumentSearchResult(
        results=results,
        metadata=SearchMetadata(results_number=len(results), search_type=SEARCH_TYPES[req.mode], collection=bank_id),
    )


async def verify_document_access(rt: Runtime, bank_id: str, segment_uid: str, end_user: EndUser) -> AccessResult:
    """Checked with the end_user's *current* headers; a deleted document or lost tag denies access."""
    try:
        sid = uuid.UUID(str(segment_uid))
    except ValueError:
        return AccessResult(has_access=False, error="unknown segment_uid")
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(
            Q.chunk_access,
            bank_id,
            sid,
            end_user.session_tags,
            end_user.user_id,
        )
    if r is None:
        return AccessResult(has_access=False, error="segment not found: its document was deleted or re-imported")
    if not r["ok"]:
        return AccessResult(
            has_access=False, error="access denied: the current session tags and user id do not grant access"
        )
    return AccessResult(has_access=True, refreshed_url=r["source_url"], access_level="view")
