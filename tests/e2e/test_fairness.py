"""One busy bank does not stall the others: while a bulk import and a dozen queued writers load
one bank, a recall on another bank is not kept waiting for a database connection.

The red team's case: the queued writers used to hold the pool's connections while they waited
for the bank's write lock, and a recall on a quiet bank waited 8.2 s. Now a bank's writers queue
in the process (engine/runtime.BankWrites) and hold at most one connection; the test checks that
no connection of the server ever waits on the lock, and that recalls on the quiet bank stay
well under a second (timings on a shared machine vary, so the bound is loose: the failure it
guards against took seconds)."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time

import asyncpg
import httpx
import pytest

from conftest import Server, fresh_database, llm_env, running_app
from support import Runs


def _writer(url: str, bank: str, n: int, until: threading.Event | None, errors: list, stored: list) -> None:
    """Retains batches of `n` items into `bank` until `until` is set (once when it is None)."""
    with httpx.Client(base_url=url, timeout=600) as c:
        r = 0
        while True:
            items = [{"content": f"Round {r} item {i}: the harbour night shift logged boat {i}."} for i in range(n)]
            resp = c.post(f"/v1/banks/{bank}/memories", json={"items": items})
            if resp.status_code == 200:
                stored.append(n)
            else:
                errors.append(resp.text)
            r += 1
            if until is None or until.is_set():
                return


async def _lock_waiters(db_url: str, stop: threading.Event) -> int:
    """The most connections of this database seen at once waiting on an advisory (bank write) lock."""
    conn = await asyncpg.connect(db_url)
    most = 0
    try:
        while not stop.is_set():
            n = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
            )
            most = max(most, n)
            await asyncio.sleep(0.02)
    finally:
        await conn.close()
    return most


def test_a_quiet_bank_is_served_while_another_absorbs_a_bulk_import(pg_url, bank):
    db = fresh_database(pg_url, "fairness")
    s = Server({"HINDSIGHT_API_DATABASE_URL": db}).start()
    busy, quiet = bank + "_busy", bank + "_quiet"
    try:
        with s.http() as c:
            for i in range(20):
                c.post(f"/v1/banks/{quiet}/memories", json={"content": f"Quiet note {i}: Dana waters the ferns."})
            errors: list = []
            stored: list[int] = []
            bulk_done, stop = threading.Event(), threading.Event()

            def bulk():
                _writer(s.url, busy, 5000, None, errors, stored)
                bulk_done.set()

            load = [threading.Thread(target=bulk)]
            load += [
                threading.Thread(target=_writer, args=(s.url, busy, 20, bulk_done, errors, stored)) for _ in range(12)
            ]
            most: list[int] = []
            watcher = threading.Thread(target=lambda: most.append(asyncio.run(_lock_waiters(db, stop))))
            watcher.start()
            for t in load:
                t.start()
            latencies = []
            while not bulk_done.is_set():
                t0 = time.perf_counter()
                r = c.post(f"/v1/banks/{quiet}/recall", json={"query": "Who waters the ferns?"})
                latencies.append(time.perf_counter() - t0)
                assert r.status_code == 200 and r.json()["results"], r.text
                time.sleep(0.05)
            for t in load:
                t.join(600)
            stop.set()
            watcher.join(30)
            total = c.get(f"/v1/banks/{busy}/memories", params={"limit": 1}).json()["total"]
        assert not errors, errors[:3]
        assert total == sum(stored)
        p95 = statistics.quantiles(latencies, n=20)[-1]
        assert most == [0], f"{most} connections waited on a bank's write lock at once"
        assert p95 < 1.0, f"recall on a quiet bank: p95 {p95:.3f} s while another bank was loaded"
    finally:
        s.stop()


async def test_an_agents_one_fact_is_stored_while_bulk_embedding_holds_the_cpu_slots(app, rest, bank):
    """An agent's retain of one fact is a query's worth of model work: it is split and embedded in
    one hop on the query threads, first come first served with recalls, so it waits neither for a
    bulk import's embedding (which holds the CPU slots) nor for a turn at the event loop between
    steps, nor in the batch pool behind its texts. Through the slots, under 64 MCP clients, retains
    had waited 870 ms at the median where recalls waited 120 (bench/README.md, "Small retains in
    the query lane"). A retain past the limit, or of Han text, still takes the slots, as bulk work
    should."""
    from hindsight.engine.memory.retain import SHORT_ITEMS

    rt = app.engine.rt
    held = 0
    while not rt.cpu_slots.locked():  # what bulk imports' embedding holds while it runs
        await rt.cpu_slots.acquire()
        held += 1
    big = [{"content": f"Harbour log {i}: boat {i} came in after the night shift."} for i in range(SHORT_ITEMS + 1)]
    with Runs(rt.embedder) as runs:
        try:
            for body in (
                {"content": "Dana waters the ferns on Sundays."},
                {"items": [{"content": "Dana's ferns sit by the window."}, {"content": "Omar feeds the cat."}]},
            ):
                small = await asyncio.wait_for(rest.post(f"/v1/banks/{bank}/memories", json=body), 60)
                assert small.status_code == 200, small.text
            # every text on a query thread, none queued in the batch pool behind bulk work
            assert len(runs.threads) == 3 and all(n.startswith("embed-query") for n in runs.threads), runs.threads
            bulk = asyncio.create_task(rest.post(f"/v1/banks/{bank}/memories", json={"items": big}))
            # Han text is split by jieba's tagger, pure Python at up to ~2 ms a character: short as
            # it is, it is bulk work for the CPU slots, never a wait for the query threads
            han = asyncio.create_task(
                rest.post(f"/v1/banks/{bank}/memories", json={"content": "王小明在北京养了一只猫。"})
            )
            await asyncio.sleep(0.5)
            assert not bulk.done() and len(runs.threads) == 3  # waiting for the slots: nothing embedded
        finally:
            for _ in range(held):
                rt.cpu_slots.release()
        for task, units in ((bulk, len(big)), (han, 1)):
            done = await asyncio.wait_for(task, 60)
            assert done.status_code == 200 and done.json()["units"] == units, done.text
    later = runs.threads[3:]
    assert len(later) == len(big) + 1 and not any(n.startswith("embed-query") for n in later), runs.threads
    r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": "Who waters the ferns?"})
    assert "Dana waters the ferns on Sundays." in [m["text"] for m in r.json()["results"]]


async def test_a_bank_import_reads_its_file_on_the_cpu_slots(app, rest, bank):
    """Inflating, parsing and checking an export file is a core's work: it waits for a CPU slot
    like embedding and document reading, instead of running on a thread of its own beside them."""
    items = [{"content": f"Harbour log {i}: boat {i} came in after the night shift."} for i in range(20)]
    assert (await rest.post(f"/v1/banks/{bank}/memories", json={"items": items})).status_code == 200
    export = await rest.get(f"/v1/banks/{bank}/export")
    assert export.status_code == 200
    rt = app.engine.rt
    held = 0
    while not rt.cpu_slots.locked():
        await rt.cpu_slots.acquire()
        held += 1
    try:
        # the same model made these vectors, so the import embeds nothing: only its reading waits
        imported = asyncio.create_task(
            rest.post(
                f"/v1/banks/{bank}_copy/import", content=export.content, headers={"Content-Type": "application/gzip"}
            )
        )
        await asyncio.sleep(0.5)
        assert not imported.done()
    finally:
        for _ in range(held):
            rt.cpu_slots.release()
    done = await asyncio.wait_for(imported, 60)
    assert done.status_code == 200 and done.json()["imported"]["memory"] == 20, done.text


async def test_a_flood_on_one_bank_waits_at_its_own_gate(app, rest, bank):
    """A bank's requests at work at once are bounded (HINDSIGHT_API_BANK_CONCURRENCY): with every
    lane of one bank taken, another bank's retain, recall and document search are answered, and
    the first bank's recall waits its turn, answered once a lane frees. Without the gate, 64
    clients recalling from one bank made another bank's recall p50 337 ms instead of 11
    (bench/README.md, "One bank's flood")."""
    rt = app.engine.rt
    busy, quiet = bank + "_busy", bank + "_quiet"
    release, held = asyncio.Event(), []

    async def hold():
        async with rt.gates.reading(busy):
            held.append(1)
            await release.wait()

    holders = [asyncio.create_task(hold()) for _ in range(rt.gates.lanes.width)]
    while len(held) < rt.gates.lanes.width:
        await asyncio.sleep(0.01)
    try:
        waiting = asyncio.create_task(rest.post(f"/v1/banks/{busy}/recall", json={"query": "harbour boats"}))
        r = await asyncio.wait_for(rest.post(f"/v1/banks/{quiet}/memories", json={"content": "Dana waters ferns."}), 30)
        assert r.status_code == 200, r.text
        r = await asyncio.wait_for(rest.post(f"/v1/banks/{quiet}/recall", json={"query": "Who waters ferns?"}), 30)
        assert [m["text"] for m in r.json()["results"]] == ["Dana waters ferns."]
        r = await asyncio.wait_for(rest.post(f"/v1/banks/{quiet}/documents/query", json={"query": "ferns"}), 30)
        assert r.status_code == 200, r.text
        r = await asyncio.wait_for(rest.get(f"/v1/banks/{quiet}/memories", params={"q": "ferns"}), 30)
        assert r.status_code == 200 and r.json()["total"] == 1, r.text
        listing = asyncio.create_task(rest.get(f"/v1/banks/{busy}/memories", params={"q": "harbour"}))
        await asyncio.sleep(0.3)
        assert not waiting.done() and not listing.done()
    finally:
        release.set()
        await asyncio.gather(*holders)
    r = await asyncio.wait_for(waiting, 30)
    assert r.status_code == 200 and r.json()["results"] == [], r.text
    assert (await asyncio.wait_for(listing, 30)).status_code == 200
    assert rt.gates.lanes.waiting(busy) == 0 and rt.gates.lanes.waiting(quiet) == 0  # idle gates are dropped


@pytest.fixture(scope="module")
def lanes_db(pg_url):
    return fresh_database(pg_url, "lanes_llm")


async def test_a_retain_waiting_for_its_facts_holds_no_lane(lanes_db, stub, bank):
    """`wait=true` waits for the LLM's fact extraction after the retain is stored; that wait
    holds none of the bank's lanes, so the bank's recalls go on meanwhile (here with one lane)."""
    env = llm_env(stub, lanes_db, bank_concurrency=1)
    async with running_app(env) as application:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=60) as c:
            slow = asyncio.create_task(
                c.post(f"/v1/banks/{bank}/memories?wait=true", json={"content": "Yan owns a blue canoe. [[sleep:3]]"})
            )
            while application.engine.rt.gates.lanes.waiting(bank) or not await _stored(c, bank):
                await asyncio.sleep(0.05)
            r = await asyncio.wait_for(c.post(f"/v1/banks/{bank}/recall", json={"query": "canoe"}), 2)
            assert r.status_code == 200 and r.json()["results"], r.text
            assert not slow.done()
            done = await asyncio.wait_for(slow, 60)
            assert done.status_code == 200 and done.json()["extraction"] == "succeeded", done.text


async def _stored(c, bank: str) -> bool:
    r = await c.get(f"/v1/banks/{bank}/memories")
    return r.status_code == 200 and r.json()["total"] > 0


async def test_retains_waiting_for_the_write_queue_hold_no_lane(app, rest, bank):
    """A bank's writers take turns at its write queue (runtime.BankWrites); a retain waits there
    holding none of the bank's lanes, so more retains than lanes, all waiting behind a long write
    (an import, another process's writer), do not keep the bank's recalls waiting (they did for as
    long as the write lasted: 3 s in the review's run)."""
    rt = app.engine.rt
    assert (await rest.post(f"/v1/banks/{bank}/memories", json={"content": "Ivo keeps bees."})).status_code == 200
    release, taken = asyncio.Event(), asyncio.Event()

    async def long_write():
        async with rt.writes.open(bank):
            taken.set()
            await release.wait()

    writer = asyncio.create_task(long_write())
    await taken.wait()
    try:
        retains = [
            asyncio.create_task(rest.post(f"/v1/banks/{bank}/memories", json={"content": f"Ivo sold jar {i}."}))
            for i in range(rt.gates.lanes.width + 2)
        ]
        await asyncio.sleep(0.5)
        r = await asyncio.wait_for(rest.post(f"/v1/banks/{bank}/recall", json={"query": "bees"}), 5)
        assert r.status_code == 200 and "Ivo keeps bees." in [m["text"] for m in r.json()["results"]]
        assert not any(t.done() for t in retains)  # all still waiting for the write queue
    finally:
        release.set()
        await writer
    assert all(r.status_code == 200 for r in await asyncio.wait_for(asyncio.gather(*retains), 60))


async def test_a_banks_exports_run_one_at_a_time(app, rest, bank):
    """An export holds a pooled connection at its reader's pace: a bank's second export waits for
    the first, so a few slow readers of one bank cannot hold the pool every bank needs."""
    from hindsight.engine.transfer import portable

    rt = app.engine.rt
    for b in (bank, bank + "_other"):
        assert (await rest.post(f"/v1/banks/{b}/memories", json={"content": "Ivo keeps bees."})).status_code == 200
    first, second, other = (portable.export_bank(rt, b) for b in (bank, bank, bank + "_other"))
    started = asyncio.ensure_future(asyncio.sleep(0))
    try:
        await first.__anext__()  # reading, slowly
        started = asyncio.ensure_future(second.__anext__())
        await asyncio.sleep(0.3)
        assert not started.done()
        await asyncio.wait_for(other.__anext__(), 10)  # another bank's export is not held up
        await first.aclose()  # the reader left
        assert await asyncio.wait_for(started, 10)
    finally:
        started.cancel()
        await asyncio.gather(started, return_exceptions=True)
        for stream in (first, second, other):
            await stream.aclose()
    assert rt.gates.exports.waiting(bank) == 0
