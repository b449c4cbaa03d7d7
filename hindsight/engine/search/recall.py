"""Recall: four arms, each one indexed query, run concurrently and fused with RRF.

- semantic: HNSW cosine search over the query embedding (bank-filtered, iterative scan);
- keyword: full-text match of the content words, ranked by the summed inverse document frequency
  of the words a memory holds (frequencies kept per bank in bank_lexemes);
- entity: memories linked to entities named in the query (any 1-3 word n-gram matched against
  canonical names, so "melanie" finds "Melanie"), ranked by the rarity of the entities they
  share (a speaker named in half the bank counts for little), then similarity; an entity too
  common to read link by link (ENTITY_SCAN_CAP) contributes its memories nearest the query;
- temporal: memories whose occurred window or mention time falls in a window parsed from the
  query ("last May", "in 2023"), ordered by similarity.
Fusion is weighted reciprocal rank fusion; the top hits then bring their neighbouring units (same
document or item, adjacent position) just below them, because in conversations the answer is
often the next turn. The weights were set on LoCoMo (bench/README.md, "Keyword arm: rarity ranking"):
ranking words by rarity was the largest gain, so the keyword arm weighs most.
`mode` narrows this to the semantic arm (vector) or the keyword arm (keyword), without neighbours;
`filter` (filters.py) and the relevance threshold (relevance.py) apply in every mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import time
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from hindsight.db.binder import Binder, Fragment
from hindsight.db.sql import Q, fill
from hindsight.engine.banks.sizes import EXACT_READ_ROWS
from hindsight.engine.memory.records import COLUMNS, to_memory
from hindsight.engine.memory.validity import truth_conditions
from hindsight.engine.rules.tags import tag_condition
from hindsight.engine.search.filters import MEMORY_FIELDS, compile_filter
from hindsight.engine.search.relevance import relevance_of, relevance_sql
from hindsight.engine.search.schemas import RecallRequest, RecallResult
from hindsight.language import cjk
from hindsight.language.entities import canonical
from hindsight.language.time_expressions import TimeWindow, find_time_windows
from hindsight.metrics import RECALL_ARM_SECONDS
from hindsight.text import estimate_tokens

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


RRF_K = 20
ARM_LIMIT = 60
KEYWORD_SCAN_CAP = 3_000
# The entity arm reads the links of the named entities, rarest first, up to this many mentions; a
# commoner entity's memories come from a walk of the vector index (recall_entity_walk). At 3,000
# the entities just under it made the arm's tail (mean 2.4 ms, median 0.8, at 100k with links);
# 1,000 took ~14% off PostgreSQL's time a recall for the same R@10 and R@5 (bench/README.md,
# "Entity arm: a name in every memory").
ENTITY_SCAN_CAP = 1_000
# Lower saved ~0.3 ms a keyword arm at 100k, but each seed past it is a full-text AND that decodes
# every other query word's postings: 32 words, ten of them seeds, took 42 ms instead of 15 at 300
# (bench/README.md, "Keyword arm: fetch fewer seeds whole (measured, not kept)").
SEED_FETCH_ALL = 1_000
# The rarest words of a query the keyword arms rank by: a word beyond them is common and weighs
# little, and each word is one more test of every candidate (a 2,000-character phrase of 667
# distinct words took ~1.9 s a statement, growing with the square of the words).
MAX_QUERY_WORDS = 32
SMALL_BANK = 2_000
# When the time arm's walk of the vector index stops short, the window is ranked exactly from at
# most this many memories mentioned in it and this many that occurred before its end
# (recall_temporal): the whole window unless it is wide, at a cost bounded whatever the query.
TEMPORAL_EXACT_CAP = 5_000
ARM_WEIGHTS = {"semantic": 1.0, "keyword": 2.0, "entity": 0.6, "temporal": 0.8}
NEIGHBOUR_PARENTS = 8
NEIGHBOUR_DECAY = 0.5
# Words of any alphabet (café, Zoë, Straße, Москва) and numbers; CJK runs are set aside first
# (cjk.py makes their lexemes). ASCII-only, "café" was looked up as "caf" and matched nothing.
_WORD = re.compile(r"[^\W_]+")
_NAME_WORD = re.compile(r"(?:[^\W_]|['’\-])+")
_QUERY_STOP = frozenset(
    """
    what when where who whom which why how did does do is are was were the a an of to in on for and
    or with has have had be been at by from about as it its that this there their they he she his
    her him you your i me my we our us can could would should will some any kind
    """.split()
)


def request_filters(req: RecallRequest) -> Fragment:
    """The conditions every arm and the details statement share (tags, types, the filter
    expression, what is true: raw units replaced by their facts, invalidated memories and, unless
    asked, memories a newer one superseded left out), built once and bound into each statement."""
    f = Fragment()
    parts = ["NOT m.superseded", "m.invalidated_at IS NULL", *truth_conditions(req, f)]
    if tagged := tag_condition("m.tags", req.tags, req.tags_match, f):
        parts.append(tagged)
    if req.types:
        parts.append(f"m.kind = ANY({f(list(req.types), 'text[]')})")
    if compiled := compile_filter(req.filter, MEMORY_FIELDS, f):
        parts.append(compiled)
    f.sql = "".join(f" AND {part}" for part in parts)
    return f


def content_words(query: str) -> list[str]:
    """The query's keyword-arm terms: its content words (letters and digits of any alphabet
    written with spaces), and its CJK character pairs (language/cjk.py), each a lexeme of the index
    as it stands. The characters of a CJK date (5月4日, 上周三) are left to the temporal arm: as
    pairs they would match every memory naming any month or weekday."""
    # As written: PostgreSQL lowercases them as it did the index (Python's lower() differs for
    # some letters: "İstanbul", a final "Σ"); compared and deduplicated here in lower case.
    spaced: dict[str, str] = {}
    for w in _WORD.findall(cjk.CJK_RUN.sub(" ", query)):
        low = w.lower()
        if low not in _QUERY_STOP and len(w) > 1:
            spaced.setdefault(low, w)
    latin = list(spaced.values())
    if not cjk.has_cjk(query):
        return latin
    for window in find_time_windows(query, datetime.now(UTC)):
        query = query.replace(window.text, " ")
    return latin + cjk.query_grams(query)


def entity_candidates(query: str) -> list[str]:
    words = [w.lower() for w in _NAME_WORD.findall(cjk.CJK_RUN.sub(" ", query))]
    grams = set()
    for n in (1, 2, 3):
        for i in range(len(words) - n + 1):
            g = canonical(" ".join(words[i : i + n]))
            if n == 1 and (g in _QUERY_STOP or len(g) < 2):
                continue
            grams.add(g)
    return sorted(grams | set(cjk.entity_candidates(query)))


async def fetch_ids(rt: Runtime, sql: str, *params, planned: bool = False) -> list:
    """First column of a query on its own pooled connection, so several run concurrently.
    `planned`: on a connection that plans it for this call's parameters (db/pool.py, Pools)."""
    async with (rt.planned if planned else rt.pool).acquire() as conn:
        return [r[0] for r in await conn.fetch(sql, *params)]


