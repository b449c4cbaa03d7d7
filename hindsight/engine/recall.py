"""Recall: four arms, each one indexed query, run concurrently and fused with RRF.

- semantic: HNSW cosine search over the query embedding (bank-filtered, iterative scan);
- keyword: full-text OR-query over the content words, ranked by ts_rank_cd;
- entity: memories linked to entities named in the query (any 1-3 word n-gram matched against
  canonical names, so "melanie" finds "Melanie"), ordered by how many they share, then similarity;
- temporal: memories whose occurred window or mention time falls in a window parsed from the
  query ("last May", "in 2023"), ordered by similarity.
Fusion is reciprocal rank fusion; the top hits then bring their neighbouring units (same document
or item, adjacent position), because in conversations the answer is often the next turn.
`mode` narrows this to the semantic arm (vector) or the keyword arm (keyword), without neighbours;
`filter` (filters.py) and the relevance threshold (relevance.py) apply in every mode.
"""
from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone


from .entities import canonical
from .filters import MEMORY_FIELDS, compile_filter
from .memories import COLUMNS, to_memory
from .models import Memory, RecallRequest, RecallResult
from .relevance import relevance_sql
from .temporal import find_time_windows
from .text import estimate_tokens

RRF_K = 60
ARM_LIMIT = 60
COMMON_WORD_ROWS = 1_000
KEYWORD_SCAN_CAP = 5_000
ARM_WEIGHTS = {"semantic": 1.0, "keyword": 0.9, "entity": 0.6, "temporal": 0.8}
NEIGHBOUR_PARENTS = 8
NEIGHBOUR_DECAY = 0.9
_WORD = re.compile(r"[A-Za-z0-9]+")
_QUERY_STOP = {
    "what", "when", "where", "who", "whom", "which", "why", "how", "did", "does", "do", "is",
    "are", "was", "were", "the", "a", "an", "of", "to", "in", "on", "for", "and", "or", "with",
    "has", "have", "had", "be", "been", "at", "by", "from", "about", "as", "it", "its", "that",
    "this", "there", "their", "they", "he", "she", "his", "her", "him", "you", "your", "i", "me",
    "my", "we", "our", "us", "can", "could", "would", "should", "will", "some", "any", "kind",
}


@dataclass
class Filters:
    """SQL fragment and parameters shared by every arm; values are always bind parameters."""

    sql: str = ""
    params: list = field(default_factory=list)

    @classmethod
    def build(cls, req: RecallRequest, first_param: int) -> "Filters":
        parts, params = ["NOT m.superseded"], []
        n = first_param
        if req.tags:
            op = "@>" if req.tags_match == "all" else "&&"
            parts.append(f"m.tags {op} ${n}::text[]")
            params.append(req.tags)
            n += 1
        if req.types:
            parts.append(f"m.kind = ANY(${n}::text[])")
            params.append(list(req.types))
            n += 1
        compiled = compile_filter(req.filter, MEMORY_FIELDS, n)
        if compiled is not None:
            parts.append(compiled.sql)
            params.extend(compiled.params)
        return cls("".join(f" AND {p}" for p in parts), params)


def content_words(query: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(query)]
    return [w for w in dict.fromkeys(words) if w not in _QUERY_STOP and len(w) > 1]


def keyword_query(query: str) -> str | None:
    words = content_words(query)
    return " | ".join(words) if words else None


def entity_candidates(query: str) -> list[str]:
    words = [w.lower() for w in re.findall(r"[A-Za-z0-9'’\-]+", query)]
    grams = set()
    for n in (1, 2, 3):
        for i in range(len(words) - n + 1):
            g = canonical(" ".join(words[i : i + n]))
            if n == 1 and (g in _QUERY_STOP or len(g) < 2):
                continue
            grams.add(g)
    return sorted(grams)


async def fetch_ids(pool, sql: str, *params) -> list:
    """First column of a query on its own pooled connection, so several run concurrently."""
    async with pool.acquire() as conn:
        return [r[0] for r in await conn.fetch(sql, *params)]


async def keyword_ids(pool, bank_id: str, words: list[str], f: Filters) -> list:
    """The keyword arm: an OR query over the words that are rare in this bank.

    Ranking an OR query costs one ts_rank_cd per matching row, so a word found in tens of
    thousands of memories (a speaker's name in a big bank) makes the arm slow while adding
    nothing to the ranking: it is a stopword *here*. Each word's frequency is counted from the
    GIN index, stopping at COMMON_WORD_ROWS; words at that cap are dropped (when all are common,
    they are ANDed instead and ranking stops at KEYWORD_SCAN_CAP candidates). Small banks never
    reach the cap, so their ranking is the plain OR query."""
    async with pool.acquire() as conn:
        counts = await conn.fetch(
            "SELECT w, (SELECT count(*) FROM (SELECT 1 FROM memories m WHERE m.bank_id = $1"
            "  AND m.tsv @@ to_tsquery('english', w) LIMIT $3) x) AS n FROM unnest($2::text[]) w",
            bank_id, words, COMMON_WORD_ROWS,
        )
        rare = [r["w"] for r in counts if 0 < r["n"] < COMMON_WORD_ROWS]
        common = [r["w"] for r in counts if r["n"] >= COMMON_WORD_ROWS]
        if rare:
            tsq = " | ".join(rare)
        elif common:
            tsq = " & ".join(common)
        else:
            return []
        rows = await conn.fetch(
            "SELECT id FROM (SELECT m.id, m.tsv FROM memories m, to_tsquery('english', $2) q"
            f" WHERE m.bank_id = $1 AND m.tsv @@ q{f.sql} LIMIT {KEYWORD_SCAN_CAP}) c, to_tsquery('english', $2) q"
            " ORDER BY ts_rank_cd(c.tsv, q, 1) DESC LIMIT $3",
            bank_id, tsq, ARM_LIMIT, *f.params,
        )
    return [r[0] for r in rows]


