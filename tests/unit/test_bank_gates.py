"""A bank's gate (engine/banks/gates.py, BankGates): at most `width` holders of one bank at once, the
others served in the order they came, other banks never held up, nothing kept for an idle bank."""

from __future__ import annotations

import asyncio

from hindsight.engine.banks.gates import BankGates


async def test_a_bank_holds_at_most_width_and_serves_its_waiters_in_order():
    gates = BankGates(2)
    entered: list[str] = []
    release = {name: asyncio.Event() for name in ("a1", "a2", "a3", "a4", "b1")}

    async def work(bank: str, name: str) -> None:
        async with gates.hold(bank):
            entered.append(name)
            await release[name].wait()

    tasks = {name: asyncio.create_task(work(name[0], name)) for name in ("a1", "a2", "a3", "a4")}
    await asyncio.sleep(0.05)
    assert entered == ["a1", "a2"] and gates.waiting("a") == 4
    tasks["b1"] = asyncio.create_task(work("b", "b1"))
    await asyncio.sleep(0.05)
    assert entered == ["a1", "a2", "b1"]  # another bank is not held up
    release["a2"].set()
    await asyncio.sleep(0.05)
    assert entered == ["a1", "a2", "b1", "a3"]  # first come, first served
    for event in release.values():
        event.set()
    await asyncio.gather(*tasks.values())
    assert entered[-1] == "a4" and gates.waiting("a") == gates.waiting("b") == 0
    assert gates._gates == {}


async def test_a_cancelled_waiter_leaves_no_trace():
    gates = BankGates(1)
    release = asyncio.Event()

    async def holder() -> None:
        async with gates.hold("a"):
            await release.wait()

    async def waiter() -> None:
        async with gates.hold("a"):
            pass

    first = asyncio.create_task(holder())
    await asyncio.sleep(0.01)
    second = asyncio.create_task(waiter())
    await asyncio.sleep(0.01)
    assert gates.waiting("a") == 2
    second.cancel()
    await asyncio.gather(second, return_exceptions=True)
    assert gates.waiting("a") == 1
    release.set()
    await first
    assert gates._gates == {}
    async with gates.hold("a"):  # the gate works after all that
        assert gates.waiting("a") == 1


def test_a_bank_has_four_lanes_a_core_shared_by_the_processes():
    from hindsight.config import load_settings
    from hindsight.cpus import cores
    from hindsight.engine.banks.gates import lane_width

    assert lane_width(load_settings({})) == 4 * cores()
    assert lane_width(load_settings({"HINDSIGHT_API_WORKERS": "2"})) == max(1, 4 * cores() // 2)
    assert lane_width(load_settings({"HINDSIGHT_API_BANK_CONCURRENCY": "12", "HINDSIGHT_API_WORKERS": "3"})) == 4
    assert lane_width(load_settings({"HINDSIGHT_API_BANK_CONCURRENCY": "1", "HINDSIGHT_API_WORKERS": "4"})) == 1