async def semantic_ids(rt: Runtime, bank_id: str, qvec, f: Fragment, sort: bool) -> list:
    """The semantic arm: the bank's memories nearest the query, by a walk of the HNSW index all
    banks share, or (`sort`) by sorting the bank's own rows when it is small beside the others
    (engine/banks/sizes.py; PostgreSQL's planner prices the walk as if the bank filter cost nothing, and
    walked a bank of 5,000 memories beside one of 100,000 at 16-42 ms)."""
    if sort:
        p = Binder(bank_id, qvec, ARM_LIMIT, EXACT_READ_ROWS)
        return await fetch_ids(rt, fill(Q.recall_semantic_exact, filter=f.into(p)), *p.values)
    p = Binder(bank_id, qvec, ARM_LIMIT)
    return await fetch_ids(rt, fill(Q.recall_semantic, filter=f.into(p)), *p.values)


async def entity_ids(rt: Runtime, bank_id: str, query: str, qvec, f: Fragment) -> list:
    """The entity arm of a bank that is walked: the memories of the named entities rarest first
    up to ENTITY_SCAN_CAP mentions, ranked (recall_entity); when they are fewer than ARM_LIMIT, the
    memories of the commoner ones nearest the query after them (recall_entity_walk)."""
    p = Binder(bank_id, entity_candidates(query), ARM_LIMIT, qvec, ENTITY_SCAN_CAP)
    sql = fill(Q.recall_entity, filter=f.into(p), rarity=Q.recall_entity_rarity)
    async with rt.pool.acquire() as conn:
        row = await conn.fetchrow(sql, *p.values)
    ids, common = list(row["ids"]), list(row["common"])
    if len(ids) >= ARM_LIMIT or not common:
        return ids
    p = Binder(bank_id, common, ARM_LIMIT - len(ids), qvec, ids)
    return ids + await fetch_ids(rt, fill(Q.recall_entity_walk, filter=f.into(p)), *p.values, planned=True)