async def recall(engine, bank_id: str, req: RecallRequest) -> RecallResult:
    pool = engine.pool
    qvec = await asyncio.to_thread(engine.embedder.embed_query, req.query)
    base = req.query_timestamp or datetime.now(timezone.utc)
    if base.tzinfo is None:
        base = base.replace(tzinfo=timezone.utc)
    f = Filters.build(req, 4)

    arms: dict[str, asyncio.Future] = {}
    hybrid = req.mode == "hybrid"
    if req.mode != "keyword":
        arms["semantic"] = fetch_ids(
            pool,
            "SELECT id FROM (SELECT m.id, m.embedding <=> $2 AS d FROM memories m"
            f" WHERE m.bank_id = $1{f.sql} ORDER BY m.embedding <=> $2 LIMIT $3) s ORDER BY d",
            bank_id, qvec, ARM_LIMIT, *f.params,
        )
    words = content_words(req.query)
    if words and req.mode != "vector":
        arms["keyword"] = keyword_ids(pool, bank_id, words, f)
    if hybrid:
        arms["entity"] = fetch_ids(
            pool,
            "SELECT m.id FROM entities e JOIN memory_entities me ON me.entity_id = e.id"
            " JOIN memories m ON m.id = me.memory_id"
            f" WHERE e.bank_id = $1 AND e.canonical = ANY($2::text[]){f.sql}"
            f" GROUP BY m.id, m.embedding ORDER BY count(*) DESC, m.embedding <=> ${4 + len(f.params)} LIMIT $3",
            bank_id, entity_candidates(req.query), ARM_LIMIT, *f.params, qvec,
        )
    windows = find_time_windows(req.query, base) if hybrid else []
    if windows:
        w = windows[0]
        arms["temporal"] = fetch_ids(
            pool,
            "SELECT m.id FROM memories m WHERE m.bank_id = $1"
            f" AND ((m.occurred_start < ${5 + len(f.params)} AND m.occurred_end > ${4 + len(f.params)})"
            f"  OR (m.mentioned_at >= ${4 + len(f.params)} AND m.mentioned_at < ${5 + len(f.params)})){f.sql}"
            f" ORDER BY m.embedding <=> $2 LIMIT $3",
            bank_id, qvec, ARM_LIMIT, *f.params, w.start, w.end,
        )
    names = list(arms)
    ranked = dict(zip(names, await asyncio.gather(*arms.values())))

    scores: dict = {}
    found_by: dict = {}
    for arm, ids in ranked.items():
        weight = ARM_WEIGHTS[arm]
        for rank, mid in enumerate(ids):
            scores[mid] = scores.get(mid, 0.0) + weight / (RRF_K + rank + 1)
            found_by.setdefault(mid, []).append(arm)
    order = sorted(scores, key=scores.get, reverse=True)
    budget_rows = max(1, min(len(order), req.max_tokens // 8 + NEIGHBOUR_PARENTS * 2))
    order = order[:budget_rows]
    results = await _details(pool, bank_id, order, f, scores, found_by, req, qvec)
    floor = req.threshold()
    if floor > 0:
        results = [m for m in results if (m.relevance or 0.0) >= floor]
    if req.top_k is not None:
        results = results[: req.top_k]
    return RecallResult(bank_id=bank_id, query=req.query, **_cut(results, req.max_tokens))


async def _details(pool, bank_id, order, f: Filters, scores, found_by, req: RecallRequest, qvec) -> list[Memory]:
    """One round trip: the fused hits, their relevance, plus the neighbours of the best of them."""
    if not order:
        return []
    parents = order[:NEIGHBOUR_PARENTS] if req.mode == "hybrid" else []
    n = 4 + len(f.params)
    rel, rel_params = relevance_sql(req.mode, "m.embedding", "m.tsv", n, [qvec], [req.query])
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            f"WITH hits AS (SELECT m.* FROM memories m WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[])),"
            f" parents AS (SELECT source_id, position FROM hits WHERE id = ANY($3::uuid[])),"
            f" nb AS (SELECT m.* FROM memories m JOIN parents p ON m.bank_id = $1"
            f"   AND m.source_id = p.source_id AND m.position IN (p.position - 1, p.position + 1)"
            f"   WHERE true{f.sql})"
            f" SELECT {COLUMNS}, {rel} AS relevance FROM (SELECT * FROM hits UNION SELECT * FROM nb) m",
            bank_id, order, parents, *f.params, *rel_params,
        )
    by_id = {r["id"]: r for r in rows}
    by_pos = {(r["source_id"], r["position"]): r["id"] for r in rows}
    scored: dict = {mid: scores[mid] for mid in order if mid in by_id}
    for parent in parents:
        r = by_id.get(parent)
        if r is None:
            continue
        for pos in (r["position"] - 1, r["position"] + 1):
            nid = by_pos.get((r["source_id"], pos))
            if nid is not None and nid not in scored:
                scored[nid] = scores[parent] * NEIGHBOUR_DECAY
                found_by.setdefault(nid, []).append("neighbour")
    return [
        to_memory(by_id[mid], score=round(scored[mid], 6), arms=found_by.get(mid, []),
                  relevance=round(float(by_id[mid]["relevance"]), 4))
        for mid in sorted(scored, key=scored.get, reverse=True)
    ]


def _cut(results: list[Memory], max_tokens: int) -> dict:
    kept, total = [], 0
    for m in results:
        t = estimate_tokens(m.text)
        if total + t > max_tokens:
            break
        kept.append(m)
        total += t
    return {"results": kept, "total_tokens": total}
