"""LLM-path benchmark: LoCoMo turns retained through the deterministic stub LLM (LLM calls and
tokens per retained turn, end-to-end extraction throughput), mental models refreshed over those
banks (LLM calls and tokens per refresh), and reflect latency with the LLM's own time taken out
(the stub's handling time is measured and subtracted per call), with its calls and tokens.

What memory costs in LLM use: the calls and prompt tokens are Hindsight's own (its prompts, the
memories it sends; the stub counts four characters a token, as engine estimates do); completion
tokens depend on the model, and the stub's answers are terse (one fact per sentence, reflect
answers quoting two memories), so read them as a floor.

    .venv/bin/python bench/llm.py                    # 2 conversations (about 2 minutes)
    .venv/bin/python bench/llm.py --conversations 10 --questions 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import httpx
from locomo import CATS, latency, locomo, save, turn_items  # noqa: E402  (sets up sys.path)

from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.stub_llm import StubLLM  # noqa: E402
from hindsight.testing import Server, machine  # noqa: E402

# Mental models every bank gets (LoCoMo conversations are two friends talking).
MODELS = [
    ("Hobbies", "What are each speaker's hobbies and interests?"),
    ("Family", "What do we know about each speaker's family?"),
    ("Plans", "What plans and goals have the speakers mentioned?"),
]


def per(total: dict, n: int) -> dict:
    """LLM calls and tokens of `n` units of work (turns, refreshes, questions), per unit."""
    return {
        "llm_calls": round(total["calls"] / n, 3),
        "prompt_tokens": round(total["prompt"] / n, 1),
        "completion_tokens": round(total["completion"] / n, 1),
    }


async def usage_of(client: httpx.AsyncClient, banks: list[str], operation: str) -> dict:
    """LLM calls and tokens the server recorded for `operation` in `banks` (GET .../usage)."""
    out = {"calls": 0, "prompt": 0, "completion": 0}
    for bank in banks:
        for row in (await client.get(f"/v1/banks/{bank}/usage")).json()["by_operation"]:
            if row["operation"] == operation:
                out["calls"] += row["calls"]
                out["prompt"] += row["prompt_tokens"]
                out["completion"] += row["completion_tokens"]
    return out


async def wait_done(client: httpx.AsyncClient, bank: str, op_id: str) -> dict:
    while True:
        op = (await client.get(f"/v1/banks/{bank}/operations/{op_id}")).json()
        if op["status"] in ("succeeded", "failed", "cancelled"):
            if op["status"] != "succeeded":
                raise RuntimeError(f"operation {op_id}: {op['status']}: {op['error']}")
            return op
        await asyncio.sleep(0.1)


async def main(args) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-bench-llm-"))
    # The same embedded PostgreSQL, settings included, as `hindsight serve` starts.
    pg = EmbeddedPostgres(tmp, cleanup="delete")
    pg_url = pg.start()
    stub = StubLLM().start()
    server = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": pg_url,
            "HINDSIGHT_API_LOG_LEVEL": "warning",
            "HINDSIGHT_API_LLM_MODEL": "openai/stub-model",
            "HINDSIGHT_API_LLM_BASE_URL": stub.base_url,
            "HINDSIGHT_API_LLM_API_KEY": "stub",
            "HINDSIGHT_API_WORKER_CONCURRENCY": "2",
        }
    ).start()
    out = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "llm": "stub (deterministic, answers in <1 ms)"}
    try:
        convs = list(locomo.locomo_conversations())[: args.conversations]
        async with httpx.AsyncClient(base_url=server.url, timeout=600) as client:
            turns, t0 = 0, time.perf_counter()
            for conv in convs:
                bank = "llm_" + conv["sample_id"].replace("-", "_")
                for session in turn_items(conv):
                    r = await client.post(f"/v1/banks/{bank}/memories", json={"items": session}, params={"wait": True})
                    r.raise_for_status()
                    if r.json()["extraction"] != "succeeded":
                        raise RuntimeError(f"extraction {r.json()['extraction']}: {r.json()}")
                    turns += len(session)
            dt = time.perf_counter() - t0
            banks = ["llm_" + conv["sample_id"].replace("-", "_") for conv in convs]
            retained = await usage_of(client, banks, "retain")
            out["retain"] = {
                "turns": turns,
                "seconds": round(dt, 1),
                "turns_per_s": round(turns / dt, 1),
                "llm_calls": retained["calls"],
                **{f"{k}_per_turn": v for k, v in per(retained, turns).items()},
            }
            print(json.dumps(out["retain"]), flush=True)

            ids = {c["sample_id"] for c in convs}
            questions = [q for q in locomo.locomo_questions() if q["sample_id"] in ids and q["category"] in CATS]
            questions = questions[: args.questions]
            for q in questions[:5]:  # warm up
                await client.post(
                    f"/v1/banks/llm_{q['sample_id'].replace('-', '_')}/reflect", json={"query": q["question"]}
                )
            warm = await usage_of(client, banks, "reflect")
            total, without = [], []
            for q in questions:
                before = stub.busy_seconds
                t = time.perf_counter()
                r = await client.post(
                    f"/v1/banks/llm_{q['sample_id'].replace('-', '_')}/reflect",
                    json={"query": q["question"], "budget": "mid"},
                )
                r.raise_for_status()
                elapsed = time.perf_counter() - t
                total.append(elapsed)
                without.append(elapsed - (stub.busy_seconds - before))
            reflected = {k: v - warm[k] for k, v in (await usage_of(client, banks, "reflect")).items()}
            out["reflect"] = {
                "questions": len(questions),
                "budget": "mid",
                **latency(total),
                **latency(without, "_excluding_llm"),
                **{f"{k}_per_question": v for k, v in per(reflected, len(questions)).items()},
            }
            print(json.dumps(out["reflect"]), flush=True)

            # Mental models, after reflect (whose prompts they would join): each bank's models are
            # created (one refresh each) and refreshed `--refreshes` more times; a refresh is one
            # reflect over the bank (budget mid for the default max_tokens).
            refreshes = 0
            for bank in banks:
                ids = []
                for name, query in MODELS:
                    r = await client.post(f"/v1/banks/{bank}/mental-models", json={"name": name, "source_query": query})
                    r.raise_for_status()
                    ids.append(r.json()["mental_model_id"])
                    await wait_done(client, bank, r.json()["operation_id"])
                    refreshes += 1
                for _ in range(args.refreshes):
                    for model_id in ids:
                        r = await client.post(f"/v1/banks/{bank}/mental-models/{model_id}/refresh")
                        r.raise_for_status()
                        await wait_done(client, bank, r.json()["operation_id"])
                        refreshes += 1
            refreshed = await usage_of(client, banks, "mental_model")
            out["mental_model_refresh"] = {
                "refreshes": refreshes,
                **{f"{k}_per_refresh": v for k, v in per(refreshed, refreshes).items()},
            }
            print(json.dumps(out["mental_model_refresh"]), flush=True)
    finally:
        server.stop()
        stub.stop()
        pg.stop()
    save(out, "llm")
    return out


def report(out: dict) -> None:
    """What memory costs in LLM use, in the shape of the README's table."""
    print(f"\n== LLM use per unit of work == {out['machine']}, {out['date']}, {out['llm']}")
    rows = [
        ("retained turn", out["retain"], "per_turn"),
        ("mental-model refresh", out["mental_model_refresh"], "per_refresh"),
        ("reflect (budget mid)", out["reflect"], "per_question"),
    ]
    print(f"{'':24}{'LLM calls':>12}{'prompt tokens':>16}{'completion tokens':>20}")
    for name, r, unit in rows:
        calls, pt, ct = r[f"llm_calls_{unit}"], r[f"prompt_tokens_{unit}"], r[f"completion_tokens_{unit}"]
        print(f"{name:24}{calls:>12}{pt:>16}{ct:>20}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=2)
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--refreshes", type=int, default=3, help="Refreshes of each model after the one at creation.")
    result = asyncio.run(main(ap.parse_args()))
    print(json.dumps(result, indent=2))
    report(result)