def sorted_arms(rt: Runtime, bank_id: str, query: str, qvec, f: Fragment) -> tuple[Awaitable[list], Awaitable[list]]:
    """The semantic and entity arms of a bank that is sorted, from one statement
    (recall_semantic_entity_exact): the entity arm breaks its ties by the distances the sort took,
    instead of reading each linked memory again (bench/README.md, "Semantic and entity arms: one
    sort for a small bank"). The statement's time is observed as each arm's."""
    p = Binder(bank_id, qvec, ARM_LIMIT, EXACT_READ_ROWS, entity_candidates(query))
    sql = fill(Q.recall_semantic_entity_exact, filter=f.into(p), rarity=Q.recall_entity_rarity)

    async def both() -> tuple[list, list]:
        async with rt.pool.acquire() as conn:
            row = await conn.fetchrow(sql, *p.values)
        return list(row["semantic"]), list(row["entity"])

    task = asyncio.ensure_future(_timed(("semantic", "entity"), both()))

    async def arm(i: int) -> list:
        return (await task)[i]

    return arm(0), arm(1)


async def temporal_ids(rt: Runtime, bank_id: str, qvec, f: Fragment, window: TimeWindow) -> list:
    """The temporal arm: memories in the window, nearest the query first.

    Planned for each call's window: a generic plan cannot tell a day from a year, and the one
    PostgreSQL kept on a large bank sorted every memory of a wide window by distance where the
    custom plan walks the HNSW index (bench/README.md, "Keyword and temporal arms: a custom plan
    each call"). A walk of the index that stops short is replaced by an exact ranking of the
    window (recall_temporal), which a bank small beside the others gets without the walk
    (engine/banks/sizes.py)."""
    # Only a bank the exact ranking reads whole skips the walk: of a bigger one it would rank
    # only the first TEMPORAL_EXACT_CAP memories of a wide window.
    sort = await rt.sizes.sorts(bank_id, at_most=TEMPORAL_EXACT_CAP)
    p = Binder(bank_id, qvec, ARM_LIMIT, window.start, window.end, TEMPORAL_EXACT_CAP, sort)
    return await fetch_ids(rt, fill(Q.recall_temporal, filter=f.into(p)), *p.values, planned=True)


