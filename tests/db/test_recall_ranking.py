"""Recall's ranking statement (recall_ranked, engine/search/details.py) on the real PostgreSQL:
score-level fusion with each memory's neighbours and source, the order of equal scores, and the
cut. The statement is checked against the ranking written out in Python here (`reference`, the
formula of engine/search/fusion.py) on a bank of random memories: random vectors (one of zeros),
texts of a small vocabulary, sources with repeated positions, a memory the filters leave out, a
time window; each result must come back in the same order with the same scores, to the last bit.
"""

from __future__ import annotations

import dataclasses
import math
import random
import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import asyncpg
import numpy as np
import pytest
from pgvector.asyncpg import register_vector

from hindsight.engine.search.arms.semantic import semantic_ids
from hindsight.engine.search.budget import cut
from hindsight.engine.search.conditions import request_filters
from hindsight.engine.search.details import Limits, Ranking, Words, ranked_statement, read_ranked
from hindsight.engine.search.fusion import CONTEXT_LEADS, KEYWORD_LEADS, Weights, weights_for
from hindsight.engine.search.relevance import relevance_from
from hindsight.engine.search.schemas import RecallRequest
from hindsight.language.time_expressions import TimeWindow
from hindsight.text import tokens_of_chars

from conftest import migrated_database

DIM = 384
VOCAB = "ferry harbour lighthouse violin garden recipe marathon museum winter letter river bakery".split()
FILLER = "the a we went saw said about then later again there with our".split()
BANK, OTHER = "ranked", "elsewhere"
START = datetime(2024, 1, 1, tzinfo=UTC)
EVERYTHING = Limits(floor=0.0, top_k=None, max_tokens=10**9)


def _memories(rng: random.Random) -> list[dict]:
    """~150 memories in 12 sources; some positions repeat (a document retained in two calls),
    one memory has a vector of zeros, a few are superseded (left out by the default filters)."""
    out = []
    vectors = np.random.default_rng(rng.randrange(2**32))
    for source in range(12):
        positions = list(range(rng.randint(6, 16)))
        positions += rng.sample(positions, 2)  # repeated positions
        for position in positions:
            words = rng.choices(VOCAB, k=rng.randint(0, 4)) + rng.choices(FILLER, k=rng.randint(1, 12))
            rng.shuffle(words)
            v = vectors.normal(size=DIM).astype(np.float32)
            out.append(
                {
                    "id": uuid.UUID(int=rng.getrandbits(128)),
                    "text": " ".join(words),
                    "embedding": v / np.linalg.norm(v),
                    "source_id": f"doc:{source}",
                    "position": position,
                    "mentioned_at": START + timedelta(days=rng.randrange(365)),
                    "superseded": rng.random() < 0.04,
                }
            )
    out[7]["embedding"] = np.zeros(DIM, dtype=np.float32)
    return out


async def _fill(conn: asyncpg.Connection, rows: list[dict]) -> None:
    await register_vector(conn)
    for bank in (BANK, OTHER):
        await conn.execute("INSERT INTO banks (id) VALUES ($1)", bank)
    await conn.executemany(
        "INSERT INTO memories (id, bank_id, text, kind, embedding, source_id, position, mentioned_at, superseded)"
        " VALUES ($1, $2, $3, 'world', $4, $5, $6, $7, $8)",
        [
            (
                r["id"],
                BANK,
                r["text"],
                r["embedding"],
                r["source_id"],
                r["position"],
                r["mentioned_at"],
                r["superseded"],
            )
            for r in rows
        ],
    )
    await conn.execute("INSERT INTO banks (id) VALUES ('ties')")
    same = np.ones(DIM, dtype=np.float32) / math.sqrt(DIM)
    for mid, text in TIES:
        await conn.execute(
            "INSERT INTO memories (id, bank_id, text, kind, embedding, source_id, position)"
            " VALUES ($1, 'ties', $2, 'world', $3, $4, 0)",
            mid,
            text,
            same,
            f"item:{mid}",
        )
    # A memory of another bank beside one of this bank's sources: never read for this bank.
    await conn.execute(
        "INSERT INTO memories (id, bank_id, text, kind, embedding, source_id, position)"
        " VALUES ($1, $2, 'ferry harbour', 'world', $3, 'doc:0', 1)",
        OTHER_ID,
        OTHER,
        np.ones(DIM, dtype=np.float32) / math.sqrt(DIM),
    )


