"""LLM-path benchmark: LoCoMo turns retained through the deterministic stub LLM (LLM calls and
tokens per retained turn, end-to-end extraction throughput) and reflect latency with the LLM's
own time taken out (the stub's handling time is measured and subtracted per call).

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
            calls = stub.calls["extract_facts"]
            usage = {"prompt": 0, "completion": 0}
            for conv in convs:
                u = (await client.get(f"/v1/banks/llm_{conv['sample_id'].replace('-', '_')}/usage")).json()
                for row in u["by_operation"]:
                    if row["operation"] == "retain":
                        usage["prompt"] += row["prompt_tokens"]
                        usage["completion"] += row["completion_tokens"]
            out["retain"] = {
                "turns": turns,
                "seconds": round(dt, 1),
                "turns_per_s": round(turns / dt, 1),
                "llm_calls": calls,
                "llm_calls_per_turn": round(calls / turns, 3),
                "prompt_tokens_per_turn": round(usage["prompt"] / turns, 1),
                "completion_tokens_per_turn": round(usage["completion"] / turns, 1),
            }
            print(json.dumps(out["retain"]), flush=True)

            ids = {c["sample_id"] for c in convs}
            questions = [q for q in locomo.locomo_questions() if q["sample_id"] in ids and q["category"] in CATS]
            questions = questions[: args.questions]
            for q in questions[:5]:  # warm up
                await client.post(
                    f"/v1/banks/llm_{q['sample_id'].replace('-', '_')}/reflect", json={"query": q["question"]}
                )
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
            out["reflect"] = {
                "questions": len(questions),
                "budget": "mid",
                **latency(total),
                **latency(without, "_excluding_llm"),
            }
            print(json.dumps(out["reflect"]), flush=True)
    finally:
        server.stop()
        stub.stop()
        pg.stop()
    save(out, "llm")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=2)
    ap.add_argument("--questions", type=int, default=200)
    print(json.dumps(asyncio.run(main(ap.parse_args())), indent=2))
