"""PostgreSQL's CPU for recall's ranking statement (`recall_ranked`) of two code trees, replayed:
steadier than a whole server's figures where a change moves a statement by a tenth of a
millisecond (bench/README.md, "A server holds what it uses").

    git worktree add /tmp/before <commit>                      # both trees must have recall_ranked
    .venv/bin/python bench/replay_ranking.py /tmp/before .     # LoCoMo banks and a bank of 100k
    .venv/bin/python bench/replay_ranking.py /tmp/before . --scale 0 --rounds 8

The LoCoMo conversations are retained (and a bank grown to --scale memories) on a fresh embedded
PostgreSQL, as bench/paired.py does. Each tree's server then answers the same questions (every
8th LoCoMo question, every 20th on the big bank) with `ranked_statement` wrapped to keep each
statement and its values. Then one connection replays them, warm: in each round every tree's
statements (trees in turn, the order alternating), each group twice; printed is the backend's CPU
a statement per round and the median over rounds. PostgreSQL keeps a generic plan of a text
after its fifth run on a connection, as the server's pooled connections do.
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import psutil
from pgvector.asyncpg import register_vector

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import locomo as L  # noqa: E402
import paired  # noqa: E402

from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.testing import machine  # noqa: E402

# Loaded by the server's Python at start-up (PYTHONPATH): the tree's own `hindsight` first on the
# path, then its ranked_statement wrapped to append (bank, statement, values) to REPLAY_CAPTURE.
HOOK = """
import os, pickle, sys
sys.path.insert(0, os.getcwd())
import hindsight.engine.search.details as details
_made = details.ranked_statement
_out = open(os.environ["REPLAY_CAPTURE"], "ab")
def ranked_statement(r):
    sql, values = _made(r)
    pickle.dump((r.bank_id, sql, list(values)), _out)
    _out.flush()
    return sql, values
details.ranked_statement = ranked_statement
"""


def captured(path: Path) -> list[tuple]:
    out = []
    with open(path, "rb") as f:
        while True:
            try:
                out.append(pickle.load(f))
            except EOFError:
                return out


async def capture(tree: Path, url: str, jobs: list, hook: Path, into: Path) -> list[tuple]:
    server = paired.serve(tree, url, {"PYTHONPATH": str(hook), "REPLAY_CAPTURE": str(into)})
    try:
        async with L.Client(server.url) as client:
            for bank, q, when in jobs:
                await L.timed_recall(client, bank, q, when)
    finally:
        server.stop()
    got = captured(into)
    if not got:
        raise SystemExit(f"{tree}: no recall_ranked statement captured (does the tree have ranked_statement?)")
    return got


async def replay(url: str, statements: dict, rounds: int) -> dict:
    conn = await asyncpg.connect(url)
    await register_vector(conn)
    backend = psutil.Process(await conn.fetchval("SELECT pg_backend_pid()"))
    names = list(statements)
    groups = sorted({g for per_tree in statements.values() for g in per_tree})
    cost: dict = {(k, g): [] for k in names for g in groups}
    try:
        for per_tree in statements.values():  # warm: every text planned, its pages read
            for group in per_tree.values():
                for _ in range(6):
                    for _, sql, values in group:
                        await conn.fetch(sql, *values)
        for r in range(rounds):
            for k in names if r % 2 == 0 else names[::-1]:
                for g, group in statements[k].items():
                    t0 = paired.cpu(backend)
                    for _ in range(2):
                        for _, sql, values in group:
                            await conn.fetch(sql, *values)
                    cost[(k, g)].append((paired.cpu(backend) - t0) * 1000 / (2 * len(group)))
    finally:
        await conn.close()
    return cost


async def main(a) -> None:
    trees = {"old": Path(a.old).resolve(), "new": Path(a.new).resolve()}
    data = Path(tempfile.mkdtemp(prefix="hindsight-bench-replay-"))
    pg = EmbeddedPostgres(data, cleanup="delete")
    url = pg.start()
    print("== recall_ranked replayed ==", machine(), time.strftime("%Y-%m-%d %H:%M"), flush=True)
    try:
        first = paired.serve(trees["new"], url)  # it migrates
        try:
            convs = list(L.locomo.locomo_conversations())
            await paired.prepare(url, first, a.scale, convs)
        finally:
            first.stop()
        questions, last = L.asked(convs)
        jobs = {"locomo": [(L.bank_of(q), q["question"], last[q["sample_id"]]) for q in questions[::8]]}
        if a.scale:
            jobs["big"] = [(paired.BIG, q["question"], None) for q in questions[::20]]
        hook = data / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(HOOK)
        statements: dict = {}
        for k, tree in trees.items():
            statements[k] = {}
            for g, group in jobs.items():
                into = data / f"{k}-{g}.pickle"
                statements[k][g] = await capture(tree, url, group, hook, into)
            print(k, tree, {g: len(s) for g, s in statements[k].items()}, "statements", flush=True)
        cost = await replay(url, statements, a.rounds)
    finally:
        pg.stop()
    for (k, g), xs in cost.items():
        print(f"{k:4s} {g:7s} median {statistics.median(xs):.3f} ms a statement; rounds", [round(x, 3) for x in xs])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("old", help="the code tree to compare against")
    ap.add_argument("new", help="the code tree measured")
    ap.add_argument("--scale", type=int, default=100_000, help="grow a bank to this many memories (0: skip)")
    ap.add_argument("--rounds", type=int, default=6, help="replay rounds, the trees alternating")
    asyncio.run(main(ap.parse_args()))