OTHER_ID = uuid.UUID(int=1)
MEMORIES = _memories(random.Random(51))
# Memories of equal score (one vector): the one holding more distinct words first, then the lower id.
TIES = [(uuid.UUID(int=4), "garden"), (uuid.UUID(int=2), "garden river museum"), (uuid.UUID(int=3), "garden")]


@pytest.fixture(scope="module")
def ranking_db(pg_url):
    return migrated_database(pg_url, "recall_ranking", lambda conn: _fill(conn, MEMORIES))


@pytest.fixture
async def conn(ranking_db):
    c = await asyncpg.connect(ranking_db)
    await register_vector(c)
    yield c
    await c.close()


def own_score(r, w: Weights, best: float) -> float:
    """A row's own score (fusion.py's base) as the statement reads it, its keyword score scaled by
    `best`; a NaN similarity (a vector of zeros) counts as 0."""
    similarity = r["similarity"] if math.isfinite(r["similarity"]) else 0.0
    scale = w.keyword / best if best > 0 else 0.0
    return w.semantic * similarity + scale * r["keyword"] + (w.time if r["in_window"] else 0.0)


def reference(rows: list, w: Weights) -> list[tuple]:
    """The ranking by fusion.py's formula, from each row's similarity, keyword score and time
    flag as the statement read them: (id, base, neighbour, source, score), best first."""
    best = max(r["keyword"] for r in rows)
    base = {r["id"]: own_score(r, w, best) for r in rows}
    at: dict[tuple, float] = {}
    in_source: dict[str, float] = {}
    for r in rows:
        b = base[r["id"]]
        at[(r["source_id"], r["position"])] = max(at.get((r["source_id"], r["position"]), b), b)
        in_source[r["source_id"]] = max(in_source.get(r["source_id"], b), b)
    out: list[tuple] = []
    for r in rows:
        b = base[r["id"]]
        if not w.context:
            out.append((r["id"], b, None, None, b, r["words"]))
            continue
        near = [at[k] for k in ((r["source_id"], r["position"] - 1), (r["source_id"], r["position"] + 1)) if k in at]
        neighbour, source = max(near) if near else 0.0, in_source[r["source_id"]]
        out.append((r["id"], b, neighbour, source, b + w.neighbour * neighbour + w.source * source, r["words"]))
    out.sort(key=lambda x: (-x[4], -x[5], x[0]))
    return [x[:5] for x in out]


def _ranking(query: str, hits: list, mode: str = "hybrid", window=None, limits=EVERYTHING, **kw) -> Ranking:
    req = RecallRequest(query=query, mode=mode)
    words = [w for w in VOCAB if w in query.split()]
    rng = random.Random(query)
    weighed = Words(words, [rng.uniform(0.2, 4.0) for _ in words]) if words and mode != "vector" else None
    vector = np.random.default_rng(len(query)).normal(size=DIM).astype(np.float32)
    return Ranking(
        BANK,
        hits,
        request_filters(req),
        mode,
        query,
        vector / np.linalg.norm(vector),
        weighed,
        window,
        weights_for(mode, True),
        limits,
        **kw,
    )


async def _rows(conn, r: Ranking) -> list:
    sql, values = ranked_statement(r)
    return [row for row in await conn.fetch(sql, *values) if row["id"] is not None]


def _hits(seed: int, n: int = 40) -> list:
    return random.Random(seed).sample([m["id"] for m in MEMORIES], n) + [OTHER_ID, uuid.uuid4()]


def leads(rows: list, hits: list, w: Weights) -> list:
    """The hits whose neighbours are read: of the hits the filters keep (among `rows`, as the
    statement read them), the best CONTEXT_LEADS by their own score, its keyword part scaled by
    the best keyword score among them, and the best KEYWORD_LEADS by keyword score (above 0);
    of equal scores the lower id."""
    kept = [r for r in rows if r["id"] in set(hits)]
    best = max((r["keyword"] for r in kept), default=0.0)
    by_own = sorted(kept, key=lambda r: (-own_score(r, w, best), r["id"]))[:CONTEXT_LEADS]
    by_keyword = sorted((r for r in kept if r["keyword"] > 0), key=lambda r: (-r["keyword"], r["id"]))[:KEYWORD_LEADS]
    return by_own + [r for r in by_keyword if r not in by_own]