async def keyword_ids(rt: Runtime, bank_id: str, words: list[str], f: Fragment) -> list[tuple]:
    """The keyword arm, ranked by the summed inverse document frequency of the query words a
    memory contains (BM25's idf with binary term frequency), as (id, score) pairs: memories of
    equal score (a name alone, held by all of a speaker's turns) share a rank when the arms are
    fused, so the other arms, not the order the rows came in, tell them apart.

    Document frequencies come from bank_lexemes (migration 004), one index lookup per word.
    On a large bank, candidates are the memories holding the rarest words, taken rarest first
    until their frequencies add up to KEYWORD_SCAN_CAP: the rare words carry the weight, so this
    bounds the work (a speaker's name in 30,000 memories) while barely changing what ranks on
    top; the common words still add their small weight to the candidates that have them. The
    arm's cost is about linear in the rows it reads, and it is the slowest arm at 100,000
    memories, so the cap sets the latency of the whole recall; its value trades latency against
    evidence recall (bench/README.md, "Keyword arm: seed cap and common seeds"). A small bank
    reads all its own rows anyway, so every word is a seed.

    On a large bank, a seed found in more than SEED_FETCH_ALL memories is not fetched whole:
    its memories that hold only it all score the same, so any ARM_LIMIT of them will do, and
    those that hold it with another query word come from one full-text AND (the index
    intersects the postings). This returns the same scores as fetching every seed memory while
    reading about a third as many rows (same entry)."""
    # A planned connection (db/pool.py, Pools): the generic plan of the arm's statement cannot see
    # how common the words are, and took several times as long (bench/README.md, "... a custom
    # plan each call").
    async with rt.planned.acquire() as conn:
        present, idf, total = rarest_first(await conn.fetch(Q.recall_word_frequencies, bank_id, words))
        if not present:
            return []
        score = rarity_score(len(present))

        table = keyword_rows(f)

        def statement(seeds: list[tuple[int, str]] | None) -> tuple[str, list]:
            """The arm's statement and values: candidates seeded by `seeds`, or (None) the bank's
            own rows holding any word."""
            p = Binder(bank_id, [w for _, w in present], idf, ARM_LIMIT)
            filters = f.into(p)
            if seeds is not None:
                candidates = seed_candidates(Q.recall_keyword_seed, seeds, p, filters, rows=table)
                return fill(Q.recall_keyword, own="", candidates=candidates, score=score), p.values
            own = fill(Q.recall_keyword_own, rows=table, filter=filters)
            candidates = fill(Q.recall_keyword_own_candidates, match=p(" | ".join(w for _, w in present)))
            return fill(Q.recall_keyword, own=own, candidates=candidates, score=score), p.values

        # The full-text index is shared by all banks: for a small bank next to a big one, reading
        # the big bank's postings costs more than testing the small bank's own rows
        # (bench/README.md, "Keyword arm: seed cap and common seeds").
        sql, values = statement(None if total <= SMALL_BANK else present)
        rows = await conn.fetch(sql, *values)
        left = left_out(present) if not rows and total > SMALL_BANK else []
        if left:
            # Seeds are chosen by the bank's counts, which include the memories the filters (or
            # what is true now: superseded and invalidated ones) leave out: a rare word held only
            # by those emptied the arm. Then the words left out are the seeds. Only then: filling
            # a short list too (as document search does) gave 6 of 308 LoCoMo questions at 100k up
            # to 43 more memories sharing only a common word, whose fused ranks reach a top 10;
            # and a second statement only when needed keeps the usual one as it was (as one
            # statement, +0.2-0.5 ms at 100k; bench/README.md, "Documents: the keyword arm weighs
            # rare words").
            sql, values = statement(left)
            rows = await conn.fetch(sql, *values)
    return [(r[0], r[1]) for r in rows]


# The columns of memory_terms (migration 015), the keyword arm's narrow copy of each memory.
TERM_COLUMNS = frozenset(
    "bank_id id kind tags superseded invalidated_at valid_from valid_to occurred_start occurred_end"
    " mentioned_at created_at tsv".split()
)
_COLUMN = re.compile(r"\bm\.([a-z_]+)")


def keyword_rows(f: Fragment) -> str:
    """The table the keyword arm reads as `m`: memory_terms, whose ~0.3 KB rows cost a quarter less
    to read than the ~2 KB of memories (bench/README.md, "Keyword arm: a narrow table of its own"),
    when the request's filters name only its columns; memories when one names another (context,
    text, document_id, metadata)."""
    return "memory_terms" if set(_COLUMN.findall(f.sql)) <= TERM_COLUMNS else "memories"


def rarest_first(stats: list) -> tuple[list[tuple[int, str]], list[float], int]:
    """From a word-frequencies statement's rows (w, n, total): the words the bank holds as
    (count, word), rarest first (at most MAX_QUERY_WORDS), each one's inverse document frequency
    (BM25's idf), and the number of rows counted in all."""
    present = sorted((r["n"], r["w"]) for r in stats if r["n"] > 0)
    if not present:
        return [], [], 0
    total = max(stats[0]["total"] or 0, present[-1][0])
    present = present[:MAX_QUERY_WORDS]
    return present, [math.log(1 + (total - n + 0.5) / (n + 0.5)) for n, _ in present], total


