"""rag_search and verify_document_access: the RAG-over-MCP contract over a bank's documents.

Access (documented in the README): a document with no access tags and no allowed users is public;
otherwise the caller sees it when `x-user-id` is among its allowed users or `x-session-tags`
shares at least one tag with it. Every phrase is embedded in one batch; each phrase's semantic and
keyword searches run concurrently; all lists are fused with reciprocal rank fusion (a chunk found
by several phrases and arms rises), deduplicated and cut to `top_k`.
"""
from __future__ import annotations

import asyncio
import json
import re
import uuid

from pydantic import BaseModel, Field

from .errors import InvalidArgument
from .recall import fetch_ids, keyword_query

RRF_K = 60
PER_ARM = 30
MAX_TOP_K = 20


class Caller(BaseModel):
    user_id: str | None = None
    session_tags: list[str] = Field(default_factory=list)


def parse_caller(headers) -> Caller:
    """x-user-id and x-session-tags (a JSON array of strings) from the request headers."""
    raw = headers.get("x-session-tags")
    tags: list[str] = []
    if raw is not None and raw.strip():
        try:
            tags = json.loads(raw)
        except ValueError:
            raise InvalidArgument('x-session-tags: must be a JSON array of strings, e.g. ["department:sales"]',
                                  "x-session-tags") from None
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InvalidArgument("x-session-tags: must be a JSON array of strings", "x-session-tags")
    return Caller(user_id=headers.get("x-user-id") or None, session_tags=tags)


ACCESS_SQL = ("((cardinality(d.tags) = 0 AND cardinality(d.allowed_users) = 0)"
              " OR d.tags && $TAGS::text[] OR $USER::text = ANY(d.allowed_users))")


def _access(first: int) -> str:
    return ACCESS_SQL.replace("$TAGS", f"${first}").replace("$USER", f"${first + 1}")


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
    score: float | None = None


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


def check_phrases(phrases) -> list[str]:
    if not isinstance(phrases, list) or not 1 <= len(phrases) <= 5:
        raise InvalidArgument("search_phrases: give 1 to 5 search phrases", "search_phrases")
    clean = []
    for i, p in enumerate(phrases):
        if not isinstance(p, str) or not p.strip() or len(p) > 2_000:
            raise InvalidArgument(f"search_phrases[{i}]: must be a non-empty string of at most 2,000 characters",
                                  "search_phrases")
        clean.append(p.strip())
    return clean


async def rag_search(engine, bank_id: str, phrases: list[str], caller: Caller, top_k: int = 10) -> RagSearchResult:
    phrases = check_phrases(phrases)
    if not 1 <= top_k <= MAX_TOP_K:
        raise InvalidArgument(f"top_k: must be between 1 and {MAX_TOP_K}", "top_k")
    async with engine.cpu_slots:
        vectors = await asyncio.to_thread(engine.embedder.embed, phrases)
    pool = engine.pool
    access = _access(3)
    lists = []
    for phrase, vec in zip(phrases, vectors):
        lists.append(fetch_ids(
            pool,
            "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id"
            f" WHERE c.bank_id = $1 AND {access} ORDER BY c.embedding <=> $2 LIMIT {PER_ARM}",
            bank_id, vec, caller.session_tags, caller.user_id,
        ))
        tsq = keyword_query(phrase)
        if tsq:
            lists.append(fetch_ids(
                pool,
                "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id, to_tsquery('english', $2) q"
                f" WHERE c.bank_id = $1 AND c.tsv @@ q AND {access} ORDER BY ts_rank_cd(c.tsv, q, 1) DESC LIMIT {PER_ARM}",
                bank_id, tsq, caller.session_tags, caller.user_id,
            ))
    scores: dict = {}
    for ids in await asyncio.gather(*lists):
        for rank, cid in enumerate(ids):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (RRF_K + rank + 1)
    top = sorted(scores, key=scores.get, reverse=True)[:top_k]
    if not top:
        return RagSearchResult(segments=[])
    async with pool.acquire() as conn:
        rows = {r["id"]: r for r in await conn.fetch(
            "SELECT c.id, c.text, c.headline, c.page_start, c.page_end, d.source_name, d.source_type, d.source_url"
            " FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id = ANY($1::uuid[])", top,
        )}
    return RagSearchResult(segments=[
        Segment(segment_uid=str(cid), source_file_name=r["source_name"], source_file_type=r["source_type"],
                headline=r["headline"], segment_summary=summary(r["text"]), raw_text=r["text"],
                source_url=r["source_url"], page_start=r["page_start"], page_end=r["page_end"], score=round(scores[cid], 6))
        for cid in top if (r := rows.get(cid)) is not None
    ])


async def verify_document_access(engine, bank_id: str, segment_uid: str, caller: Caller) -> AccessResult:
    """Checked with the caller's *current* headers; a deleted document or lost tag denies access."""
    try:
        sid = uuid.UUID(str(segment_uid))
    except ValueError:
        return AccessResult(has_access=False, error="unknown segment_uid")
    async with engine.pool.acquire() as conn:
        r = await conn.fetchrow(
            f"SELECT d.source_url, {_access(3)} AS ok FROM chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE c.bank_id = $1 AND c.id = $2",
            bank_id, sid, caller.session_tags, caller.user_id,
        )
    if r is None:
        return AccessResult(has_access=False, error="segment not found: its document was deleted or re-imported")
    if not r["ok"]:
        return AccessResult(has_access=False, error="access denied: the current session tags and user id do not grant access")
    return AccessResult(has_access=True, refreshed_url=r["source_url"], access_level="view")