def _expected_ids(hits: list, context: bool, rows: list | None = None, w: Weights | None = None) -> set:
    """The hits of this bank the filters keep and, with context, the memories just before and
    after each lead (leads(), from the `rows` read with weights `w`) that the filters keep."""
    by_id = {m["id"]: m for m in MEMORIES}
    found = [by_id[h] for h in hits if h in by_id]
    ids = {m["id"] for m in found if not m["superseded"]}
    if context:
        assert rows is not None and w is not None
        places = {(r["source_id"], r["position"] + d) for r in leads(rows, hits, w) for d in (-1, 1)}
        ids |= {m["id"] for m in MEMORIES if (m["source_id"], m["position"]) in places and not m["superseded"]}
    return ids


WINDOW = TimeWindow(START + timedelta(days=100), START + timedelta(days=160), "in spring")


@pytest.mark.parametrize(
    "query, mode, window",
    [
        ("when did we take the ferry to the harbour", "hybrid", None),
        ("the violin and the garden in winter", "hybrid", WINDOW),
        ("museum letter river bakery marathon recipe lighthouse", "hybrid", None),
        ("ferry lighthouse", "vector", None),
        ("garden winter letter", "keyword", None),
        ("nothing of the vocabulary here", "hybrid", None),
    ],
)
async def test_the_statement_ranks_as_the_formula_does(conn, query, mode, window):
    hits = _hits(len(query))
    r = _ranking(query, hits, mode, window)
    rows = await _rows(conn, r)
    assert {row["id"] for row in rows} == _expected_ids(hits, r.weights.context, rows, r.weights)
    want = reference(rows, r.weights)
    got = [(row["id"], row["base"], row["neighbour"], row["source"], row["score"]) for row in rows]
    assert got == want  # the same order and the same floats
    if window is not None:
        assert any(row["in_window"] for row in rows) and not all(row["in_window"] for row in rows)


@pytest.mark.parametrize("floor", [0.0, 0.2, 0.3, 0.45])
@pytest.mark.parametrize("top_k", [None, 1, 7, 30])
@pytest.mark.parametrize("max_tokens", [8, 60, 400])
async def test_the_rows_passed_to_the_cut_hold_all_it_keeps(conn, floor, top_k, max_tokens):
    """The statement passes every row the cut (budget.cut, on each row's relevance rounded as
    results carry it) could keep, so the cut of what it returns is the cut of the whole ranking."""
    query = "ferry harbour violin the garden"
    hits = _hits(7)
    every = await _rows(conn, _ranking(query, hits))

    def kept(rows):
        graded = []
        for row in rows:
            similarity = row["similarity"] if math.isfinite(row["similarity"]) else 0.0
            rel = relevance_from("hybrid", similarity, row["share"]) if math.isfinite(row["similarity"]) else 0.0
            graded.append(((row["id"], row["chars"]), row["score"], rel))
        out, total = cut(graded, max_tokens, top_k, floor, lambda x: tokens_of_chars(x[1]))
        return [x[0][0] for x in out], total

    passed = await _rows(conn, _ranking(query, hits, limits=Limits(floor, top_k, max_tokens)))
    assert kept(passed) == kept(every)
    assert len(passed) <= len(every)


async def test_a_turn_after_a_strong_match_rises_with_it(conn):
    """The memory after a hit is read and gains the hit's score; other sources' are not read."""
    first = next(m for m in MEMORIES if m["position"] == 3 and not m["superseded"] and m["source_id"] == "doc:2")
    rows = await _rows(conn, _ranking("ferry", [first["id"]]))
    by_id = {row["id"]: row for row in rows}
    assert first["id"] in by_id
    after = [row for row in rows if row["position"] in (2, 4)]
    assert after and all(row["source_id"] == "doc:2" for row in rows)
    for row in after:
        assert row["neighbour"] >= by_id[first["id"]]["base"]
        assert row["source"] >= by_id[first["id"]]["base"]