def rarity_score(words: int, weights: str = "$3::float8[]") -> str:
    """A candidate `c`'s score: the summed idf (`weights`, a float8[] placeholder) of the words
    (q.tq, the statement's parsed words) its tsv holds."""
    return " + ".join(f"(c.tsv @@ q.tq[{i}])::int * ({weights})[{i}]" for i in range(1, words + 1))


def seed_candidates(seed: str, present: list[tuple[int, str]], p: Binder, filters: str, **parts: str) -> str:
    """The candidates `c` (id, tsv) as the union of one statement fragment (`seed`, with /*match*/,
    /*filter*/ and /*limit*/ slots, and any others in `parts`) a seed query (_seed_matches)."""
    seeds = [
        fill(seed, match=p(match), filter=filters, limit=p(limit), **parts)
        for match, limit in zip(*_seed_matches(present))
    ]
    return "(" + " UNION ".join(seeds) + ") c"


def seed_words(present: list[tuple[int, str]]) -> list[str]:
    """The seeds: the rarest words (present is sorted by count) up to KEYWORD_SCAN_CAP rows, at
    least one."""
    seeds: list[str] = []
    scanned = 0
    for count, w in present:
        if seeds and scanned + count > KEYWORD_SCAN_CAP:
            break
        seeds.append(w)
        scanned += count
    return seeds


def left_out(present: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The words (count, word) the seeds leave out, rarest first: seeded in turn when the seeds'
    rows are too few for the caller (their seeds are chosen by counts of rows it may not see)."""
    seeds = set(seed_words(present))
    return [(n, w) for n, w in present if w not in seeds]


def _seed_matches(present: list[tuple[int, str]]) -> tuple[list[str], list[int]]:
    """Full-text queries (and row limits) whose union holds every memory that can rank in the
    keyword arm's top ARM_LIMIT, up to ties, among those holding a seed (seed_words). Words are
    content words (letters and digits, or CJK characters; present in the bank), so they need no
    quoting inside a tsquery."""
    seeds = seed_words(present)
    counts = {w: c for c, w in present}
    small = [s for s in seeds if counts[s] <= SEED_FETCH_ALL]
    matches, limits = ([" | ".join(small)], [KEYWORD_SCAN_CAP]) if small else ([], [])
    for s in seeds:
        if s in small:
            continue
        others = [w for _, w in present if w != s]
        if others:
            matches.append(f"{s} & ({' | '.join(others)})")
            limits.append(KEYWORD_SCAN_CAP)
        matches.append(s)
        limits.append(ARM_LIMIT)
    return matches, limits


def _ranks(hits: list) -> list[tuple]:
    """(rank, id) for an arm's hits: their position, or for (id, score) pairs the mean position of
    the hits with that score, so that tied hits rank alike, neither above nor below the others
    (bench/README.md, "Memory in every language": a speaker's name ties all their turns, and the
    row order broke the tie; the first position for all lost 0.015 R@10 on LoCoMo, the mean
    gains 0.004)."""
    if not hits or not isinstance(hits[0], tuple):
        return list(enumerate(hits))
    span: dict = {}
    for i, (_, score) in enumerate(hits):
        first, _ = span.get(score, (i, i))
        span[score] = (first, i)
    return [(sum(span[score]) / 2, mid) for mid, score in hits]


async def _timed(arms: str | tuple[str, ...], query):
    """One arm's query (or one statement serving several arms), its time observed for each arm in
    /metrics (hindsight_recall_arm_seconds)."""
    start = time.perf_counter()
    try:
        return await query
    finally:
        took = time.perf_counter() - start
        for arm in (arms,) if isinstance(arms, str) else arms:
            RECALL_ARM_SECONDS.labels(arm).observe(took)


async def recall(rt: Runtime, bank_id: str, req: RecallRequest) -> RecallResult:
    base = req.query_timestamp or datetime.now(UTC)
    if base.tzinfo is None:
        base = base.replace(tzinfo=UTC)
    f = request_filters(req)

    arms: dict[str, Awaitable[list]] = {}
    hybrid = req.mode == "hybrid"
    words = content_words(req.query)
    if words and req.mode != "vector":
        # The keyword arm needs no embedding: it runs in the database while the model embeds
        # the query (the slowest arm on a large bank, so this shortens the whole call). It pays
        # because a query runs on one ONNX thread; with two they competed with PostgreSQL.
        arms["keyword"] = asyncio.ensure_future(_timed("keyword", keyword_ids(rt, bank_id, words, f)))
    try:
        qvec = await rt.embedder.query(req.query)
        sort = req.mode != "keyword" and await rt.sizes.sorts(bank_id)
    except BaseException:
        for started in arms.values():  # only the keyword arm runs this early
            if isinstance(started, asyncio.Future):
                started.cancel()
                with contextlib.suppress(BaseException):  # its own error, if it had one, is not this one
                    await started
        raise
    if hybrid and sort:
        arms["semantic"], arms["entity"] = sorted_arms(rt, bank_id, req.query, qvec, f)
    else:
        if req.mode != "keyword":
            arms["semantic"] = _timed("semantic", semantic_ids(rt, bank_id, qvec, f, sort))
        if hybrid:
            arms["entity"] = _timed("entity", entity_ids(rt, bank_id, req.query, qvec, f))
    windows = find_time_windows(req.query, base) if hybrid else []
    if windows:
        arms["temporal"] = _timed("temporal", temporal_ids(rt, bank_id, qvec, f, windows[0]))
    names = [a for a in ARM_WEIGHTS if a in arms]  # a fixed order: ties fuse the same way every time
    ranked = dict(zip(names, await asyncio.gather(*(arms[a] for a in names))))

    scores: dict = {}
    found_by: dict = {}
    for arm, hits in ranked.items():
        weight = ARM_WEIGHTS[arm]
        for rank, mid in _ranks(hits):
            scores[mid] = scores.get(mid, 0.0) + weight / (RRF_K + rank + 1)
            found_by.setdefault(mid, []).append(arm)
    order = sorted(scores, key=scores.__getitem__, reverse=True)
    budget_rows = max(1, min(len(order), req.max_tokens // 8 + NEIGHBOUR_PARENTS * 2))
    order = order[:budget_rows]
    ranked_rows = await _details(rt, bank_id, order, f, scores, found_by, req, qvec)
    floor = req.threshold()
    if floor > 0:
        ranked_rows = [(r, score, rel) for r, score, rel in ranked_rows if rel >= floor]
    if req.top_k is not None:
        ranked_rows = ranked_rows[: req.top_k]
    # Memories are made only for the rows the token budget keeps (making one costs more than
    # anything else done per row; on LoCoMo at 4,096 tokens the budget drops a seventh of the
    # hits at the median, up to two fifths).
    kept, total = [], 0
    for r, score, rel in ranked_rows:
        t = estimate_tokens(r["text"])
        if total + t > req.max_tokens:
            break
        kept.append(to_memory(r, score=score, arms=found_by.get(r["id"], []), relevance=rel))
        total += t
    return RecallResult(bank_id=bank_id, query=req.query, results=kept, total_tokens=total)


async def _details(rt: Runtime, bank_id, order, f: Fragment, scores, found_by, req: RecallRequest, qvec) -> list[tuple]:
    """One round trip: the fused hits, their relevance, plus the neighbours of the best of them;
    returns (row, score, relevance) best first.

    The hits and their neighbours are united by id and each row is read once: a UNION of whole
    rows sorted them on every column, embedding included (bench/README.md, "Recall's PostgreSQL
    statements")."""
    if not order:
        return []
    parents = order[:NEIGHBOUR_PARENTS] if req.mode == "hybrid" else []
    p = Binder(bank_id, order, parents)
    sql = fill(
        Q.recall_details,
        filter=f.into(p),
        columns=COLUMNS,
        relevance=relevance_sql(req.mode, "m.embedding", "m.tsv", p, [qvec], [req.query]),
    )
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(sql, *p.values)
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
        (by_id[mid], round(scored[mid], 6), relevance_of(by_id[mid]["relevance"]))
        for mid in sorted(scored, key=scored.__getitem__, reverse=True)
    ]