async def test_only_the_best_hits_have_their_neighbours_read(conn):
    """With more hits than CONTEXT_LEADS, a memory beside a weak hit alone is not ranked, and
    each lead's neighbours are."""
    query = "when did we take the ferry to the harbour"
    hits = _hits(17, n=60)
    rows = await _rows(conn, _ranking(query, hits))
    ids = {row["id"] for row in rows}
    chosen = leads(rows, hits, weights_for("hybrid", True))
    assert CONTEXT_LEADS < len(chosen) <= CONTEXT_LEADS + KEYWORD_LEADS  # some leads by keyword alone
    beside = {(m["source_id"], m["position"]): m["id"] for m in MEMORIES if not m["superseded"]}
    around = lambda r: {beside.get((r["source_id"], r["position"] + d)) for d in (-1, 1)} - {None}  # noqa: E731
    assert set().union(*(around(r) for r in chosen)) <= ids
    weak = [r for r in rows if r["id"] in set(hits) and r not in chosen]
    left_out = set().union(*(around(r) for r in weak)) - set().union(*(around(r) for r in chosen)) - set(hits)
    assert left_out and not left_out & ids


async def test_without_context_no_neighbour_is_read_and_none_counts(conn):
    hits = _hits(3)
    rows = await _rows(conn, _ranking("ferry violin", hits, mode="vector"))
    assert {row["id"] for row in rows} == _expected_ids(hits, context=False)
    assert all(row["neighbour"] is None and row["source"] is None and row["score"] == row["base"] for row in rows)


async def test_a_vector_of_zeros_counts_as_no_similarity(conn, ranking_db):
    zero = MEMORIES[7]["id"]
    pools = SimpleNamespace(pool=await asyncpg.create_pool(ranking_db, min_size=1, max_size=1, init=register_vector))
    try:
        read, _ = await read_ranked(pools, _ranking("ferry", [zero]))
    finally:
        await pools.pool.close()
    row = next(x for x in read if x.ranked.id == zero)
    assert math.isnan(row.row["similarity"]) and row.ranked.semantic == 0.0 and row.relevance == 0.0


async def test_nothing_kept_still_reports_the_best_keyword_score(conn, ranking_db):
    query = "ferry harbour garden"
    hits = _hits(11)
    every = await _rows(conn, _ranking(query, hits))
    pools = SimpleNamespace(pool=await asyncpg.create_pool(ranking_db, min_size=1, max_size=1, init=register_vector))
    try:
        read, best = await read_ranked(pools, _ranking(query, hits, limits=Limits(0.99, None, 4096)))
        assert read == [] and best == max(row["keyword"] for row in every) > 0
        assert await read_ranked(pools, _ranking(query, [])) == ([], 0.0)
    finally:
        await pools.pool.close()


async def test_the_semantic_arm_inside_finds_what_it_finds_on_its_own(conn, ranking_db):
    """With semantic_here the bank is sorted in the statement: the same hits, flagged, and the
    same ranking as when the arm ran first."""
    query = "the harbour in winter"
    others = _hits(5, n=20)
    r = _ranking(query, others, semantic_here=True)
    pools = SimpleNamespace(pool=await asyncpg.create_pool(ranking_db, min_size=1, max_size=1, init=register_vector))
    try:
        semantic = await semantic_ids(pools, BANK, r.vector, r.filters, True)
    finally:
        await pools.pool.close()
    inside = await _rows(conn, r)
    apart = await _rows(conn, _ranking(query, list(dict.fromkeys(semantic + others))))

    def same(values):  # NaN (the vector of zeros) equal to itself
        return tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in values)

    assert [same(row) for row in inside] == [same((*tuple(row)[:-1], row["id"] in semantic)) for row in apart]
    assert {row["id"] for row in inside if row["semantic"]} == set(semantic) - {
        m["id"] for m in MEMORIES if m["superseded"]
    }


async def test_of_equal_scores_more_words_go_first_then_the_lower_id(conn):
    r = _ranking("garden", [mid for mid, _ in TIES], mode="vector")
    sql, values = ranked_statement(dataclasses.replace(r, bank_id="ties"))
    rows = [row for row in await conn.fetch(sql, *values)]
    assert len({row["score"] for row in rows}) == 1
    assert [row["id"] for row in rows] == [uuid.UUID(int=2), uuid.UUID(int=3), uuid.UUID(int=4)]
